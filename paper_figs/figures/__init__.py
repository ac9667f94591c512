"""One module per figure/table, named by its figure id (``NAME``, the ``--only`` name);
:data:`CATALOG` lists them in report order."""
from . import (fig2_table2, fig2_tuned, fig3, fig3_tuned, fig4, fig5, fig6, lr_tuning, moe, pipeline, table1,
               theory_figs, theory_training)

CATALOG = {m.NAME: m for m in (fig3, table1, lr_tuning, fig3_tuned, fig2_table2, fig2_tuned, fig4, fig5, fig6, moe,
                               theory_training, theory_figs, pipeline)}

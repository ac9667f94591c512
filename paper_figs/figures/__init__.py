"""One module per figure/table, named by its figure id (``NAME``, the ``--only`` name);
:data:`CATALOG` lists them in report order. Figures 3 and 2 are registered twice: the second
time with the parameter ``tuned=True`` (``fig3_tuned``, ``fig2_tuned``: every run at its
optimizer's tuned sync lr; ``common.TunedReading``). The grids several figures share are in
:mod:`paper_figs.figures.grids`."""
from . import correctors, fig2_table2, fig3, fig4, fig5, fig6, lr_tuning, moe, pipeline, table1, theory_figs, theory_training
from .common import TunedReading

CATALOG = {m.NAME: m for m in (fig3, table1, lr_tuning, TunedReading(fig3), fig2_table2, TunedReading(fig2_table2),
                               fig4, fig5, fig6, moe, correctors, theory_training, theory_figs, pipeline)}

"""One module per figure/table; :data:`CATALOG` lists them in report order."""
from . import fig3, horizon, mitigations, momentum, pipedream, pipeline, table1, theory_figs

CATALOG = {m.NAME: m for m in (fig3, table1, mitigations, momentum, horizon, pipedream,
                               theory_figs, pipeline)}

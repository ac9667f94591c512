"""One module per figure/table; :data:`CATALOG` lists them in report order."""
from . import fig3, horizon, mitigations, moe, momentum, pipedream, pipeline, table1, theory_figs

CATALOG = {m.NAME: m for m in (fig3, table1, mitigations, momentum, horizon, pipedream, moe,
                               theory_figs, pipeline)}

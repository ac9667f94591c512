"""The figures' shared grid and measure helpers (paper_figs/figures/common.py), checked
against the grids written out by hand."""
from __future__ import annotations

import pytest

from paper_figs.figures.common import FigureOutput, measure_cells, variant, variant_grid
from paper_figs.records.profiles import PROFILES


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_variant_grid_is_the_product_of_its_axes_seeds_and_kinds(name):
    p = PROFILES[name]
    kinds = ("sync", "2bw", "ef")
    got = variant_grid(p, kinds, {"optimizer": ("adamw", "muon"), "steps": (8, 16)}, config="tiny")
    want = {(o, h, k): [variant(p, o, k, seed=s, steps=h, config="tiny") for s in p.seeds]
            for o in ("adamw", "muon") for h in (8, 16) for k in kinds}
    assert got == want and list(got) == list(want)
    one = variant_grid(p, ("sync",), {"steps": (8,)}, seeds=(5,), optimizer="lion")
    assert one == {(8, "sync"): [variant(p, "lion", "sync", seed=5, steps=8)]}


def test_variant_grid_needs_the_optimizer_once():
    p = PROFILES["micro"]
    with pytest.raises(ValueError, match="optimizer"):
        variant_grid(p, ("sync",), {"steps": (8,)})
    with pytest.raises(ValueError, match="optimizer"):
        variant_grid(p, ("sync",), {"optimizer": ("muon",)}, optimizer="adamw")


class _Outcome:
    def __init__(self, final):
        self.ok, self.final, self.error, self.source = final is not None, final, "no record", "kept"


class _Ctx:
    def __init__(self, finals):
        self.finals = finals

    def get(self, s):
        return _Outcome(self.finals.get((s["optimizer"], s["mode"], s["seed"])))


def test_measure_cells_groups_by_cell_and_sets_status():
    p = PROFILES["micro"]
    g = variant_grid(p, ("sync", "2bw"), {"optimizer": ("adamw",)}, seeds=(0, 1))
    finals = {("adamw", "sync", 0): 1.0, ("adamw", "sync", 1): 2.0, ("adamw", "2bw", 0): 3.0}
    out = FigureOutput("x", "x")
    res = measure_cells(_Ctx(finals), out, g)
    assert res["adamw"]["sync"] == [1.0, 2.0] and res["adamw"]["2bw"][0] == 3.0
    assert res["adamw"]["2bw"][1] != res["adamw"]["2bw"][1]  # nan
    assert out.status == "partial" and len(out.missing) == 1
    out = FigureOutput("x", "x")
    assert measure_cells(_Ctx({}), out, g) is None and out.status.startswith("not available")


def test_horizon_check_counts_only_resolved_horizons():
    from paper_figs.figures.fig5 import horizon_check
    assert horizon_check({1500: "holds", 3000: "holds"}).status == "holds"
    assert horizon_check({1500: "holds", 3000: "does not hold"}).status == "does not hold"
    # missing runs at the longer horizons are not a reversal
    assert horizon_check({1500: "holds", 3000: "inconclusive", 6000: "inconclusive"}).status == "inconclusive"
    assert horizon_check({1500: "holds", 3000: "inconclusive", 6000: "does not hold"}).status == "does not hold"


def test_each_figure_module_is_named_by_its_figure_id():
    """A newcomer looking for Figure 4 opens figures/fig4.py (the theory figures: theory_figs.py;
    a figure at the tuned sync lrs: its base figure's module, registered again with tuned=True)."""
    from paper_figs.figures import CATALOG
    from paper_figs.figures.common import TunedReading
    for name, mod in CATALOG.items():
        if isinstance(mod, TunedReading):
            assert name == mod.module.TUNED_NAME == f"{mod.module.NAME.split('_')[0]}_tuned", name
            mod = mod.module
            name = mod.NAME
        assert mod.__name__.rsplit(".", 1)[-1] == {"theory": "theory_figs"}.get(name, name)

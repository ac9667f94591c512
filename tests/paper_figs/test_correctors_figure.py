"""The correctors figure (issue 41): its grid shares Figure 3's runs where they are the same
training, its model is the one docs/correctors.md §4 prints, and its verdicts decide planted
data the way docs/correctors.md §8 says."""
import math
import re
from pathlib import Path

import pytest

from paper_figs.records.deps import Deps
from paper_figs.figures import correctors as C
from paper_figs.figures import fig3
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import Runner
from paper_figs.statistics.seed_stats import NO_NOISE
from paper_figs.statistics.verdicts import FAILS, HOLDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "correctors.md"


def test_the_one_step_cells_are_figure_3s_runs():
    p = get_profile("full")
    r = Runner(Deps(), None)
    g, f3 = C.grid(p), fig3.grid(p)
    for o in ("adamw", "muon"):
        for ours, theirs in (((f"corr1", o, "sync"), (o, "sync")), (("corr1", o, "none"), (o, "2bw")),
                             (("corr1", o, "ef"), (o, "ef")), (("tau", o, "tau1"), (o, "2bw"))):
            assert [r.key_of(s) for s in g[ours]] == [r.key_of(s) for s in f3[theirs][:3]]
    assert [r.key_of(s) for s in g[("attr", "muon", "all")]] == [r.key_of(s) for s in f3[("muon", "2bw")][:3]]
    # a shaped run is another training: another key
    assert r.key_of(g[("attr", "muon", "matrix")][0]) != r.key_of(g[("attr", "muon", "all")][0])
    assert ("corr1", "muon", "lr_damping") not in g and ("corr4", "muon", "lr_damping") in g


def test_the_model_is_the_table_docs_correctors_prints():
    rows = re.findall(r"\| (AdamW|Muon) \((0\.9|0\.95)\) \| (\d+) \| ([\d.]+) \| ([\d.]+) \(([+-]\d+)%\) \| "
                      r"([\d.]+) \(([+-]\d+)%\)", DOC.read_text())
    assert len(rows) == 10
    for name, _, tau, r_plain, _, wp, _, la in rows:
        o, tau = name.lower(), int(tau)
        assert abs(C.r_model(C.MODEL_RHO[o], tau, 0.0) - float(r_plain)) < 0.006
        assert round(100 * C.predicted_share(o, "weight_prediction", tau)) == int(wp)
        assert round(100 * C.predicted_share(o, "nesterov_lookahead", tau)) == int(la)


class _Ctx:
    """What judge reads of a Context: the profile and a cell's borrowed noise (none: own SDs)."""

    def __init__(self, profile="full"):
        self.profile = get_profile(profile)

    def noise_for(self, optimizer, config=None, lr=1.0):
        return NO_NOISE


def _jitter(j: int) -> list:
    """Three per-seed deviations of cell j (a paired difference keeps a spread: an own SD)."""
    return [0.001 * (((3 * i + 2 * j) % 5) - 2 + 0.3 * i) for i in range(3)]


def _res(sync=1.35, **cells):
    seeds = (0.0, 0.004, -0.003)
    out = {("attr", "muon"): {"sync": [sync + e for e in seeds]}}
    for j, (k, gap) in enumerate(cells.items()):
        out[("attr", "muon")][k] = [sync + gap + e + d for e, d in zip(seeds, _jitter(j))]
    return out


def test_attribution_holds_only_when_the_adamw_group_carries_the_gap():
    ctx = _Ctx()
    there, _ = C.judge(ctx, _res(all=0.02, matrix=0.001, other=0.02))
    assert there[C.ATTRIBUTION].status == HOLDS
    not_there, _ = C.judge(ctx, _res(all=0.02, matrix=0.02, other=0.002))
    assert not_there[C.ATTRIBUTION].status == FAILS


def _corr(gap_plain, gaps: dict, tau=1, o="adamw"):
    seeds = (0.0, 0.003, -0.002)
    r = {"sync": [1.44 + e for e in seeds], "none": [1.44 + gap_plain + e + d for e, d in zip(seeds, _jitter(7))]}
    for j, (c, g) in enumerate(gaps.items()):
        r[c] = [1.44 + g + e + d for e, d in zip(seeds, _jitter(j))]
    return {(f"corr{tau}", o): r}


def test_a_corrector_that_closes_the_gap_recovers_and_one_that_does_not_fails():
    ctx = _Ctx()
    v, shares = C.judge(ctx, _corr(0.075, {"weight_prediction": 0.01, "ef": 0.008}))
    assert v[C.recovers_line(1, "adamw")].status == HOLDS
    assert 0.8 < shares[(1, "adamw", "weight_prediction")] < 0.9
    v, shares = C.judge(ctx, _corr(0.075, {"weight_prediction": 0.01, "dc_asgd_ema": 0.09}))
    assert v[C.recovers_line(1, "adamw")].status == FAILS
    assert shares[(1, "adamw", "dc_asgd_ema")] < 0
    line = "tau = 1, AdamW: (b) DC-ASGD-EMA ~ the plain delay within +-0.005 nats"
    assert v[line].status == FAILS


def test_gap_growth_and_the_scion_line_read_every_tau():
    ctx = _Ctx()
    seeds = (0.0, 0.003, -0.002)
    res = {}
    for o, base, slope in (("adamw", 1.44, 0.07), ("muon", 1.35, 0.02), ("scion", 1.36, 0.03)):
        res[("tau", o)] = {"sync": [base + e for e in seeds],
                           **{f"tau{t}": [base + slope * t + e + d for e, d in zip(seeds, _jitter(t))]
                              for t in (1, 2, 4, 8)}}
    v, _ = C.judge(ctx, res)
    assert v[C.GROWS].status == HOLDS and v[C.ADAMW_ABOVE].status == HOLDS
    assert v[C.SCION_BELOW].status == FAILS     # scion's gap above Muon's at every tau
    assert C.predicted_growth("muon", 8) == pytest.approx(7.50, abs=0.005)
    assert math.isnan(C.predicted_share("lion", "weight_prediction", 1))

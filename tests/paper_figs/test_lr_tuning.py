"""The lr sweep (paper_figs/figures/lr_tuning.py): which runs it shares with Table 1 and
Figure 4 (same key: trained once), and how it picks the best lr."""
from __future__ import annotations

from paper_figs_fakes import StubContext

from paper_figs.cache import config_hash
from paper_figs.deps import Deps
from paper_figs.figures import fig4, lr_tuning, table1
from paper_figs.figures.common import best_lr, runs_of
from paper_figs.profiles import PROFILES
from paper_figs.runs import full_config


def _key(s):
    return config_hash(full_config(Deps().TrainConfig, s))


def test_sweep_shares_runs_with_table1_and_fig4():
    p = PROFILES["full"]
    g, t1, f4 = lr_tuning.grid(p), table1.grid(p), fig4.grid(p)
    f4_keys = {_key(s) for s in runs_of(f4)}
    for o in p.table1_optimizers:
        assert g[(lr_tuning.TUNE, o, 1.0, "sync")] == t1[(p.sizes[0], o, "sync")][:len(p.seeds)]
        shared = {_key(s) for s in g[(lr_tuning.TUNE, o, 2.0, "sync")]} <= f4_keys
        assert shared == (o in p.momentum_lr_optimizers), o
        assert not {_key(s) for s in g[(lr_tuning.TUNE, o, 4.0, "sync")]} & f4_keys, o
    new = {_key(s) for s in runs_of(g)} - f4_keys - {_key(s) for s in runs_of(t1)}
    assert p.tuning_lr_mults == (0.5, 1.0, 2.0, 4.0, 8.0) and p.momentum_lr_mults == (0.5, 1.0, 2.0)
    assert p.tuned_gap_optimizers == p.table1_optimizers
    # sync and 2BW at x0.5, x2, x4, x8 of the six optimizers outside Figure 4's lr grid, and at
    # x4, x8 of the three in it (their x0.5 and x2 are Figure 4's; x1 is Table 1's everywhere)
    assert len(new) == 2 * (4 * 6 + 2 * 3)


def test_explicit_preset_momentum_is_the_same_training():
    """Figure 4's runs carry momentum = the preset; the optimizer they build equals the one
    built with momentum None (so sharing them is sharing the same training)."""
    from lmo.presets import DEFAULT_MOMENTUM
    from lmo.registry import make
    for o in PROFILES["full"].momentum_lr_optimizers:
        a, b = make(o, 1e-3), make(o, 1e-3, DEFAULT_MOMENTUM[o])
        assert a.hyper == b.hyper, o


def test_best_is_the_argmin_and_never_a_failed_run():
    nan = float("nan")
    cells = {0.5: {"sync": [1.4]}, 1.0: {"sync": [1.3]}, 2.0: {"sync": [nan]}}
    assert best_lr(cells, "sync") == 1.0
    cells[0.5]["sync"] = [1.2]
    assert best_lr(cells, "sync") == 0.5


def test_no_sweep_no_runs():
    from paper_figs.profiles import get_profile
    assert lr_tuning.grid(get_profile("full", tuning_lr_mults=(1.0,))) == {}


def test_table1_at_tuned_lrs_judges_gap_star_not_the_preset_gap(tmp_path):
    """Planted: MARS's preset-lr gap is 0.40 but its gap* (best 2BW - best sync) is -0.01 <
    Muon's 0.01, so "MARS gap larger than Muon's" at tuned lrs does not hold; AdamW's gap*
    0.25 against Muon's 0.01 holds, much larger too."""
    from paper_figs.figures.common import FigureOutput
    from paper_figs.profiles import get_profile
    from paper_figs.verdicts import FAILS, HOLDS
    p = get_profile("micro", table1_optimizers=("adamw", "muon", "mars"), tuning_lr_mults=(1.0, 2.0),
                    tuned_gap_optimizers=("adamw", "muon", "mars"))
    losses = {"adamw": {1.0: (1.50, 1.70), 2.0: (1.40, 1.65)},
              "muon": {1.0: (1.36, 1.37), 2.0: (1.38, 1.40)},
              "mars": {1.0: (1.50, 1.90), 2.0: (1.45, 1.44)}}
    res = {}
    for o, by_c in losses.items():
        for c, (s, a) in by_c.items():
            res[(lr_tuning.TUNE, o, c)] = {"sync": [s], "2bw": [a]}
        res[(p.sizes[0], o)] = res[(lr_tuning.TUNE, o, 1.0)]
    out = FigureOutput("lr_tuning", "t")
    lr_tuning._table1_tuned(StubContext(p, tmp_path), out, res)
    status = {k.split(" (")[0]: v.status for k, v in out.verdicts.items()}
    assert status == {"AdamW gap larger than Muon's": HOLDS, "AdamW gap much larger than Muon's": HOLDS,
                      "MARS gap larger than Muon's": FAILS, "MARS gap much larger than Muon's": FAILS}
    row = next(r for r in out.measured if r.startswith("| MARS"))
    assert "| x2 | x2 | 1.450 | 1.440 | -0.010 |" in row and row.endswith("| 0.400 |")
    assert (tmp_path / "lr_tuning_table1_gaps.png").exists()

"""Figure 4's three readings (paper_figs/figures/fig4.py): preset lr, lr retuned per
momentum and variant, Lion's betas[1]; and the paper_figs options that change the corpus."""
from __future__ import annotations

from paper_figs_fakes import knobs, profile_with

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmo.presets import DEFAULT_LR
from paper_figs.figures import fig4
from paper_figs.figures.common import runs_of
from paper_figs.records.profiles import PROFILES


def test_preset_multiplier_is_the_preset_lr_run_itself():
    """Multiplier 1 adds no lr key, so the lr grid reuses the preset-lr runs (and their kept records)."""
    p = PROFILES["full"]
    g = fig4.grid(p)
    for o in knobs(p).momentum_lr_optimizers:
        for m in knobs(p).momentum_grid:
            for k in fig4.KINDS:
                assert g[(fig4.LR, o, m, 1.0, k)] == g[(o, m, k)]
                assert g[(fig4.LR, o, m, 2.0, k)][0]["lr"] == pytest.approx(2 * DEFAULT_LR[o], rel=1e-12)
    # Lion's betas[1] at its preset is Figure 4's Lion run at momentum 0.9
    assert g[(fig4.BETA2, fig4.LION_BETA2, "sync")] == g[("lion", 0.9, "sync")]
    assert g[(fig4.BETA2, 0.999, "2bw")][0]["opt_kwargs"] == {"betas": [0.9, 0.999]}
    flat = runs_of(g)
    assert len(flat) == len({repr(sorted(s.items())) for s in flat})  # each run once
    k = knobs(p)
    # every multiplier but the preset's, per optimizer (the full profile extends AdamW's and Lion's grid to
    # x0.25 and x4, Muon's to x0.25: docs/protocol.md §6), at every momentum, sync and 2BW; Lion's betas[1]
    n_new = (sum(len(fig4.lr_mults(p, o)) - 1 for o in k.momentum_lr_optimizers) * len(k.momentum_grid) * 2
             + 2 * (len(k.lion_beta2_grid) - 1))
    assert n_new == (4 + 3 + 4) * 4 * 2 + 4
    assert len(flat) == len(runs_of(fig4.grid(profile_with("full", momentum_lr_optimizers=(),
                                                                lion_beta2_grid=())))) + n_new


def test_lion_beta2_reaches_the_optimizer():
    from gpu_runs.recipe import TrainConfig
    from lmo.registry import make
    s = fig4.grid(PROFILES["full"])[(fig4.BETA2, 0.95, "sync")][0]
    cfg = TrainConfig(**{k: v for k, v in s.items() if k in TrainConfig.__dataclass_fields__})
    opt = make("lion", 1e-4, cfg.momentum, **cfg.opt_kwargs)
    assert tuple(opt.hyper["betas"]) == pytest.approx((0.9, 0.95))


losses = st.floats(1.0, 3.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(losses, losses), min_size=3, max_size=3))
def test_retuned_gap_is_best_async_minus_best_sync(vals):
    """gap* = min_c L_2bw(c) - min_c L_sync(c); the chosen multipliers are the argmins."""
    p = profile_with("micro", momentum_lr_optimizers=("adamw",), momentum_grid=(0.9,),
                     momentum_lr_mults=(0.5, 1.0, 2.0))
    res = {(fig4.LR, "adamw", 0.9, c): {"sync": [s], "2bw": [a]} for c, (s, a) in zip(knobs(p).momentum_lr_mults, vals)}
    gap, c_s, c_a = fig4.retuned(p, res)[("adamw", 0.9)]
    assert gap[0] == pytest.approx(min(a for _, a in vals) - min(s for s, _ in vals))
    assert res[(fig4.LR, "adamw", 0.9, c_s)]["sync"][0] == min(s for s, _ in vals)
    assert res[(fig4.LR, "adamw", 0.9, c_a)]["2bw"][0] == min(a for _, a in vals)


def test_retuned_skips_a_failed_lr():
    p = profile_with("micro", momentum_lr_optimizers=("adamw",), momentum_grid=(0.9,), momentum_lr_mults=(1.0, 2.0))
    nan = float("nan")
    res = {(fig4.LR, "adamw", 0.9, 1.0): {"sync": [1.5], "2bw": [1.7]},
           (fig4.LR, "adamw", 0.9, 2.0): {"sync": [nan], "2bw": [1.6]}}
    gap, c_s, c_a = fig4.retuned(p, res)[("adamw", 0.9)]
    assert (c_s, c_a) == (1.0, 2.0) and math.isclose(gap[0], 0.1)


def test_data_option_puts_the_corpus_hash_in_every_run(tmp_path):
    from gpu_runs.data import get_corpus
    from paper_figs.cli import data_settings, main
    for i in range(25):
        (tmp_path / f"d{i}.txt").write_text(f"document {i} " * 50)
    got = data_settings(str(tmp_path))
    assert got == {"data": str(tmp_path.resolve()), "data_sha256": get_corpus(tmp_path).sha256}
    assert data_settings(None) == {} and data_settings("stdlib") == {}
    with pytest.raises(SystemExit):
        main(["--list", "--data", str(tmp_path / "nowhere")])
    with pytest.raises(SystemExit):
        main(["--list", "--diag-every", "-1"])

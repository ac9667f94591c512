"""seed_noise: replicate groups, pooled sd (against numpy), resolved pairs with planted orderings."""
import statistics

import numpy as np
import pytest
from hypothesis import given, strategies as st

from gpu_runs.orderings import cells, ef_orderings, sweep_orderings
from gpu_runs.seed_noise import annotate, format_noise, mean_sd, pooled_sd, replicates, resolved_pairs


def run(opt, lr, beta, variant, val, seed, r_mean=0.0):
    consts = dict(L=3.0, sigma=0.5, rho=2.0, eta=lr, mu=1 - beta, K=100, Delta_0=5.0)
    return dict(optimizer=opt, lr=lr, beta=beta, variant=variant, final_val=val,
                rest=(("seed", repr(seed)), ("steps", "100")), consts=consts, r_mean=r_mean)


def cell(opt, lr, beta, gap, seed, gap_ef=None):
    rs = [run(opt, lr, beta, "sync", 3.0, seed), run(opt, lr, beta, "2bw", 3.0 + gap, seed)]
    if gap_ef is not None:
        rs.append(run(opt, lr, beta, "ef", 3.0 + gap_ef, seed, r_mean=0.5 * lr))
    return rs


@given(st.lists(st.floats(-10, 10), min_size=2, max_size=8))
def test_mean_sd_is_the_sample_sd(xs):
    m, s = mean_sd(xs)
    assert m == pytest.approx(statistics.fmean(xs), abs=1e-9)
    assert s == pytest.approx(statistics.stdev(xs), abs=1e-7)


def test_replicates_group_only_across_seeds_and_pool_like_anova():
    gaps = {0.01: [0.10, 0.14, 0.12], 0.02: [0.30, 0.20]}
    rs = []
    for lr, gs in gaps.items():
        for seed, g in enumerate(gs):
            rs += cell("muon", lr, 0.95, g, seed, gap_ef=g / 2)
    rs += cell("muon", 0.04, 0.95, 0.5, 0)                      # one seed only: no replicate group
    reps = replicates(cells(rs))
    assert [(r["lr"], r["seeds"]) for r in reps] == [(0.01, ["0", "1", "2"]), (0.02, ["0", "1"])]
    dev = np.concatenate([np.array(g) - np.mean(g) for g in gaps.values()])
    expect = np.sqrt((dev ** 2).sum() / (len(dev) - len(gaps)))  # within-group variance, N - G dof
    assert pooled_sd(reps, "muon", "gap_2bw") == pytest.approx(expect)
    assert pooled_sd(reps, "muon", "ef_gain") == pytest.approx(expect / 2)
    assert pooled_sd(reps, "adamw", "gap_2bw") is None


def test_resolved_pairs_ignore_differences_inside_the_noise():
    xs = [0.01, 0.02, 0.04]
    assert resolved_pairs(xs, [0.10, 0.11, 0.12], sd=0.05, increasing=True) == (0, 0)
    assert resolved_pairs(xs, [0.10, 0.50, 0.90], sd=0.05, increasing=True) == (3, 3)
    assert resolved_pairs(xs, [0.90, 0.50, 0.91], sd=0.05, increasing=True) == (1, 2)   # planted reversal caught


def test_annotate_and_report():
    rs = []
    for seed, jitter in enumerate((0.0, 0.01, -0.01)):          # a noise sd of 0.01 at lr 0.01
        rs += cell("adamw", 0.01, 0.9, 0.3 + jitter, seed, gap_ef=0.1 - jitter)  # gain sd 0.02
    rs += cell("adamw", 0.02, 0.9, 0.2, 0, gap_ef=0.199)        # gap shrinks with lr, far outside the noise
    cs = cells(rs)
    lr_ord = [o for o in sweep_orderings(cs, "lr")]
    ef_ord = ef_orderings(cs)
    reps = replicates(cs)
    annotate(reps, lr_ord, [], ef_ord)
    (o,) = lr_ord
    assert o["noise_sd"] == pytest.approx(0.01) and o["resolved_pairs"] == (0, 1)
    tiny = [e for e in ef_ord if e["lr"] == 0.02]
    assert tiny[0]["gain_resolved"] is False                    # a gain of 0.001 is within the noise
    assert all(e["gain_resolved"] for e in ef_ord if e["lr"] == 0.01)
    text = format_noise(reps, lr_ord, [], ef_ord)
    assert "| adamw | 0.01 | 0.9 | 0, 1, 2 | +0.3000 ± 0.0100 |" in text and "| 1 lr | adamw | beta=0.01 |" not in text
    assert "| 1 lr | adamw | beta=0.9 | 0.0100 | 1/1 | 0/1 |" in text
    assert format_noise([], [], [], []).startswith("seed noise: no cell")

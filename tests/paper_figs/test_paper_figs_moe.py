"""The MoE figure (Table 3, Figures 1 and 5): verdict rules on constructed results, its grid
in every profile, its step-cost estimate, and the micro profile end to end with the real trainer."""
from __future__ import annotations

import math

import pytest
import scipy.stats
from hypothesis import assume, given
from hypothesis import strategies as st
from paper_figs_fakes import fake_deps, knobs, profile_with

from paper_figs.records import estimates as est
from paper_figs.statistics import moe_verdicts as mv
from paper_figs.figures import moe
from paper_figs.figures.common import VARIANTS
from paper_figs.pipeline import run_profile, split_runs
from paper_figs.records.profiles import get_profile
from paper_figs.statistics.protocol import M_SMALLEST
from paper_figs.statistics.seed_stats import NO_NOISE, Noise
from paper_figs.statistics.verdicts import FAILS, HOLDS, INCONCLUSIVE

noise = st.floats(-0.002, 0.002)  # per-seed noise of a planted gap
N = Noise(0.002, 20, 10)           # the pooled seed SD such noise gives (what 1-2 seed cells borrow)


def _quiet(_):
    pass


# ---- "the gap does not grow with the horizon" (docs/protocol.md §3, §8) -------------------
# one-sided against the margin M_SMALLEST x the sync loss at the shortest horizon (the paper's
# smallest reported gap, 0.005 / 1.906): at a sync loss of 2.0 the margin is 0.0052

SYNC = 2.0
MARGIN = M_SMALLEST * SYNC
T20 = scipy.stats.t.ppf(0.975, 20)   # N's 20 dof


def grows(horizons, gaps, noise=N):
    return mv.gap_does_not_grow(horizons, gaps, "x", noise, SYNC)


@given(st.floats(-0.05, 0.2), st.lists(st.tuples(noise, noise), min_size=3, max_size=3))
def test_a_constant_gap_with_seed_noise_does_not_grow(g, eps):
    """A constant gap is never called growing; it is shown not to grow when the growth's 95 %
    interval (2 seeds per horizon, borrowed SD 0.002 with 20 dof) lies below the margin."""
    gaps = [[g + a, g + b] for a, b in eps]  # 2 seeds at each of 3 horizons
    v = grows([1500, 3000, 6000], gaps)
    assert v.status != FAILS
    growth = (sum(gaps[-1]) - sum(gaps[0])) / 2
    if growth + T20 * 0.002 < MARGIN - 1e-12:   # SE of the growth: 0.002 sqrt(1/2 + 1/2)
        assert v.status == HOLDS


@given(st.floats(-0.05, 0.2), st.floats(0.02, 0.3), st.lists(st.tuples(noise, noise), min_size=3, max_size=3))
def test_a_planted_growing_gap_is_flagged(g, growth, eps):
    """The gap grows by >= 0.02; the noise moves the measured growth by <= 0.004: its interval
    lies above the margin."""
    gaps = [[g + f * growth + a, g + f * growth + b] for f, (a, b) in zip((0, 0.5, 1), eps)]
    v = grows([1500, 3000, 6000], gaps)
    assert v.status == FAILS and "growth" in v.reason


def test_growth_inside_the_seed_noise_is_not_called_growth():
    # +0.01 growth with a pooled seed SD of 0.028: noise, neither growth nor shown flat
    assert grows([1500, 6000], [[0.0, 0.04], [0.01, 0.05]], Noise(0.028, 10, 5)).status == INCONCLUSIVE
    # one seed each at SD 0.002 (SE of the growth 0.0028, half-width 0.0059): +0.015 is growth beyond the
    # margin, +0.001 is inside the noise (the interval reaches past the margin), -0.005 has not grown
    assert grows([1500, 6000], [[0.02], [0.035]]).status == FAILS
    assert grows([1500, 6000], [[0.02], [0.021]]).status == INCONCLUSIVE
    assert grows([1500, 6000], [[0.02], [0.015]]).status == HOLDS
    # no measured spread: one seed resolves nothing
    assert grows([1500, 6000], [[0.02], [0.05]], NO_NOISE).status == INCONCLUSIVE
    # order of the horizons given does not matter; a shrinking gap holds
    assert grows([6000, 1500], [[0.01], [0.05]]).status == HOLDS
    assert grows([1500], [[0.01]]).status == INCONCLUSIVE
    assert grows([1500, 3000], [[0.01], [math.nan]]).status == INCONCLUSIVE
    with pytest.raises(ValueError, match="gaps"):
        grows([1500, 3000], [[0.01]])


# ---- "EF closes the gap": two one-sided tests within +-M_SMALLEST x the sync loss ------------

@given(st.floats(2.5, 4.0), st.floats(0.03, 0.3), st.lists(st.tuples(noise, noise, noise), min_size=2, max_size=2))
def test_a_closing_ef_passes_with_noise(base, gap, eps):
    """EF's loss equals sync's up to the seed noise (|eps| <= 0.002): the 95 % interval of the EF
    gap (half-width 2.09 x 0.0014) lies within the margin (>= 0.0065 at a loss >= 2.5)."""
    sync = [base + a for a, _, _ in eps]
    async_ = [base + gap + b for _, b, _ in eps]
    ef = [base + c for _, _, c in eps]
    assert mv.ef_closes_gap(sync, async_, ef, "x", N).status == HOLDS


@given(st.floats(1.0, 4.0), st.floats(0.05, 0.3), st.lists(st.tuples(noise, noise, noise), min_size=2, max_size=3))
def test_an_ef_that_leaves_most_of_the_gap_fails(base, gap, eps):
    """With 3 seeds the cell uses its own SD: three identical paired differences leave no
    standard error, a case of its own (test_three_identical_differences_are_inconclusive)."""
    assume(len(eps) < 3 or len({c - a for a, _, c in eps}) > 1)
    sync = [base + a for a, _, _ in eps]
    async_ = [base + gap + b for _, b, _ in eps]
    ef = [base + 0.8 * gap + c for _, _, c in eps]
    assert mv.ef_closes_gap(sync, async_, ef, "x", N).status == FAILS


def test_three_identical_differences_are_inconclusive():
    """A 3-seed cell's own SD of 0 (identical paired differences, e.g. one run stored thrice)
    gives no standard error: inconclusive, saying so, never a verdict from a zero SE."""
    v = mv.ef_closes_gap([1.0] * 3, [1.25] * 3, [1.2] * 3, "x", N)
    assert v.status == INCONCLUSIVE and "no standard error" in v.reason


def test_ef_rule_edges():
    # EF equal to sync within the interval: equivalent (whatever async did)
    assert mv.ef_closes_gap([2.0], [2.003], [2.0], "x", N).status == HOLDS
    # EF leaves 18 % of a 0.02 gap (0.0035): its interval [-0.0007, 0.0077] reaches past the margin 0.0052:
    # "within 2 SE of 0" is not evidence of closing
    assert mv.ef_closes_gap([2.0], [2.02], [2.0035], "x", N).status == INCONCLUSIVE
    # EF recovers 60 % of a 0.1 gap: the EF gap's interval lies above the margin
    assert mv.ef_closes_gap([2.0], [2.1], [2.04], "x", N).status == FAILS
    # EF opens a gap where async had none
    assert mv.ef_closes_gap([2.0], [2.0], [2.05], "x", N).status == FAILS
    assert mv.ef_closes_gap([math.nan], [math.nan], [2.0], "x", N).status == INCONCLUSIVE
    assert mv.ef_closes_gap([2.0], [2.1], [2.0], "x").status == INCONCLUSIVE   # no spread measured


# ---- "async stays stable": no divergence, and the gap below M_BENIGN x the sync loss ----------

def _curve(final, diverge_at=None, spike=0.0):
    xs = list(range(100, 1600, 100))
    ys = [final + 2.0 / (1 + i) for i in range(len(xs))]
    if diverge_at is not None:
        ys[diverge_at] = math.nan
    if spike:
        ys[8] = ys[7] * (1 + spike)
    return xs, ys


def test_async_stable_rules():
    ok = [_curve(2.01), _curve(2.0)]
    # margin at a sync loss of 2.0: 1.04 % = 0.0207
    assert mv.async_stable([2.0, 2.0], [2.01, 2.011], ok, "x", N).status == HOLDS
    assert mv.async_stable([2.0, 2.0], [2.02, 2.021], ok, "x", N).status == INCONCLUSIVE   # interval reaches 0.024
    assert mv.async_stable([2.0], [2.01], [_curve(2.02, diverge_at=5)], "x", N).status == FAILS
    assert mv.async_stable([2.0], [2.01], [_curve(2.02, spike=0.15)], "x", N).status == FAILS
    assert mv.async_stable([2.0], [2.01], [_curve(2.02, spike=0.05)], "x", N).status == HOLDS
    assert mv.async_stable([2.0], [2.06], [_curve(2.06)], "x", N).status == FAILS  # 3 %: beyond the paper's 0.03
    assert mv.diverges([1, 2, 3], [3.0, 2.0, 2.1]) == ""
    assert "non-finite" in mv.diverges([1, 2], [3.0, math.inf])


# ---- the figure's judge on constructed results ---------------------------------------------

def _res(gaps_by_h, ef_frac, seeds=(0.0, 0.003)):
    return {h: {"sync": [2.0 + e for e in seeds], "2bw": [2.0 + g + e for e in seeds],
                "ef": [2.0 + ef_frac * g + e for e in seeds]} for h, g in gaps_by_h.items()}


def test_judge_flags_growth_and_passes_a_closing_ef():
    curves = {h: [_curve(2.0)] for h in (1500, 3000, 6000)}
    good, _ = moe.judge(_res({1500: 0.03, 3000: 0.031, 6000: 0.029}, 0.0), 1500, curves, N)
    assert good[moe.CLOSES].status == HOLDS and good[moe.CLOSES].claim == "C13"
    assert good[moe.GROWS].status == HOLDS and good[moe.GROWS].claim == "C15"
    assert good[moe.EF_EACH].status == HOLDS and not good[moe.EF_EACH].claim   # exploratory
    assert good[moe.STABLE].status == FAILS and good[moe.STABLE].claim == "C14"   # 1.5 % > 1.04 %
    bad, _ = moe.judge(_res({1500: 0.03, 3000: 0.06, 6000: 0.1}, 0.8), 1500, curves, N)
    assert bad[moe.GROWS].status == FAILS
    assert bad[moe.CLOSES].status == FAILS


# ---- grid, profiles, estimates --------------------------------------------------------------

def test_grid_every_horizon_variant_and_seed_of_the_profiles_moe_model():
    for name, size, seeds in (("full", "tiny_moe", (0, 1)), ("gpu", "moe_2b", (0,)), ("micro", "tiny_moe", (0, 1))):
        p = get_profile(name)
        g = moe.grid(p)
        hs = sorted(set(knobs(p).horizons) | {p.steps})
        assert set(g) == {(h, k) for h in hs for k in VARIANTS}, name
        for (h, k), ss in g.items():
            assert [s["seed"] for s in ss] == list(seeds)
            for s in ss:
                assert (s["config"], s["optimizer"], s["steps"]) == (size, "muon", h)
                assert s["mode"] == ("sync" if k == "sync" else "2bw") and bool(s.get("ef")) == (k == "ef")
        if name != "micro":
            assert min(hs) >= 1500 and p.steps in hs
    assert sum(map(len, moe.grid(get_profile("full")).values())) == 18  # 3 horizons x 3 variants x 2 seeds


def test_quick_reads_the_moe_runs_from_kept_records_full_trains_them():
    quick = split_runs(get_profile("quick"), ["moe"])["moe"]
    full = split_runs(get_profile("full"), ["moe"])["moe"]
    assert quick["live"] == [] and len(quick["kept"]) == 18
    assert full["kept"] == [] and full["live"] == quick["kept"]


def test_estimate_charges_moe_runs_their_own_step_cost():
    s = {"config": "tiny_moe", "optimizer": "muon", "steps": 1500, "batch_size": 32, "seq_len": 64}
    dense = dict(s, config="tiny")
    got = est.run_seconds(s, fast_bf16=True) - est.RUN_OVERHEAD_S
    # the full profile's own 1500-step MoE runs took 325-360 s each, two side by side
    # (estimates.py's docstring): the estimate of one run of such a pair must land there
    assert 0.85 * 325 <= got * est.PAIR_FACTOR <= 1.15 * 360
    assert got > est.run_seconds(dense, fast_bf16=True) - est.RUN_OVERHEAD_S
    assert est.run_seconds(s, fast_bf16=False) is None  # unmeasured on AVX2: "unknown", not a guess


# ---- end to end ---------------------------------------------------------------------------

def test_micro_moe_end_to_end_with_the_real_trainer(tmp_path):
    """micro, one seed: the real trainer trains tiny_moe in sync, 2BW and 2BW + EF at both
    horizons, the figure renders, and the report carries the paper's Table 3 row."""
    from gpu_runs.recipe import TrainConfig
    from gpu_runs.train import train

    calls = []

    def counting_train(cfg, progress=True):
        calls.append(cfg)
        return train(cfg, progress=False)

    p = profile_with("micro", moe_seeds=(0,))
    res = run_profile(p, tmp_path, only=["moe"], deps=fake_deps(train=counting_train, TrainConfig=TrainConfig),
                      log=_quiet)
    o = res["outputs"][0]
    assert o.status == "done", (o.status, o.missing)
    assert len(calls) == 6 and {c.config for c in calls} == {"tiny_moe"}
    assert {(c.delay.kind, c.steps) for c in calls} == {(k, h) for k in ("sync", "2bw", "ef") for h in (4, 8)}
    assert all(f.stat().st_size > 0 for f in o.files)
    assert set(o.verdicts) == {moe.CLOSES, moe.STABLE, moe.GROWS, moe.EF_EACH}
    assert all(v.status == INCONCLUSIVE and "micro profile" in v.reason for v in o.verdicts.values())
    report = (tmp_path / "figures" / "moe.md").read_text()   # the figure's measurements: on its page
    assert "| *paper: 10B MoE* | 200B tokens | 1.906 | 1.911 | 1.906 | 0.005 | 0.000 |" in report


@pytest.mark.parametrize("fast", [True, False])
def test_list_says_the_moe_runs_are_unmeasured_on_avx2(monkeypatch, tmp_path, fast):
    from paper_figs import listing
    from paper_figs.records.kept import KeptStore
    monkeypatch.setattr(listing, "bf16_fast", lambda: fast)
    text = listing.list_profile(get_profile("full"), only=["moe"], kept=KeptStore(tmp_path))
    if fast:
        assert "total estimate (nothing cached yet): ~" in text
        assert "slow (AVX2 only): unknown, some of these runs' step costs are unmeasured" in text
    else:
        assert "total estimate (nothing cached yet): unknown" in text

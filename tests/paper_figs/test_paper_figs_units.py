"""Unit checks: cache keys and records, verdict rules, the paper's numbers, the CLI."""
from __future__ import annotations

from paper_figs_fakes import knobs

import json
import math

import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from paper_figs.statistics import paper_numbers as pn
from paper_figs.records.cache import Cache, config_hash, to_jsonable
from paper_figs.records.identity import run_key
from paper_figs.cli import main, parser
from paper_figs.listing import list_profile
from paper_figs.figures.pipeline import ideal_ratio
from paper_figs.records.profiles import PROFILES, get_profile
from paper_figs.statistics.seed_stats import Noise, estimate, fieller, paired_ratio, pool
from paper_figs.statistics.verdicts import (FAILS, HOLDS, INCONCLUSIVE, Verdict, combine, ef_recovers,
                                 gap_shrinks_with, much_larger_gap, no_growth, spearman)


# ---- cache -----------------------------------------------------------------------------

@given(st.dictionaries(st.sampled_from("abcdefgh"), st.integers() | st.floats(allow_nan=False) | st.text()))
def test_hash_ignores_key_order_and_sees_every_value(d):
    assert config_hash(d) == config_hash(dict(reversed(list(d.items()))))
    changed = {**d, "z": 1}
    assert config_hash(changed) != config_hash(d)


def test_to_jsonable_handles_tensors_numpy_and_nonfinite():
    obj = {"t": torch.tensor(2.5), "v": torch.arange(3), "n": np.float32(1.5), "bad": float("nan"),
           "tup": (1, 2)}
    out = json.loads(json.dumps(to_jsonable(obj)))
    assert out == {"t": 2.5, "v": [0, 1, 2], "n": 1.5, "bad": None, "tup": [1, 2]}


def test_cache_roundtrip_and_torn_file_counts_as_absent(tmp_path):
    c = Cache(tmp_path)
    key = config_hash({"a": 1})
    assert c.get(key) is None
    c.put(key, {"result": {"x": 1.0}})
    assert c.get(key)["result"] == {"x": 1.0}
    c.path(key).write_text('{"key": "' + key + '", "resu')  # a crash mid-write by something else
    assert c.get(key) is None
    with pytest.raises(ValueError, match="key"):
        c.path("../evil")


# ---- verdict rules ---------------------------------------------------------------------

@given(st.lists(st.floats(-10, 10), min_size=3, max_size=12, unique=True),
       st.lists(st.floats(-10, 10), min_size=3, max_size=12, unique=True))
def test_spearman_matches_scipy(xs, ys):
    n = min(len(xs), len(ys))
    ours = spearman(xs[:n], ys[:n])
    ref = scipy.stats.spearmanr(xs[:n], ys[:n]).statistic
    assert math.isclose(ours, ref, abs_tol=1e-9) or (math.isnan(ours) and math.isnan(ref))


#: a pooled seed spread like the one measured on the tiny model (one gap's SD about 0.0065)
N = Noise(0.0065, 10, 5)


def test_much_larger_gap_thresholds():
    assert much_larger_gap([0.097], [0.008], noise=N).status == HOLDS  # the measured 1500-step picture
    assert much_larger_gap([0.16], [0.20], noise=N).status == FAILS  # the 400-step transient
    assert much_larger_gap([0.030], [0.015], noise=N).status == INCONCLUSIVE  # 2x, not resolved from 3x
    assert much_larger_gap([0.030], [0.028], noise=N).status == FAILS  # equal gaps: resolved below 3x
    # no measured spread and one seed: nothing can be resolved, whatever the numbers
    assert much_larger_gap([0.097], [0.008]).status == INCONCLUSIVE
    # n >= 3: the cell's own spread; a difference inside 2 SE can't be told apart either way
    assert much_larger_gap([0.05, 0.15, 0.0], [0.0, 0.0, 0.0], noise=N).status == INCONCLUSIVE
    assert much_larger_gap([0.10, 0.11, 0.09], [0.0, 0.001, -0.001], noise=N).status == HOLDS
    v = much_larger_gap([0.097], [0.008], noise=N)
    # the line names n, the interval, the dof and where the SD comes from (protocol: t at the pool's dof)
    assert "n=1, pooled SD" in v.reason and "95 % interval" in v.reason and "10 dof" in v.reason


@settings(max_examples=40, deadline=None)
@given(st.floats(0.001, 0.02), st.integers(0, 10_000))
def test_much_larger_gap_resolves_with_seeds_not_a_floor(sd, seed):
    """With enough seeds the verdict converges to the truth at any noise level: a true 10x
    ratio holds, a true 1x ratio does not; the standard error shrinks as 1/sqrt(n)."""
    rng = np.random.default_rng(seed)
    n = int(np.ceil((1000 * sd) ** 2)) + 3    # SE(D - 3R) <= 0.02 / 6: the distance to 3x is 6 SE
    r = 0.01 + sd * rng.standard_normal(n)
    assert much_larger_gap(list(0.1 + sd * rng.standard_normal(n)), list(r), noise=N).status == HOLDS
    assert much_larger_gap(list(0.01 + sd * rng.standard_normal(n)), list(r), noise=N).status == FAILS
    e4, e16 = estimate([0.0, 1.0] * 2), estimate([0.0, 1.0] * 8)
    assert e16.se < e4.se


def test_ef_recovery_rules():
    v, frac = ef_recovers([2.612], [2.890], [2.640], "AdamW", noise=N)  # the paper's 360M numbers
    assert v.status == HOLDS and math.isclose(frac, 0.25 / 0.278)
    assert ef_recovers([1.0], [1.1], [1.09], "x", noise=N)[0].status == FAILS
    assert ef_recovers([1.0], [1.003], [1.0], "x", noise=N)[0].status == INCONCLUSIVE  # gap inside 2 SE
    assert ef_recovers([2.612], [2.890], [2.640], "AdamW")[0].status == INCONCLUSIVE  # no spread measured
    # four seeds whose recovery scatters around 50 %: unresolved, with the interval printed
    v, _ = ef_recovers([1.0] * 4, [1.03, 1.02, 1.03, 1.02], [1.02, 1.005, 1.012, 1.012], "m", noise=N)
    assert v.status == INCONCLUSIVE and "interval" in v.reason


def test_momentum_and_horizon_rules():
    one = lambda xs: [[x] for x in xs]  # noqa: E731 (one seed per cell)
    assert gap_shrinks_with([0.8, 0.9, 0.95, 0.98], one([0.2, 0.1, 0.05, 0.02]), "a", N).status == HOLDS
    assert gap_shrinks_with([0.8, 0.9, 0.95], one([0.02, 0.05, 0.1]), "a", N).status == FAILS
    assert gap_shrinks_with([0.8, 0.9], one([0.2, 0.1]), "a", N).status == INCONCLUSIVE
    assert gap_shrinks_with([0.8, 0.9, 0.95], one([0.02, 0.025, 0.015]), "a", N).status == INCONCLUSIVE
    # protocol §8: a gap that shrinks while the synchronous run worsens is confounded, never "holds"
    worse = gap_shrinks_with([0.95, 0.99, 0.999], one([0.05, 0.03, 0.01]), "Lion", N, sync=one([1.0, 1.1, 1.3]))
    assert worse.status == INCONCLUSIVE and "confounded" in worse.reason and "seeds per cell" not in worse.reason
    flat = gap_shrinks_with([0.95, 0.99, 0.999], one([0.05, 0.03, 0.01]), "Lion", N, sync=one([1.0, 1.0, 1.001]))
    assert flat.status == HOLDS
    # ... and never "does not hold" either: a gap that grows while the sync loss moves (either way)
    grows = gap_shrinks_with([0.8, 0.9, 0.98], one([0.02, 0.05, 0.1]), "AdamW", N, sync=one([1.0, 1.06, 1.12]))
    assert grows.status == INCONCLUSIVE and "confounded: the sync loss moves by +0.1200" in grows.reason
    better = gap_shrinks_with([0.8, 0.9, 0.98], one([0.02, 0.05, 0.1]), "AdamW", N, sync=one([1.12, 1.06, 1.0]))
    assert better.status == INCONCLUSIVE and "confounded" in better.reason
    assert gap_shrinks_with([0.8, 0.9, 0.98], one([0.02, 0.05, 0.1]), "AdamW", N,
                            sync=one([1.0, 1.0, 1.001])).status == FAILS   # a still baseline decides
    # "does not grow": the growth's 95 % interval below a margin stated in advance (protocol: 0.26 % of a
    # ~2 nats/byte sync loss, 0.005), one-sided: a shrinking gap has not grown
    m = 0.005
    assert no_growth([1500, 3000], one([0.10, 0.07]), "a", N, m).status == HOLDS
    assert no_growth([1500, 3000], one([0.10, 0.09]), "a", N, m).status == INCONCLUSIVE  # upper end 0.0105 > m
    assert no_growth([1500, 3000], one([0.10, 0.13]), "a", N, m).status == FAILS
    assert no_growth([1500, 3000], one([0.02, 0.021]), "a", N, m).status == INCONCLUSIVE  # inside the noise
    with pytest.raises(ValueError, match="margin"):
        no_growth([1500, 3000], one([0.10, 0.09]), "a", N)


def test_pooled_spread_equals_the_anova_within_group_variance():
    """sd_pool^2 = sum of squared deviations from each group's mean / sum (n_g - 1), computed with
    numpy independently; one-value groups count for nothing."""
    rng = np.random.default_rng(1)
    groups = [list(rng.normal(m, 0.01, k)) for m, k in ((0.1, 4), (0.02, 2), (0.5, 3))] + [[0.3]]
    ss = sum(float(np.sum((np.asarray(g) - np.mean(g)) ** 2)) for g in groups)
    dof = sum(len(g) - 1 for g in groups)
    nz = pool(groups)
    assert math.isclose(nz.sd ** 2, ss / dof) and nz.dof == dof == 6 and nz.groups == 3


@settings(max_examples=60, deadline=None)
@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(1e-4, 0.1), st.floats(1e-4, 0.1), st.floats(-0.9, 0.9))
def test_fieller_interval_is_the_set_it_claims(a, b, sa, sb, rho):
    """Every k in Fieller's interval satisfies (a - k b)^2 <= Z^2 (va - 2 k c + k^2 vb), points
    just outside do not, and a / b lies inside (checked by brute force on a grid)."""
    va, vb, c = sa * sa, sb * sb, rho * sa * sb
    lo, hi = fieller(a, b, va, vb, c)
    z = 2.0   # fieller's default critical value
    inside = lambda k: (a - k * b) ** 2 <= z ** 2 * (va - 2 * k * c + k * k * vb) + 1e-12  # noqa: E731
    if b:
        assert lo - 1e-9 <= a / b <= hi + 1e-9
    if math.isinf(lo) and math.isinf(hi):
        return   # unbounded: no information (b not resolved from 0)
    start = lo if math.isfinite(lo) else hi - 100
    for k in np.linspace(start, min(hi, start + 100), 25):
        assert inside(k)
    for k in (lo, hi):
        if math.isfinite(k):
            assert not inside(k - 1e-3 * (1 + abs(k))) or not inside(k + 1e-3 * (1 + abs(k)))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.floats(-0.5, 0.5), st.floats(0.05, 0.5), st.integers(0, 10_000))
def test_the_ratio_of_paired_means_solves_fiellers_quadratic(n, ma, mb, seed):
    """paired_ratio(a, b): the point is mean(a) / mean(b); each finite end k solves
    (mean a - k mean b)^2 = t^2 (var_a - 2 k cov + k^2 var_b) / n with the moments from numpy
    (ddof 1) and t from scipy: the interval of the ratio of two means that covary."""
    rng = np.random.default_rng(seed)
    b = rng.normal(mb, 0.05, n)
    a = 0.5 * b + rng.normal(ma, 0.05, n)
    point, lo, hi = paired_ratio(list(a), list(b))
    assert math.isclose(point, a.mean() / b.mean(), rel_tol=1e-12)
    assert lo <= point <= hi
    cov = np.cov(a, b, ddof=1) / n
    t = scipy.stats.t.ppf(0.975, n - 1)
    for k in (lo, hi):
        if math.isfinite(k) and k != point:
            lhs = (a.mean() - k * b.mean()) ** 2
            rhs = t ** 2 * (cov[0, 0] - 2 * k * cov[0, 1] + k * k * cov[1, 1])
            assert math.isclose(lhs, rhs, rel_tol=1e-6, abs_tol=1e-12)
    assert paired_ratio([1.0], [2.0]) is None and paired_ratio([1.0, 2.0], [1.0, -1.0]) is None


@given(st.lists(st.sampled_from([HOLDS, FAILS, INCONCLUSIVE]), min_size=1, max_size=9))
def test_a_claim_about_every_part_holds_only_when_every_part_holds(parts):
    """Protocol (docs/protocol.md §3, changed from 'a resolved majority that agrees'): a claim
    about every part is the intersection-union test: it holds when every part holds, fails when
    a part fails (Bonferroni), and is inconclusive otherwise."""
    v = combine([Verdict(s, "") for s in parts], "claim")
    if set(parts) == {HOLDS}:
        assert v.status == HOLDS
    elif FAILS in parts:
        assert v.status == FAILS
    else:
        assert v.status == INCONCLUSIVE


def test_combine_one_horizon_of_three_is_not_every_horizon():
    v = combine([Verdict(HOLDS, ""), Verdict(INCONCLUSIVE, ""), Verdict(INCONCLUSIVE, "")], "h")
    assert v.status == INCONCLUSIVE and "1 of 3 parts hold" in v.reason


# ---- the paper's numbers ---------------------------------------------------------------

def test_stated_gaps_agree_with_stated_losses():
    """The summary gives some gaps twice (as a gap, and as two losses): they must agree."""
    for (opt, size), row in pn.LOSSES.items():
        if opt in pn.GAPS and size in pn.GAPS[opt]:
            gap = row["2bw"].value - row["sync"].value
            assert math.isclose(gap, pn.GAPS[opt][size].value, abs_tol=5e-4), (opt, size)


def test_every_number_has_a_source_and_missing_ones_say_so():
    for row in pn.LOSSES.values():
        for num in row.values():
            assert num.source and num.scale
            assert (num.value is None) == (num.source == pn.NOT_GIVEN)
    assert pn.GAPS["soap"]["360M"].value is None and pn.GAPS["soap"]["360M"].source == pn.NOT_GIVEN


def test_recovery_formula_on_the_papers_adamw_row():
    r = pn.LOSSES["adamw", "360M"]
    assert round(pn.recovery(r["sync"].value, r["2bw"].value, r["ef"].value), 2) == 0.90


# ---- profiles, pipeline helper, CLI ----------------------------------------------------

def test_no_training_figure_below_the_honest_horizon():
    for name, p in PROFILES.items():
        if name == "micro":
            continue
        assert p.steps >= 1500 and min(knobs(p).horizons) >= 1500, name
        assert all(p.runs_figure(n) for n in ("fig3", "theory", "pipeline")), name


def test_ideal_bubble_ratio():
    assert ideal_ratio(1, 4) == 4.0 and ideal_ratio(8, 1) == 1.0 and ideal_ratio(4, 4) == 7 / 4
    with pytest.raises(ValueError, match="M, P"):
        ideal_ratio(0, 2)


def test_cli_list_and_bad_input(capsys, tmp_path):
    from paper_figs.records.kept import KeptStore
    assert main(["--list", "--profile", "quick"]) == 0
    text = capsys.readouterr().out
    assert "not run in this profile" not in text  # quick shows every figure
    # Figure 4: 84 runs kept, 40 more declared by the protocol's grid extensions (paper_figs/planned_runs.py)
    assert "fig3: 24 run(s): 6 new live" in text and "fig4: 124 run(s): 0 new live" in text
    assert text.count("\n    live  ") == 6  # Figure 3's seed-0 runs, nothing else
    assert "total estimate" in text
    with pytest.raises(SystemExit):
        main(["--only", "nonsense"])
    with pytest.raises(ValueError, match="profile"):
        get_profile("huge")
    full = list_profile(get_profile("full"), kept=KeptStore(tmp_path))
    assert "fig5" in full and "\n    kept  " not in full  # full trains everything itself


def test_list_says_what_the_cache_holds_and_what_is_left(tmp_path):
    """--list with OUT's cache: a cached run is marked and costs nothing, a killed run's
    checkpoint is found at its last evaluated step and only its remaining steps are charged."""
    from paper_figs.records import estimates as est
    from paper_figs.records.deps import Deps
    from paper_figs.records.kept import KeptStore
    from paper_figs.pipeline import split_runs
    from paper_figs.records.runs import full_config, run_dir
    full = get_profile("full")
    runs = split_runs(full, ["fig6"], False)["fig6"]["live"]
    cache = Cache(tmp_path / "cache")
    key = [run_key(full_config(Deps().TrainConfig, s)) for s in runs]
    cache.put(key[0], {"kind": "train", "result": {"final_val_loss": 1.0, "log": []}})
    d = run_dir(cache, key[1])
    d.mkdir(parents=True)
    (d / "ckpt.pt").write_bytes(b"x")
    (d / "log.jsonl").write_text('{"step": 300, "val_loss": 2.0}\n{"step": 310, "train_loss": 1.9}\n')
    text = list_profile(full, only=["fig6"], kept=KeptStore(tmp_path / "kept"), cache=cache)
    assert text.count("; cached]") == 1 and text.count(f"; checkpoint at step 300 of {runs[1]['steps']}]") == 1
    left = [{**runs[1], "steps": runs[1]["steps"] - 300}] + runs[2:]
    rest = est.total_seconds(left, full.jobs) + est.STARTUP_S + est.RENDER_S
    assert (f"1 of {len(runs)} live run(s) cached, 1 to resume from a checkpoint; left to train: "
            f"{len(runs) - 1} run(s), {est.fmt_seconds(rest)}") in text
    forced = list_profile(full, only=["fig6"], kept=KeptStore(tmp_path / "kept"), cache=cache, force=True)
    assert "; cached]" not in forced and "checkpoint at" not in forced  # --force retrains it all


def test_cli_figure_names_are_the_catalogs():
    from paper_figs.cli import parser
    from paper_figs.figures import CATALOG
    only = next(a for a in parser()._actions if a.dest == "only")
    assert list(only.choices) == list(CATALOG)  # --only's choices and the report order: one list


def test_cli_list_honours_only_and_help_shows_defaults(capsys):
    assert main(["--list", "--only", "fig6", "--profile", "quick"]) == 0
    text = capsys.readouterr().out
    assert "fig6:" in text
    assert not any(f"  {n}:" in text for n in ("fig3", "table1", "fig2_table2", "fig4", "fig5", "theory"))
    help_text = parser().format_help()
    assert "(default: quick)" in help_text and "(default: figs_out)" in help_text


def test_estimate_charges_each_optimizer_its_step_cost():
    from paper_figs.records import estimates as est
    base = {"config": "tiny", "steps": 1500, "batch_size": 32, "seq_len": 64}
    for fast in (False, True):
        adamw = est.run_seconds({**base, "optimizer": "adamw"}, fast) - est.RUN_OVERHEAD_S
        for opt, row in est.STEP_FACTOR.items():
            got = est.run_seconds({**base, "optimizer": opt}, fast) - est.RUN_OVERHEAD_S
            assert math.isclose(got, adamw * row["tiny"][int(fast)]), opt
    # the AVX2 column charges the Muon family the measured 3.5x (tiny) / 6.6x (small)
    assert est.step_factor("muon", "small", False) == 6.6 and est.step_factor("muon", "tiny", False) == 3.5
    assert est.run_seconds({**base, "optimizer": "unknown-opt"}) is None
    assert est.total_seconds([], 2) == 0.0


def test_quick_shows_every_figure_and_its_kept_grids_are_the_full_profiles():
    """Every run quick reads from kept records is a run of the full profile (so `make figs
    PROFILE=full` produces it), and quick's live part is Figure 3's seed-0 runs."""
    from paper_figs.figures import CATALOG
    from paper_figs.figures.common import figure_runs
    from paper_figs.pipeline import split_runs
    quick, full = get_profile("quick"), get_profile("full")
    assert all(quick.runs_figure(n) for n in CATALOG)
    split = split_runs(quick, list(CATALOG))
    full_runs = {repr(sorted(s.items())) for n in CATALOG for s in figure_runs(CATALOG[n], full)}
    for name, v in split.items():
        for s in v["kept"]:
            assert repr(sorted(s.items())) in full_runs, (name, s)
        assert all(name == "fig3" and s["seed"] == 0 for s in v["live"]), name
    assert len(split["fig3"]["live"]) == 6


def test_pipeline_verdict_rules():
    from paper_figs.figures.pipeline import judge
    good = [dict(P=4, M=4, ideal=1.75, measured_1f1b=1.7, measured_gpipe=1.8)]
    assert judge(good).status == HOLDS
    assert judge([{**good[0], "measured_gpipe": 0.98}]).status == FAILS
    assert judge([{**good[0], "measured_1f1b": 1.2}]).status == INCONCLUSIVE


def test_every_profiles_runs_are_valid_trainer_configs():
    """Every run of every profile passes the real TrainConfig.validate (and PipeDream's
    stages fit the model's layers), so a long profile cannot die on a typo hours in."""
    from gpu_runs.model import get_config
    from gpu_runs.recipe import TrainConfig

    from paper_figs.figures import CATALOG
    from paper_figs.figures.common import figure_runs
    for p in PROFILES.values():
        for name, mod in CATALOG.items():
            if p.runs_figure(name):
                for s in figure_runs(mod, p):
                    cfg = TrainConfig(**s)
                    cfg.validate()
                    if cfg.delay.stale_point:   # pipedream
                        assert 3 <= cfg.stages <= get_config(cfg.config).n_layers or p.name == "micro"


def test_paper_ef_recovery_beside_ours_follows_the_summary():
    from paper_figs.figures.fig2_table2 import _paper_ef
    assert _paper_ef("adamw") == "90%" and _paper_ef("muon") == "71%"
    assert _paper_ef("mars").startswith("85%-90%") and _paper_ef("soap").startswith("50%-70%")
    assert "hurt" in _paper_ef("adan") and "hurt" in _paper_ef("nadam") and _paper_ef("lion") == "not given"


@given(st.lists(st.lists(st.floats(-5, 5), min_size=0, max_size=5), min_size=1, max_size=6))
def test_seed_errorbars_are_the_95_percent_t_interval(per_seed):
    """Issue 51 item 2: the whiskers are the interval the verdicts use, the 95 % Student-t interval
    of the mean (scipy's), not the SD."""
    from scipy import stats
    from paper_figs.figures.plotting import seed_errorbars
    got = seed_errorbars(per_seed)
    want = [float(np.std(xs, ddof=1) / np.sqrt(len(xs)) * stats.t.ppf(0.975, len(xs) - 1)) if len(xs) >= 2
            else 0.0 for xs in per_seed]
    if got == {}:
        assert all(w <= 1e-9 for w in want)
    else:
        assert np.allclose(got["yerr"], want, atol=1e-7)


def test_an_inconclusive_verdict_says_how_many_seeds_would_resolve_it():
    """n' = n (Z SE / distance)^2: with 4x the seeds the SE halves, so an estimate 1 SE from the
    decision point needs 4 n seeds (Z = 2); the printed number is that."""
    from paper_figs.statistics.seed_stats import seeds_to_resolve
    assert "about 18 seeds" in seeds_to_resolve(0.01, 0.01, 4, 3.0)   # (n / 4)^(1/2) >= t_{0.975, n - 1}
    assert "about 5 seeds" in seeds_to_resolve(0.05, 0.01, 4, 3.0)  # already resolved: at least n + 1
    v = much_larger_gap([0.030], [0.015], noise=N)
    assert v.status == INCONCLUSIVE and "seeds per cell would resolve it" in v.reason


def test_larger_gap_is_the_weaker_reading_of_much_larger():
    """Whenever 'at least 3x, resolved' holds for positive gaps, 'larger, resolved' holds too;
    and a 2x gap can be resolved larger while 3x stays unresolved."""
    from paper_figs.statistics.verdicts import larger_gap
    assert larger_gap([0.030], [0.015], noise=Noise(0.002, 10, 5)).status == HOLDS
    assert much_larger_gap([0.030], [0.015], noise=Noise(0.002, 10, 5)).status == FAILS
    assert larger_gap([0.030], [0.028], noise=N).status == INCONCLUSIVE
    assert larger_gap([0.010], [0.05], noise=N).status == FAILS
    rng = np.random.default_rng(3)
    for _ in range(200):
        d, r = list(rng.uniform(0, 0.3, 2)), list(rng.uniform(0, 0.1, 2))
        if much_larger_gap(d, r, noise=N).status == HOLDS:
            assert larger_gap(d, r, noise=N).status == HOLDS


def test_a_cell_borrows_by_the_homogeneity_criterion_and_carries_the_widest_pool_as_its_alternative():
    """docs/protocol.md §5. AdamW's cells at its preset lr and at 4x spread differently (Bartlett
    rejects one SD for all of AdamW's cells): a preset-lr cell borrows the most specific pool
    (AdamW on tiny at the preset), and its conservative alternative is the widest candidate.
    Muon's cells agree (Bartlett does not reject): a Muon cell borrows all of Muon's cells. An
    optimizer with no multi-seed cell borrows every optimizer's pool at its lr, else every cell's."""
    from paper_figs.statistics.seed_stats import noise_model
    rng = np.random.default_rng(0)
    small = [list(0.07 + 0.005 * rng.standard_normal(4)) for _ in range(3)]
    wide = [list(0.3 + 0.1 * rng.standard_normal(4)) for _ in range(2)]
    muon = [list(0.01 + 0.005 * rng.standard_normal(3)) for _ in range(3)]
    groups = ([("adamw", "tiny", 1, g) for g in small] + [("adamw", "tiny", 4, g) for g in wide]
              + [("muon", "tiny", 1, muon[0]), ("muon", "tiny_moe", 1, muon[1]), ("muon", "tiny", 0.5, muon[2])])
    m = noise_model(groups)
    adamw = m.for_cell("adamw", "tiny")
    assert math.isclose(adamw.sd, pool(small).sd) and adamw.dof == 9
    assert "not homogeneous" in adamw.source
    assert adamw.alt is not None and adamw.alt.sd > 5 * adamw.sd          # the widest candidate: every AdamW cell
    assert math.isclose(m.for_cell("adamw", "tiny", 4).sd, pool(wide).sd)
    assert m.for_cell("adamw", "tiny", 4.0) is m.for_cell("adamw", "tiny", (4, 4))      # c means (c, c)
    mu = m.for_cell("muon", "tiny")
    assert math.isclose(mu.sd, pool(muon).sd) and "homogeneous at 5 %" in mu.source     # one SD fits Muon's cells
    assert math.isclose(m.for_cell("soap", "tiny").sd, pool(small + muon[:2]).sd)  # every optimizer at the preset
    assert math.isclose(m.for_cell("soap", "tiny", 8).sd, pool(small + wide + muon).sd)   # every cell
    assert m.for_cell("adamw", "tiny").conservative.width() >= m.for_cell("adamw", "tiny").width()


def test_a_line_decided_under_one_pool_only_is_inconclusive():
    """The borrowed pool resolves a 0.02 difference, its conservative alternative does not: the
    line is inconclusive and says that its status depends on the pool."""
    from paper_figs.statistics.verdicts import larger_gap
    narrow = Noise(0.004, 10, 3, "; narrow", alt=Noise(0.02, 4, 2, "; wide"))
    v = larger_gap([0.03], [0.01], noise=narrow)
    assert v.status == INCONCLUSIVE and "depends on the pool" in v.reason
    assert larger_gap([0.03], [0.01], noise=Noise(0.004, 10, 3)).status == HOLDS
    assert larger_gap([0.03, 0.031, 0.029], [0.01, 0.011, 0.009], noise=narrow).status == HOLDS   # own SDs: no pool


def test_replicate_gaps_keys_each_group_by_its_runs_lr_multipliers():
    """The protocol behind the lr level: a group's lrs come from its runs' settings (no "lr":
    the preset), the sync run's first, so a held-out cell that pairs sync at 4x with 2BW at
    0.5x is pooled apart from the preset-lr cells."""
    from types import SimpleNamespace

    from lmo.presets import DEFAULT_LR
    from paper_figs.figures.common import lr_mult, replicate_gaps
    from paper_figs.statistics.seed_stats import noise_model

    loss = {}

    def run(kind, seed, mult, value):
        s = {"optimizer": "adamw", "config": "tiny", "variant": kind, "seed": seed}
        if mult != 1:
            s["lr"] = mult * DEFAULT_LR["adamw"]
        loss[json.dumps(s, sort_keys=True)] = value
        return s

    grid = {("pre", "sync"): [run("sync", s, 1, 1.0) for s in range(3)],
            ("pre", "2bw"): [run("2bw", s, 1, 1.0 + d) for s, d in enumerate((0.07, 0.08, 0.075))],
            ("held", "sync"): [run("sync", s, 4, 1.0) for s in range(3)],
            ("held", "2bw"): [run("2bw", s, 0.5, 1.0 + d) for s, d in enumerate((0.3, 0.5, 0.4))]}
    ctx = SimpleNamespace(runner=SimpleNamespace(key_of=lambda s: json.dumps(s, sort_keys=True)),
                          get=lambda s: SimpleNamespace(ok=True, final=loss[json.dumps(s, sort_keys=True)]))
    groups = {g[2]: g[3] for g in replicate_gaps(ctx, [grid])}
    assert set(groups) == {(1.0, 1.0), (4.0, 0.5)}
    assert groups[4.0, 0.5] == pytest.approx([0.3, 0.5, 0.4])
    assert lr_mult(grid["held", "sync"][0]) == pytest.approx(4.0) and lr_mult(grid["pre", "sync"][0]) == 1.0
    m = noise_model(replicate_gaps(ctx, [grid]))
    assert m.for_cell("adamw", "tiny").sd == pytest.approx(0.005)       # the preset cells' own spread only
    assert m.for_cell("adamw", "tiny", (4, 0.5)).sd == pytest.approx(0.1)

"""The correctors study's readings (issue 51 item 4; paper_figs/figures/correctors_readings.py):
the stall / diverges rule on synthetic curves, the share's interval against the verdict's, the
model-vs-measured rank correlation against scipy, the wording of DC-ASGD and of what the tau = 1
lines understate, the symlog-free gap panel, and the renamed look-ahead's runs still resolving to
their kept records."""
import math
import random
import re

import matplotlib
import pytest
import scipy.stats

from paper_figs.figures import correctors as C
from paper_figs.figures import correctors_readings as R
from paper_figs.figures import plotting
from paper_figs.records.deps import Deps
from paper_figs.records.identity import run_key
from paper_figs.records.kept import KeptStore
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import full_config
from paper_figs.statistics.seed_stats import NO_NOISE
from paper_figs.statistics.verdicts import ef_recovers, spearman

matplotlib.use("Agg")


# --- stall or diverges

def test_a_monotone_slow_fall_is_a_stall():
    curve = [3.27 - 0.055 * i for i in range(15)]          # AdamW tau = 4: 3.27 -> 2.50, never rising
    assert R.curve_course(curve) == R.STALL
    assert R.largest_rise(curve) == 0.0


def test_a_blow_up_diverges_even_when_it_recovers():
    assert R.curve_course([5.22, 4.86, 13.28, 7.82, 6.98, 3.54, 2.84]) == R.DIVERGES   # scion tau = 8, seed 0
    assert R.largest_rise([5.22, 4.86, 13.28, 7.82, 2.84]) == pytest.approx(13.28 - 4.86)


def test_noise_below_the_margin_is_not_a_rise_and_just_above_it_is():
    rng = random.Random(0)
    wobbly = [3.0 - 0.05 * i + rng.uniform(-0.1, 0.1) for i in range(30)]
    assert R.largest_rise(wobbly) < R.RISE_MARGIN
    assert R.curve_course(wobbly) == R.STALL
    spike = [3.0, 2.8, 2.6, 2.6 + R.RISE_MARGIN + 0.01, 2.5]
    assert R.curve_course(spike) == R.DIVERGES
    assert R.curve_course([3.0, 2.8, 2.6, 2.6 + R.RISE_MARGIN - 0.01, 2.5]) == R.STALL


def test_ending_above_the_start_or_a_nan_diverges():
    assert R.curve_course([3.0, 3.1, 3.2, 3.3]) == R.DIVERGES       # every rise small, but it ends higher
    assert R.curve_course([3.0, 2.5, float("nan")]) == R.DIVERGES
    with pytest.raises(ValueError):
        R.curve_course([])


def test_course_lines_count_the_seeds():
    cells = {("AdamW", 4): [([100, 200, 300], [3.3, 3.0, 2.5])] * 2 + [([100, 200, 300], [3.3, 9.0, 3.0])]}
    (line,) = R.course_lines(cells)
    assert "**mixed**" in line and "2 of 3 seeds stall, 1 diverge" in line and "3.30 -> 2.67" in line
    cells[("scion", 8)] = [([100, 200], [5.0, 13.0, 3.0])] * 3
    cells[("AdamW", 2)] = [([100, 200], [3.0, 2.0])] * 3
    assert R.course_summary(cells).endswith("AdamW mixes at tau = 4 and stalls at tau = 2; scion diverges at tau = 8.")


# --- the share, the model against the measurement

SEEDS = (0.0, 0.003, -0.002)


def _runs(base, gap, jitter):
    return [base + gap + e + j for e, j in zip(SEEDS, jitter)]


def test_share_interval_is_the_one_the_verdict_prints():
    sync = _runs(1.44, 0.0, (0, 0, 0))
    plain = _runs(1.44, 0.08, (0.001, -0.002, 0.0015))
    corr = _runs(1.44, 0.02, (-0.002, 0.001, 0.003))
    v, frac = ef_recovers(sync, plain, corr, "X", low=0.0)
    lo, hi = (float(x) / 100 for x in re.search(r"interval \[([-\d.]+)%, ([-\d.]+)%\]", v.reason).groups())
    got = R.share_interval(sync, plain, corr, NO_NOISE)
    assert got[0] == pytest.approx(lo, abs=0.006) and got[1] == pytest.approx(hi, abs=0.006)
    assert got[0] < frac < got[1]
    # an unresolved gap: no bounded interval
    flat = _runs(1.44, 0.0, (0.01, -0.012, 0.004))
    assert not all(map(math.isfinite, R.share_interval(sync, flat, corr, NO_NOISE)))


def test_spearman_is_scipys_with_ties():
    rng = random.Random(1)
    for _ in range(20):
        n = rng.randint(3, 18)
        xs = [rng.choice([0.0, 0.2, 0.55, 0.68]) for _ in range(n)]   # the model ties its DC-ASGD cells at 0
        ys = [rng.uniform(-0.3, 1.1) for _ in range(n)]
        want = scipy.stats.spearmanr(xs, ys).statistic
        got = spearman(xs, ys)
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12)


def test_model_lines_compute_the_correlation_and_name_the_refuted_levels():
    shares = {(1, "adamw", "ef"): 0.85, (1, "adamw", "weight_prediction"): 0.79,
              (1, "adamw", "nesterov_lookahead"): 0.82, (1, "adamw", "dc_asgd_ema"): 0.06,
              (4, "muon", "weight_prediction"): 0.57, (4, "muon", "dc_asgd_adaptive"): -0.06,
              (4, "muon", "lr_damping"): -0.34}                              # no model value: left out
    intervals = {k: (v - 0.15, v + 0.15) for k, v in shares.items()}
    lines = R.model_lines(shares, intervals, C.predicted_share, plotting.label)
    cells = [k for k in shares if k[2] != "lr_damping"]
    want = scipy.stats.spearmanr([C.predicted_share(o, c, t) for t, o, c in cells], [shares[k] for k in cells])
    assert f"Spearman rank correlation {want.statistic:.2f} over {len(cells)} cells" in lines[0]
    ext = [k for k in cells if k[2] in R.EXTRAPOLATING]
    want_ext = scipy.stats.spearmanr([C.predicted_share(o, c, t) for t, o, c in ext], [shares[k] for k in ext])
    assert f"{want_ext.statistic:.2f} within the extrapolating correctors" in lines[0]
    # AdamW tau = 1: the model's 55 % lies below 0.85 - 0.15 and 0.79 - 0.15; Muon tau = 4's 57 % is inside
    assert "AdamW tau = 1, EF: predicted 55%, measured 85%" in lines[1]
    assert "AdamW tau = 1, weight prediction: predicted 55%" in lines[1]
    assert "Muon tau = 4" not in lines[1]
    assert lines[2].endswith("its level refuted at AdamW tau = 1 (predicted 55%, measured 79%-85%).")


# --- what the lines understate, DC-ASGD worded as the data allow

def _cell(plain_gap, corr: dict, sync_jitter=(0.0, 0.0, 0.0)):
    sync = [1.36 + j for j in sync_jitter]
    r = {"sync": sync, "none": [s + plain_gap + d for s, d in zip(sync, (0.012, -0.013, 0.002))]}
    for c, (gap, jit) in corr.items():
        r[c] = [s + gap + d for s, d in zip(sync, jit)]
    return r


def test_a_corrector_below_an_unresolved_plain_delay_is_named():
    # the plain delay's spread is large, the pair's is not
    r = _cell(0.019, {"weight_prediction": (0.0, (0.011, -0.012, 0.001))})
    res = {(1, "muon"): r}
    v, _ = C.judge(_Ctx(), {("corr1", "muon"): r})
    recovers = {(1, "muon", "weight_prediction"): v[C.recovers_line(1, "muon", "weight_prediction")]}
    line, summary = R.beats_plain_lines(res, recovers, lambda o: NO_NOISE, plotting.label)
    assert "tau = 1, Muon: weight prediction is decidedly below the plain delay" in line
    assert "L(corrector) - L(plain) = -0.019" in line
    assert summary.startswith("Understated: at tau = 1, Muon, weight prediction -0.019")
    # a resolved plain gap: the line is undecided for another reason, nothing is said
    r2 = _cell(0.2, {"weight_prediction": (0.18, (0.011, -0.012, 0.001))})
    v2, _ = C.judge(_Ctx(), {("corr1", "muon"): r2})
    rec2 = {(1, "muon", "weight_prediction"): v2[C.recovers_line(1, "muon", "weight_prediction")]}
    assert R.beats_plain_lines({(1, "muon"): r2}, rec2, lambda o: NO_NOISE, plotting.label) == []


def test_dc_asgd_is_not_distinguishable_from_zero_never_equivalent_when_the_margin_cannot_be_tested():
    wide = _cell(1.0, {"dc_asgd_adaptive": (0.95, (0.09, -0.1, 0.06))})
    line, summary = R.near_zero_lines({(4, "adamw"): wide}, lambda o: NO_NOISE, plotting.label, 0.005)
    assert "not distinguishable from 0" in line and "cannot be shown" in line and "equivalent" not in line
    assert "not distinguishable from 0 in 1 of 1 cells (1 of them too wide" in summary and "equivalent in 0" in summary
    tight = _cell(1.0, {"dc_asgd_ema": (1.0, (0.0130, -0.0118, 0.0021))})   # diffs 0.001, 0.0012, 0.0001
    line, summary = R.near_zero_lines({(4, "adamw"): tight}, lambda o: NO_NOISE, plotting.label, 0.005)
    assert "equivalent to the plain delay within +-0.005" in line and "equivalent in 1" in summary
    off = _cell(1.0, {"dc_asgd_ema": (0.9, (0.011, -0.012, 0.004))})
    line, summary = R.near_zero_lines({(4, "adamw"): off}, lambda o: NO_NOISE, plotting.label, 0.005)
    assert "differs from 0" in line and "different from 0 in 1" in summary


def test_the_scion_line_names_its_confound():
    assert f"{R.scion_head_radius():g} x" in C.SCION_BELOW and R.scion_head_radius() == 60.0
    assert "head_radius = 60" in R.scion_confound()


class _Ctx:
    def __init__(self):
        self.profile = get_profile("full")

    def noise_for(self, optimizer, config=None, lr=1.0):
        return NO_NOISE


# --- the gap panel without symlog

def test_the_gap_panel_is_a_log_of_the_size_with_the_sign_marked():
    s = C.Spec(tau_optimizers=("adamw",), taus=(1, 2, 4))
    sync = [1.44, 1.443, 1.438]
    res = {("tau", "adamw"): {"sync": sync, "tau1": [x - 0.02 + d for x, d in zip(sync, (0.001, -0.002, 0.0))],
                              "tau2": [x + 0.3 for x in sync], "tau4": [x + 0.9 + d for x, d in
                                                                        zip(sync, (0.01, -0.02, 0.0))]}}
    fig, axes = plotting.new(ncols=2)
    rows = C._tau_panel(axes[0], axes[1], s, res)
    assert axes[0].get_yscale() == "log" and axes[1].get_yscale() == "log"
    assert "(nats/byte" in axes[0].get_ylabel()
    hollow = [ln for ln in axes[0].lines if ln.get_markerfacecolor() == "white" and len(ln.get_xdata())]
    assert [list(ln.get_xdata()) for ln in hollow] == [[1]]          # the negative gap at tau = 1, and only it
    assert hollow[0].get_ydata()[0] == pytest.approx(0.02, abs=0.002)  # its size, on the log axis
    assert "unresolved" in rows[-1] or "[" in rows[-1]
    matplotlib.pyplot.close(fig)


# --- the renamed look-ahead keeps its runs' identities

def test_every_kept_correctors_record_still_resolves():
    """The label is 'damped weight prediction', the run's settings still say nesterov_lookahead, and
    every run of the full profile's correctors grid finds its kept record by its key (but the
    declared synchronous baseline of the published method, not trained yet)."""
    p, store, tc = get_profile("full"), KeptStore(), Deps().TrainConfig
    g = C.grid(p)
    runs = [x for k, cell in g.items() if k[2] not in (R.PUBLISHED, R.PUBLISHED_SYNC) for x in cell]
    assert sum(x.get("corrector") == "nesterov_lookahead" for x in runs) == 12
    missing = [x for x in runs if store.get(run_key(full_config(tc, x))) is None]
    assert not missing, missing[:3]


def test_the_published_nesterov_runs_were_declared_before_they_were_trained():
    """12 runs (tau 1 and 4, AdamW -> NAdamW and Muon at momentum 0.99, no corrector, 3 seeds), in the
    protocol's declared runs; every one kept, each launched from a clean commit that descends from
    the commit that declared them (the first to hold ``published_nesterov`` in the figure's spec)."""
    import subprocess
    from pathlib import Path

    from paper_figs.planned_runs import planned
    root = Path(__file__).resolve().parents[2]
    git = lambda *a: subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True)  # noqa: E731
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.fail("a shallow clone: the declaration's commit cannot be checked (clone with history)")
    declared_at = git("log", "--format=%H", "-S", "published_nesterov: float", "--",
                      "paper_figs/figures/correctors.py").stdout.split()[-1]
    p, store, tc = get_profile("full"), KeptStore(), Deps().TrainConfig
    g = C.grid(p)
    pub = [x for k, cell in g.items() if k[2] == R.PUBLISHED for x in cell]
    assert len(pub) == 12
    assert {(x["optimizer"], x.get("tau", 1), x["momentum"]) for x in pub} == {
        ("nadam", 1, 0.99), ("nadam", 4, 0.99), ("muon", 1, 0.99), ("muon", 4, 0.99)}
    assert not any("corrector" in x for x in pub)
    keys = {run_key(full_config(tc, x)) for x in pub}
    assert keys <= {k for _, _, k in planned()}
    bad = []
    for k in sorted(keys):
        rec = store.get(k)
        launch = ((rec or {}).get("provenance") or {}).get("launch_commit", "")
        ok = rec is not None and launch and not launch.endswith("+dirty") and git(
            "merge-base", "--is-ancestor", declared_at, launch.split("+")[0]).returncode == 0
        if not ok:
            bad.append(f"{k} ({'not kept' if rec is None else 'launched at ' + (launch or 'no commit')})")
    assert not bad, f"published-Nesterov records not launched after their declaration {declared_at[:12]}: {bad}"
    assert R.corrector_label("nesterov_lookahead").startswith("damped weight prediction")
    assert "nesterov" not in C.recovers_line(4, "muon", "nesterov_lookahead")


def test_the_published_methods_own_gap_is_declared_and_judged_when_its_runs_exist():
    """The 6 synchronous runs of NAdamW / Muon at momentum 0.99 are declared (the full profile's
    planned runs), one per seed and optimizer, shared by the tau = 1 and 4 panels; with numbers in
    place the line is judged per (tau, optimizer) on paired gaps, and a recipe whose own gap is
    as large as the plain delay's does not hold."""
    from paper_figs.planned_runs import planned
    p, tc = get_profile("full"), Deps().TrainConfig
    g = C.grid(p)
    cells = {k: v for k, v in g.items() if k[2] == R.PUBLISHED_SYNC}
    assert sorted((k[0], k[1]) for k in cells) == [("corr1", "adamw"), ("corr1", "muon"), ("corr4", "adamw"),
                                                   ("corr4", "muon")]
    keys = {run_key(full_config(tc, x)) for v in cells.values() for x in v}
    assert len(keys) == 6 and keys <= {k for _, _, k in planned()}
    assert {(x["optimizer"], x["momentum"], x["mode"] if "mode" in x else "sync") for v in cells.values()
            for x in v} == {("nadam", 0.99, "sync"), ("muon", 0.99, "sync")}

    class Ctx:
        profile = get_profile("micro")
        noise_for = staticmethod(lambda *a, **k: NO_NOISE)
    s = C.Spec(tau_optimizers=(), corrector_optimizers=("adamw",), corrector_taus=(1,), correctors=(),
               attribution_optimizer="")
    sync, plain = [1.00, 1.01, 1.02], [1.10, 1.12, 1.11]
    cases = {"holds": ([1.05, 1.06, 1.05], [1.07, 1.085, 1.072]),       # own gap ~0.02 < plain's ~0.10
             "does not hold": ([1.00, 1.01, 1.02], [1.20, 1.23, 1.21])}   # own gap ~0.2 > plain's
    for want, (pub_sync, pub) in cases.items():
        res = {("corr1", "adamw"): {"sync": sync, C.PLAIN: plain, R.PUBLISHED: pub, R.PUBLISHED_SYNC: pub_sync}}
        orig = C.spec
        C.spec = lambda _p: s
        try:
            verdicts, shares = C.judge(Ctx(), res)
        finally:
            C.spec = orig
        assert verdicts[C.own_gap_line(1, "adamw")].status == want, verdicts[C.own_gap_line(1, "adamw")]
        assert (1, "adamw", R.PUBLISHED_SYNC) not in shares       # a baseline, not a corrector


def test_the_front_page_shows_a_figures_readings(tmp_path):
    from paper_figs.figures.common import FigureOutput
    from paper_figs.report.markdown import figure_paragraph
    o = FigureOutput("correctors", "T", highlights=["Model vs measured shares: Spearman 0.85 over 18 cells."])
    text = "\n".join(figure_paragraph(o, {"correctors": None}, tmp_path))
    assert "- Model vs measured shares: Spearman 0.85 over 18 cells." in text
    assert "How to read them" not in "\n".join(figure_paragraph(FigureOutput("x", "T"), {"x": None}, tmp_path))

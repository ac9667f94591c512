"""The hand-written statistics of the verdict protocol (paper_figs.statistics.t_tests) against
independent references, property-based over random samples (issue 47 item 5), as lmo's optimizers
are checked against torch.optim:

- Holm's step-down against statsmodels' ``multipletests(method="holm")`` and against the closed
  testing procedure it is a shortcut of (every intersection hypothesis containing H_i rejected by
  Bonferroni), enumerated by brute force;
- the Welch-Satterthwaite degrees of freedom and Welch's 95 % interval of two independent cells
  against ``scipy.stats.ttest_ind(equal_var=False)`` (its ``df`` and ``confidence_interval``);
- TOST (``equivalence``) against two one-sided scipy t tests and statsmodels' ``ttost_ind`` /
  ``ttost_paired``; non-inferiority against scipy's one-sided one-sample test.

Bartlett's test against scipy and the one-sample / Welch p-values are in test_protocol.py. Each check
is a function of the module's current attributes, so that the planted-error tests at the end can
show it fails when the statistic is wrong."""
from __future__ import annotations

import gc
import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_ind, ttost_paired

from paper_figs.statistics import t_tests
from paper_figs.statistics.t_tests import Component, TStat

ALPHA = 0.05
spread = lambda v: np.std(v) > 1e-3  # noqa: E731
sample = lambda lo, hi: st.lists(st.floats(-1, 1), min_size=lo, max_size=hi).filter(spread)  # noqa: E731
# p-values spread over several decades, with ties and exact boundary values sometimes
pvals = st.lists(st.one_of(st.floats(0, 1), st.floats(0, 0.02), st.sampled_from([0.0, 0.01, 0.025, 0.05, 1.0])),
                 min_size=1, max_size=15)


# ---- Holm ----------------------------------------------------------------------------------

def closed_testing_holm(ps, alpha=ALPHA) -> list[bool]:
    """H_i rejected iff every intersection of hypotheses containing i is rejected by Bonferroni
    (min_{j in S} p_j <= alpha / |S|): the closed testing procedure Holm is the shortcut of."""
    k = len(ps)
    out = []
    for i in range(k):
        others = [j for j in range(k) if j != i]
        out.append(all(min(ps[j] for j in (i, *sub)) <= alpha / (len(sub) + 1)
                       for r in range(k) for sub in itertools.combinations(others, r)))
    return out


def statsmodels_holm(ps) -> list[bool]:
    """statsmodels' Holm decisions (its multipletests runs gc.collect() on every call, 0.2 s in a test
    session's heap: skipped for the call)."""
    collect, gc.collect = gc.collect, lambda *a: 0
    try:
        return multipletests(np.asarray(ps, float), alpha=ALPHA, method="holm")[0].tolist()
    finally:
        gc.collect = collect


def holm_agrees(ps, closed: bool = True) -> bool:
    """Holm's decisions equal statsmodels' and (``closed``: up to 8 hypotheses, 2^7 subsets each)
    those of closed testing."""
    got = t_tests.holm(list(ps), ALPHA)
    ref = statsmodels_holm(ps)
    return got == ref and (not closed or len(ps) > 8 or got == closed_testing_holm(list(ps)))


def _off_boundary(ps) -> bool:
    """No p within float rounding of a Holm level alpha / j (statsmodels compares alpha / j computed
    as an array; a p placed exactly there may round either way)."""
    return all(abs(p - ALPHA / j) > 1e-12 for p in ps for j in range(1, len(ps) + 1))


@given(pvals.filter(_off_boundary))
@settings(max_examples=200, deadline=None)
def test_holm_matches_statsmodels_and_closed_testing(ps):
    assert holm_agrees(ps)


def test_holm_at_its_exact_levels_rejects():
    """p exactly at the level Holm asks (alpha / (k - i)) is rejected (<=), as statsmodels does."""
    ps = [ALPHA / 3, ALPHA / 2, ALPHA]
    assert t_tests.holm(ps, ALPHA) == [True, True, True] == closed_testing_holm(ps)


# ---- Welch-Satterthwaite and Welch's interval -------------------------------------------------

def welch(a, b) -> TStat:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return TStat.of(float(a.mean() - b.mean()), [Component(a.var(ddof=1) / len(a), len(a) - 1),
                                                 Component(b.var(ddof=1) / len(b), len(b) - 1)])


def welch_agrees(a, b) -> bool:
    s = welch(a, b)
    ref = stats.ttest_ind(a, b, equal_var=False)
    ci = ref.confidence_interval(0.95)
    lo, hi = s.interval(0.95)
    return (math.isclose(s.dof, ref.df, rel_tol=1e-9)
            and math.isclose(lo, ci.low, rel_tol=1e-9, abs_tol=1e-12)
            and math.isclose(hi, ci.high, rel_tol=1e-9, abs_tol=1e-12))


@given(sample(2, 8), sample(2, 8), st.floats(0.05, 20))
@settings(max_examples=200, deadline=None)
def test_welch_dof_and_interval_match_scipy(a, b, scale):
    """Two cells with their own SDs (the scale apart: very unequal spreads included)."""
    assert welch_agrees(a, [scale * x for x in b])


@given(sample(2, 6), sample(2, 6), sample(2, 6))
@settings(max_examples=100, deadline=None)
def test_satterthwaite_of_three_components_is_the_formula(a, b, c):
    """Three independent cells: nu = (sum V)^2 / sum (V^2 / nu_k), computed here directly."""
    vs = [(np.var(x, ddof=1) / len(x), len(x) - 1) for x in (a, b, c)]
    var, nu = t_tests.satterthwaite([Component(v, d) for v, d in vs])
    assert math.isclose(var, sum(v for v, _ in vs), rel_tol=1e-12)
    assert math.isclose(nu, sum(v for v, _ in vs) ** 2 / sum(v * v / d for v, d in vs), rel_tol=1e-9)


# ---- TOST and non-inferiority ------------------------------------------------------------------

def one_sample(xs) -> TStat:
    xs = np.asarray(xs, float)
    return TStat.of(float(xs.mean()), [Component(xs.var(ddof=1) / len(xs), len(xs) - 1)])


def tost_agrees(a, b, m) -> bool:
    """Welch TOST of |mu_a - mu_b| < m: p_hold is the larger of scipy's two one-sided p's (and
    statsmodels' ttost_ind), p_fail the smaller p of mu_a - mu_b beyond one margin."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    p_hold, p_fail = t_tests.equivalence(welch(a, b), m)
    above_low = stats.ttest_ind(a + m, b, equal_var=False, alternative="greater").pvalue   # theta > -m
    below_up = stats.ttest_ind(a - m, b, equal_var=False, alternative="less").pvalue      # theta < m
    beyond_up = stats.ttest_ind(a - m, b, equal_var=False, alternative="greater").pvalue  # theta > m
    beyond_low = stats.ttest_ind(a + m, b, equal_var=False, alternative="less").pvalue    # theta < -m
    sm = ttost_ind(a, b, -m, m, usevar="unequal")[0]
    close = lambda x, y: math.isclose(x, y, rel_tol=1e-7, abs_tol=1e-12)  # noqa: E731
    return (close(p_hold, max(above_low, below_up)) and close(p_hold, sm)
            and close(p_fail, min(beyond_up, beyond_low)))


@given(sample(2, 8), sample(2, 8), st.floats(0.01, 1.0))
@settings(max_examples=100, deadline=None)
def test_tost_of_two_cells_matches_scipy_and_statsmodels(a, b, m):
    assert tost_agrees(a, b, m)


@given(sample(3, 8), st.floats(0.01, 1.0))
@settings(max_examples=100, deadline=None)
def test_tost_and_noninferiority_of_paired_differences_match(d, m):
    """One cell of paired differences (the protocol's unit): TOST against statsmodels' paired
    TOST and scipy's one-sample tests; non-inferiority (theta < m) against scipy's one-sided test."""
    d = np.asarray(d, float)
    s = one_sample(d)
    p_hold, _ = t_tests.equivalence(s, m)
    assert math.isclose(p_hold, ttost_paired(d, np.zeros_like(d), -m, m)[0], rel_tol=1e-7, abs_tol=1e-12)
    ni_hold, ni_fail = t_tests.noninferiority(s, m)
    assert math.isclose(ni_hold, stats.ttest_1samp(d, m, alternative="less").pvalue, rel_tol=1e-7, abs_tol=1e-12)
    assert math.isclose(ni_fail, stats.ttest_1samp(d, m, alternative="greater").pvalue, rel_tol=1e-7,
                        abs_tol=1e-12)


# ---- the checks fail when the statistic is wrong ------------------------------------------------

def _cases(n=300, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield rng.normal(0, 1, rng.integers(2, 8)), rng.normal(0, rng.uniform(0.1, 10), rng.integers(2, 8))


def test_a_planted_wrong_holm_is_caught(monkeypatch):
    """Hochberg's step-up (valid only under independence) and Bonferroni's single step, planted in
    Holm's place: both differ from the references on some random p-vectors."""
    def hochberg(ps, alpha=0.05):
        k, order = len(ps), sorted(range(len(ps)), key=lambda j: ps[j])
        last = max((i for i, j in enumerate(order) if ps[j] <= alpha / (k - i)), default=-1)
        return [order.index(j) <= last for j in range(k)]
    rng = np.random.default_rng(1)
    vectors = [list(rng.uniform(0, 0.06, rng.integers(2, 9))) for _ in range(200)]
    for wrong in (hochberg, lambda ps, alpha=0.05: [p <= alpha / len(ps) for p in ps]):
        monkeypatch.setattr(t_tests, "holm", wrong)
        assert not all(holm_agrees(ps, closed=False) for ps in vectors)
        assert not all(t_tests.holm(ps) == closed_testing_holm(ps) for ps in vectors)


def test_a_planted_wrong_welch_dof_is_caught(monkeypatch):
    """The pooled-variance dof (n1 + n2 - 2) in place of Welch-Satterthwaite's."""
    real = t_tests.satterthwaite

    def pooled_dof(components):
        var, _ = real(components)
        return var, sum(c.dof for c in components)
    monkeypatch.setattr(t_tests, "satterthwaite", pooled_dof)
    assert not all(welch_agrees(a, b) for a, b in _cases())


def test_a_planted_wrong_tost_is_caught(monkeypatch):
    """'Within 2 SE of zero' read as equivalence: the smaller one-sided p instead of the larger."""
    monkeypatch.setattr(t_tests, "equivalence",
                        lambda s, m: (min(s.p_below(m), s.p_above(-m)), min(s.p_above(m), s.p_below(-m))))
    assert not all(tost_agrees(a, b, 0.5) for a, b in _cases())

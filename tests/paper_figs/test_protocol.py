"""The verdict protocol's arithmetic (paper_figs.statistics.t_tests) against scipy's own tests and
independent formulas, and the protocol's constants against the paper's numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from paper_figs.statistics import paper_numbers as pn
from paper_figs.statistics import protocol
from paper_figs.figures import CATALOG
from paper_figs.statistics.t_tests import (FAILS, HOLDS, INCONCLUSIVE, Component, TStat, at_least, bartlett_homogeneous, decide,
                                equivalence, every, holm, line_p, most, negated, noninferiority, satterthwaite,
                                superiority)


def one_sample(xs) -> TStat:
    xs = np.asarray(xs, float)
    return TStat.of(xs.mean(), [Component(xs.var(ddof=1) / len(xs), len(xs) - 1)])


@given(st.lists(st.floats(-1, 1), min_size=3, max_size=8).filter(lambda v: np.std(v) > 1e-3))
@settings(max_examples=60, deadline=None)
def test_one_sample_t_matches_scipy(xs):
    s = one_sample(xs)
    ref = stats.ttest_1samp(xs, 0.0)
    assert math.isclose(line_p(superiority(s)), ref.pvalue, rel_tol=1e-9, abs_tol=1e-12)
    lo, hi = s.interval()
    ci = ref.confidence_interval(0.95)
    assert math.isclose(lo, ci.low, abs_tol=1e-12) and math.isclose(hi, ci.high, abs_tol=1e-12)


@given(st.lists(st.floats(-1, 1), min_size=3, max_size=6).filter(lambda v: np.std(v) > 1e-3),
       st.lists(st.floats(-1, 1), min_size=3, max_size=6).filter(lambda v: np.std(v) > 1e-3))
@settings(max_examples=60, deadline=None)
def test_two_independent_cells_give_welchs_test(a, b):
    a, b = np.asarray(a), np.asarray(b)
    s = TStat.of(a.mean() - b.mean(), [Component(a.var(ddof=1) / len(a), len(a) - 1),
                                       Component(b.var(ddof=1) / len(b), len(b) - 1)])
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert math.isclose(line_p(superiority(s)), ref.pvalue, rel_tol=1e-7, abs_tol=1e-12)


def test_components_of_one_pool_are_one_estimate():
    """Two cells borrowing one pooled SD (10 dof): the difference's variance is that SD's
    (1/n1 + 1/n2) share, with the pool's 10 dof, not Welch's larger count."""
    sd, dof = 0.02, 10
    var, nu = satterthwaite([Component(sd ** 2 / 1, dof, "pool A"), Component(sd ** 2 / 2, dof, "pool A")])
    assert math.isclose(var, sd ** 2 * 1.5) and math.isclose(nu, dof)
    _, nu2 = satterthwaite([Component(sd ** 2 / 1, dof, "A"), Component(sd ** 2 / 2, dof, "B")])
    assert nu2 > dof


def test_a_t_test_is_wider_than_two_normal_se_at_few_dof():
    """The old rule's flaw, measured: with 3 dof a 2-SE difference is not significant at 5 %."""
    s = TStat(0.02, 0.0099, 3)
    assert decide(superiority(s)) == INCONCLUSIVE
    assert decide(superiority(TStat(0.02, 0.0099, math.inf))) == HOLDS


def test_equivalence_needs_the_whole_interval_inside_the_margin():
    m = 0.01
    assert decide(equivalence(TStat(0.0, 0.002, 10), m)) == HOLDS
    assert decide(equivalence(TStat(0.0, 0.006, 10), m)) == INCONCLUSIVE   # "within 2 SE of 0" is not evidence
    assert decide(equivalence(TStat(0.03, 0.004, 10), m)) == FAILS
    assert decide(equivalence(TStat(-0.03, 0.004, 10), m)) == FAILS
    # TOST equals "the 95 % interval inside (-m, m)"
    for est in np.linspace(-0.02, 0.02, 41):
        s = TStat(float(est), 0.003, 7)
        lo, hi = s.interval()
        assert (decide(equivalence(s, m)) == HOLDS) == (-m < lo and hi < m)


def test_noninferiority_is_one_sided():
    assert decide(noninferiority(TStat(-0.5, 0.01, 5), 0.01)) == HOLDS   # a shrinking gap has not grown
    assert decide(noninferiority(TStat(0.05, 0.01, 5), 0.01)) == FAILS


def test_holm_against_its_adjusted_p_values():
    """Rejected exactly when the Holm-adjusted p-value max_{j<=i} min(1, (k - j + 1) p_(j)) <= alpha."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        k = int(rng.integers(1, 16))
        ps = list(rng.uniform(0, 0.08, k) ** rng.uniform(0.5, 2))
        order = np.argsort(ps)
        adj = np.maximum.accumulate([min(1.0, (k - i) * ps[j]) for i, j in enumerate(order)])
        want = [False] * k
        for a, j in zip(adj, order):
            want[j] = bool(a <= 0.05)
        assert holm(ps) == want


def test_at_least_k_of_n_controls_its_error_under_the_least_favourable_configuration():
    """k - 1 parts hold strongly, the rest sit on the boundary (p_hold uniform): declaring 'at
    least k hold' is wrong, and must happen at most alpha / 2 of the time."""
    rng = np.random.default_rng(1)
    n, k, reps, alpha = 9, 5, 4000, 0.05
    wrong = 0
    for _ in range(reps):
        ph = [1e-9] * (k - 1) + list(rng.uniform(size=n - k + 1))
        wrong += decide(at_least(k, [(p, 1 - p) for p in ph]), alpha) == HOLDS
    rate = wrong / reps
    assert rate <= alpha / 2 + 3 * math.sqrt(alpha / 2 / reps)


def test_composites():
    strong, weak, against = (1e-6, 1.0), (0.3, 0.7), (1.0, 1e-6)
    assert decide(every([strong, strong])) == HOLDS
    assert decide(every([strong, weak])) == INCONCLUSIVE
    assert decide(every([strong, against])) == FAILS
    assert decide(most([strong, strong, weak])) == HOLDS
    assert decide(most([strong, against, against])) == FAILS
    assert negated(strong) == against
    with pytest.raises(ValueError):
        at_least(4, [strong] * 3)


@given(st.lists(st.lists(st.floats(-1, 1), min_size=2, max_size=6).filter(lambda v: np.std(v) > 1e-3),
                min_size=2, max_size=6))
@settings(max_examples=60, deadline=None)
def test_bartlett_matches_scipy(groups):
    from paper_figs.statistics.t_tests import bartlett_p
    assert math.isclose(bartlett_p(groups), stats.bartlett(*groups).pvalue, rel_tol=1e-7, abs_tol=1e-12)


@given(st.floats(-8, 8), st.sampled_from([1, 2, 3, 5.5, 30, math.inf]))
def test_t_tail_and_quantile_match_scipy(x, dof):
    from paper_figs.statistics.t_tests import t_quantile, t_sf
    ref = stats.norm if math.isinf(dof) else stats.t(dof)
    assert math.isclose(t_sf(x, dof), ref.sf(x), rel_tol=1e-8, abs_tol=1e-14)
    q = float(stats.norm.cdf(x / 4))
    assert math.isclose(t_quantile(q, dof), ref.ppf(q), rel_tol=1e-8, abs_tol=1e-10)


def test_bartlett_homogeneity():
    rng = np.random.default_rng(2)
    same = [list(rng.normal(0, 1, 4)) for _ in range(5)]
    assert bartlett_homogeneous(same)
    assert not bartlett_homogeneous([list(rng.normal(0, 1, 6)), list(rng.normal(0, 30, 6))])
    assert bartlett_homogeneous([[1.0, 2.0]])
    assert not bartlett_homogeneous([[1.0, 1.0], [1.0, 2.0]])   # undefined: conservative


def test_margins_come_from_the_papers_numbers():
    assert math.isclose(protocol.M_BENIGN, 0.03 / 2.896)
    assert math.isclose(protocol.M_SMALLEST, (1.911 - 1.906) / 1.906)
    assert pn.MOST_WITHIN.value == 0.03


def test_the_family_is_one_line_per_claim_of_figures_that_exist():
    ids = [c.id for c in protocol.FAMILY]
    assert len(set(ids)) == len(ids) and 12 <= len(ids) <= 15
    assert all(c.figure in CATALOG for c in protocol.FAMILY)
    assert len({c.paper for c in protocol.FAMILY}) == len(ids)

"""The one power computation (paper_figs.statistics.power) against a simulation of the t test
it describes: own SDs (n - 1 dof) and a borrowed pool's SD (the pool's dof), and its seed count
against a brute-force search."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hypothesis import given, settings, strategies as st

from paper_figs.statistics.power import dof_at, leaf_power, seeds_to_clear
from paper_figs.statistics.t_tests import Component, satterthwaite
from paper_figs.statistics.seed_stats import seeds_to_resolve

REPS = 40000


def _band(p: float) -> float:
    return 4 * math.sqrt(max(p * (1 - p), 1e-4) / REPS)


@pytest.mark.parametrize("n,delta,sd", [(4, 1.0, 1.0), (3, 0.5, 0.4), (8, 0.2, 0.5)])
def test_power_with_own_sds_matches_a_simulated_paired_t_test(n, delta, sd):
    rng = np.random.default_rng(n)
    x = rng.normal(delta, sd, size=(REPS, n))
    t = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(n))
    sim = float(np.mean(t > stats.t.ppf(0.975, n - 1)))
    got = leaf_power(delta, sd / math.sqrt(n), n, n, n - 1, 0.05)
    assert abs(got - sim) <= _band(sim), (got, sim)


def test_power_with_a_borrowed_sd_uses_the_pools_dof():
    """One seed, the SD borrowed from a pool with 40 dof: t = x / s_pool."""
    rng = np.random.default_rng(1)
    delta, sd, dof = 0.3, 0.1, 40
    x = rng.normal(delta, sd, size=REPS)
    s = sd * np.sqrt(rng.chisquare(dof, size=REPS) / dof)
    sim = float(np.mean(x / s > stats.t.ppf(0.975, dof)))
    got = leaf_power(delta, sd, 1, 1, dof, 0.05)
    assert abs(got - sim) <= _band(sim), (got, sim)
    # the old rule's dof = max(2, n - 1) = 2 would put it far lower: the bug the shared code removes
    assert leaf_power(delta, sd, 1, 1, 2, 0.05) < got - 0.2


def test_dof_follow_the_protocol():
    assert dof_at(4, 4, 3.0) == 3.0            # today: the estimate's own dof
    assert dof_at(1, 1, 40.0) == 40.0          # a single seed borrows
    assert dof_at(2, 1, 40.0) == 40.0          # two seeds still borrow
    assert dof_at(3, 1, 40.0) == 2             # from three seeds on a cell has its own SD
    assert dof_at(7, 4, 3.0) == 6.0            # one cell with its own SD: n - 1


@given(s1=st.floats(0.001, 1.0), s2=st.floats(0.001, 1.0), n_now=st.integers(3, 8), n=st.integers(3, 40))
@settings(max_examples=60, deadline=None)
def test_welch_dof_of_two_own_cells_scales_as_the_protocol_would_compute_it(s1, s2, n_now, n):
    """A difference of two cells with own SDs, n seeds each: Welch-Satterthwaite's dof at n (the
    protocol's satterthwaite, the spreads kept) is dof_at(n) from today's. The old rule (n - 1,
    the least Welch allows) under-counted it and made C1's power fall from 4 to 5 seeds."""
    def welch(m):
        return satterthwaite([Component(s1 ** 2 / m, m - 1), Component(s2 ** 2 / m, m - 1)])[1]
    assert dof_at(n, n_now, welch(n_now)) == pytest.approx(welch(n), rel=1e-9)


@pytest.mark.parametrize("delta,se,n,dof", [(0.01, 0.01, 4, 3.0), (0.004, 0.01, 1, 30.0), (0.02, 0.01, 2, 12.0)])
def test_seed_count_is_the_brute_force_smallest(delta, se, n, dof):
    need = seeds_to_clear(delta, se, n, dof)
    def clears(m):
        return abs(delta) / (se * math.sqrt(n / m)) >= stats.t.ppf(0.975, dof_at(m, n, dof))
    assert need is not None and clears(need) and all(not clears(m) for m in range(n, need))
    assert f"about {max(need, n + 1)} seeds" in seeds_to_resolve(delta, se, n, dof)

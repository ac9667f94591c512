"""The plan's spending across looks (docs/plan.md §3, paper_figs.statistics.sequential): p* is a
valid p-value under independent and under identical looks, and the family decision uses it."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, strategies as st

from paper_figs.records.plan import BATCHES
from paper_figs.statistics.sequential import SPENDING, sequential_p


def test_the_spending_covers_every_look_of_the_plan_and_sums_to_one():
    assert len(SPENDING) == len(BATCHES) + 1
    assert sum(SPENDING) == pytest.approx(1.0) and all(f > 0 for f in SPENDING)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=len(SPENDING)))
def test_p_star_is_the_smallest_scaled_look_and_never_below_any_p(ps):
    p, j = sequential_p(ps)
    assert p == min(min(1.0, q / f) for q, f in zip(ps, SPENDING))
    assert p >= min(ps) and p == min(1.0, ps[j] / SPENDING[j])


@pytest.mark.parametrize("dependence", ["independent", "identical"])
def test_p_star_holds_its_level_under_the_null(dependence):
    rng, reps, alpha = random.Random(5), 40000, 0.05
    hits = 0
    for _ in range(reps):
        u = rng.random()
        ps = [rng.random() if dependence == "independent" else u for _ in SPENDING]
        hits += sequential_p(ps)[0] <= alpha
    rate = hits / reps
    assert rate <= alpha + 3 * (alpha * (1 - alpha) / reps) ** 0.5, rate


def test_too_many_looks_are_refused():
    with pytest.raises(ValueError, match="looks"):
        sequential_p([0.5] * (len(SPENDING) + 1))
    with pytest.raises(ValueError):
        sequential_p([])


def test_the_family_decision_pays_for_its_looks():
    """The other 14 claims absent (p = 1), C1 is first in Holm's order and needs p* <= 0.05 / 15:
    p = 0.0005 at look 0 decides it (0.0005 / 0.25 = 0.002), p = 0.002 does not (0.008), and a
    later look at p = 0.0004 does (0.0004 / 0.15 = 0.0027), the earlier look's 0.002 notwithstanding."""
    from paper_figs.report.confirmatory import decide
    from paper_figs.statistics.protocol import FAMILY
    from paper_figs.statistics.t_tests import HOLDS, INCONCLUSIVE
    from paper_figs.statistics.verdicts import Evidence, Verdict

    class T:     # the part of a test the family reads
        def __init__(self, p):
            self.p_eff = (p / 2, 1.0)

        def effect(self):
            return "x"

    def fam(p):
        return {"C1": Verdict(HOLDS, "planted", T(p), "C1")}
    assert decide(fam(0.0005))["C1"].status == HOLDS
    assert decide(fam(0.002))["C1"].status == INCONCLUSIVE
    got = decide(fam(0.0004), earlier=[fam(0.002)])["C1"]
    assert got.status == HOLDS and "look 1" in got.reason
    assert {c.id for c in FAMILY} >= {"C1"} and Evidence  # the family's ids are what the engine keys on

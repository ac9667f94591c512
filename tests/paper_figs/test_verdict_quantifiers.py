"""The paper's quantifiers: 'for most optimizers' (most), 'and' (both), 'not' (negate).

Each is checked against an independent definition: ``most`` against a brute force over
every way the unresolved parts could turn out, ``both`` / ``negate`` against Kleene's
three-valued logic (does not hold < inconclusive < holds).
"""
from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from paper_figs.statistics.verdicts import FAILS, HOLDS, INCONCLUSIVE, Verdict, both, combine, most, negate

STATUS = st.sampled_from([HOLDS, FAILS, INCONCLUSIVE])
ORDER = {FAILS: 0, INCONCLUSIVE: 1, HOLDS: 2}


def _v(*statuses):
    return [Verdict(s, "") for s in statuses]


def test_most_is_decided_only_when_every_completion_agrees():
    """Every table of up to 6 parts (ties included): holds iff more than half hold already;
    fails iff no completion of the unresolved parts makes most hold."""
    for n in range(1, 7):
        for parts in itertools.product([HOLDS, FAILS, INCONCLUSIVE], repeat=n):
            _check_most(list(parts))


def _check_most(parts):
    n = len(parts)
    unresolved = [i for i, s in enumerate(parts) if s == INCONCLUSIVE]
    outcomes = set()
    for fill in itertools.product([HOLDS, FAILS], repeat=len(unresolved)):
        done = list(parts)
        for i, s in zip(unresolved, fill):
            done[i] = s
        outcomes.add(2 * done.count(HOLDS) > n)
    v = most(_v(*parts), "claim")
    if 2 * parts.count(HOLDS) > n:
        assert v.status == HOLDS
    elif outcomes == {False}:
        assert v.status == FAILS
    else:
        assert outcomes == {True, False} and v.status == INCONCLUSIVE


@given(st.lists(STATUS, min_size=1, max_size=9))
def test_every_is_never_weaker_than_most(parts):
    """'for every part' (combine) holding implies 'for most parts' holding."""
    if combine(_v(*parts), "c").status == HOLDS:
        assert most(_v(*parts), "c").status == HOLDS


def test_the_two_readings_differ_on_a_mixed_table():
    """Five of nine hold, three fail, one unresolved: 'most' holds where 'every' cannot (every part
    is the intersection-union test: a part resolved against it refutes it, docs/protocol.md §3)."""
    parts = _v(*[HOLDS] * 5, *[FAILS] * 3, INCONCLUSIVE)
    assert most(parts, "c").status == HOLDS
    assert combine(parts, "c").status == FAILS
    assert most(_v(*[HOLDS] * 4, *[FAILS] * 5), "c").status == FAILS
    assert most([], "c").status == INCONCLUSIVE


@given(STATUS, STATUS)
def test_both_is_kleene_and(a, b):
    want = min(a, b, key=ORDER.get)
    assert both(Verdict(a, "x"), Verdict(b, "y")).status == want


@given(STATUS)
def test_negate_is_kleene_not(a):
    want = {HOLDS: FAILS, FAILS: HOLDS, INCONCLUSIVE: INCONCLUSIVE}[a]
    assert negate(Verdict(a, "r"), "w").status == want
    assert negate(negate(Verdict(a, "r"), "w"), "w").status == a

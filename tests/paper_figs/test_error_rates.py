"""The verdict engine's family-wise error rate, measured by simulation on the real design
(paper_figs.error_rates; docs/protocol.md §10), the way tests/verify checks the bounds' coverage:
at most ALPHA within its Monte Carlo error, and a planted anti-conservative engine is caught."""
from __future__ import annotations

import math

import numpy as np
import pytest

from paper_figs import error_rates as er
from paper_figs.statistics import t_tests
from paper_figs.records.kept import KeptStore
from paper_figs.statistics.protocol import ALPHA, FAMILY


@pytest.fixture(scope="module")
def design():
    return er.design("full")


def _fwer(design, reps: int, seed: int) -> float:
    return er.simulate(design, "null", reps, seed)["fwer"]


def test_the_design_is_the_kept_records_and_the_null_has_no_difference(design):
    store = KeptStore()
    assert set(design.runs) == set(store.keys())          # every kept record, one per training
    null = design.mu["null"]
    for k, (s, _) in design.runs.items():   # a delayed run's null mean is its setting's sync mean
        sync = {f: v for f, v in s.items() if f not in er.VARIANT_FIELDS}
        twin = design.keys.get(er._sig(sync))
        if twin in design.runs:
            assert null[k] == pytest.approx(null[twin])
    assert all(math.isfinite(v) and v > 0 for v in design.sd.values())


def test_family_wise_false_positive_rate_is_at_most_alpha(design):
    reps = 150
    rate = _fwer(design, reps, seed=11)
    assert rate <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps), rate


def test_a_planted_anti_conservative_engine_is_caught(design, monkeypatch):
    """Every line decided at 60 % instead of 5 % (the kind of error a normal critical value at
    2-3 dof and no multiplicity control make, exaggerated): the rate leaves the 5 % band."""
    real = t_tests.decide
    monkeypatch.setattr(t_tests, "decide", lambda p, alpha=0.05: real(p, 0.6))
    from paper_figs.report import confirmatory
    monkeypatch.setattr(confirmatory, "holm", lambda ps, alpha=0.05: [p <= 0.6 for p in ps])
    reps = 40
    assert _fwer(design, reps, seed=12) > ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def test_vanishing_noise_recovers_the_measured_decisions(design):
    """At s x 1e-4 the engine decides every claim whose measured effects lie off its boundary."""
    st = er.replicate(design, "measured", np.random.default_rng(0), scale=1e-4)
    assert set(st) == {c.id for c in FAMILY}
    assert sum(s != t_tests.INCONCLUSIVE for s in st.values()) >= 12


@pytest.mark.slow
def test_family_wise_false_positive_rate_is_at_most_alpha_tightly(design):
    reps = 2000
    rate = _fwer(design, reps, seed=13)
    assert rate <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps), rate

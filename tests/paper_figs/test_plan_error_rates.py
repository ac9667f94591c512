"""The sequential plan's family-wise error rate including its interim looks (docs/plan.md §3,
issue 47 item 6), measured by simulation: one draw per replicate for every run of every batch
(the batches not yet kept simulated from stand-in records of their cells), each look judged on the
runs through its batch and decided as the report decides it (Holm on p* = min_j p_j / f_j).
Reproduce the measured rates with ``python -m paper_figs.error_rates --plan --reps 300 --null NULL``."""
from __future__ import annotations

import math

import pytest

from paper_figs import error_rates as er
from paper_figs.plan_state import batch_runs
from paper_figs.records.plan import BATCHES
from paper_figs.records.profiles import get_profile
from paper_figs.statistics.protocol import ALPHA


@pytest.fixture(scope="module")
def looks():
    return er.plan_looks()


def test_every_look_holds_the_earlier_looks_runs_and_every_batch_is_simulated(looks):
    sigs = [er._sigs(q) for q in looks.profiles]
    assert len(looks.profiles) == len(BATCHES) + 1
    assert all(a < b for a, b in zip(sigs, sigs[1:]))            # each look: the earlier data and more
    full = get_profile("full")
    for b in BATCHES:                                             # every batch run: kept or a stand-in
        assert set(batch_runs(full, b.id)) <= set(looks.design.runs)
    assert looks.design.synthetic and all(looks.design.runs[k][1].get("stand_in") for k in looks.design.synthetic)


def _errors(looks, null: str, reps: int, seed: int) -> int:
    return round(er.simulate_plan(looks, reps, seed, null)["fwer"] * reps)


@pytest.mark.parametrize("null", ["equal", "sd_grows_with_gap"])
def test_the_plans_family_wise_rate_over_its_looks_is_at_most_alpha(looks, null):
    """10 replicates of all six looks: the count with an error at any look must be one a rate of 5 %
    makes likely (P(X >= 3 | 10, 0.05) = 0.012)."""
    assert _errors(looks, null, 10, seed=31) <= 2


def test_a_plan_that_peeks_without_paying_is_caught(looks, monkeypatch):
    """Every look at the full level and every line at 60 % (no spending, no Holm): errors at some look
    in nearly every replicate."""
    from paper_figs.report import confirmatory
    monkeypatch.setattr(confirmatory, "holm", lambda ps, alpha=0.05: [p <= 0.6 for p in ps])
    r = er.simulate_plan(looks, 5, 32, "equal", spending=(1.0,) * len(looks.profiles))
    assert r["fwer"] >= 0.6, r


@pytest.mark.slow
@pytest.mark.parametrize("null", ["equal", "sd_grows_with_gap", "at_margin"])
def test_the_plans_family_wise_rate_over_its_looks_tightly(looks, null):
    reps = 200
    rate = _errors(looks, null, reps, seed=33) / reps
    assert rate <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / reps), rate


def test_the_looks_judged_once_per_figure_change_are_the_engines_family(looks):
    """The simulation judges a figure again only at a look that changes its runs: the same statuses
    as confirmatory.judge_family at every look, on a replicate with decisions in it (the measured
    means, noise x 0.3)."""
    import numpy as np
    fast = er.sequential_replicate(looks, np.random.default_rng(3), scale=0.3, truth="measured")
    slow = er.sequential_replicate(looks, np.random.default_rng(3), scale=0.3, fast=False, truth="measured")
    assert fast == slow
    assert any(s != "inconclusive" for st in fast for s in st.values())

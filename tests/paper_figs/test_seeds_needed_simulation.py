"""seeds_needed's power and the simulation agree (issue 47 item 5): for each claim, the power
``paper_figs.seeds_needed`` predicts at its recommended seeds per cell against the rate at which the
engine, on data simulated at that many seeds (``paper_figs.error_rates``: the cells' measured means,
the pools' SDs; the new runs from stand-in records), decides the claim's target at the same level.
Tolerance: 3 binomial SEs at the predicted power. Reproduce the table with
``python -m paper_figs.seeds_needed --check 200 --max-n 20`` (``--max-n 200`` for every claim: hours)."""
from __future__ import annotations

import pytest

from paper_figs import error_rates as er
from paper_figs import seeds_needed as sn

#: known disagreements (findings, not tuned away): C4's power is planned from Adan's own 4-seed gap SD
#: (0.0145) while the simulation draws Adan's runs from Adan's pool on the tiny model (gap SD 0.0299, 5 dof,
#: Bartlett: homogeneous): at 12 seeds 0.86 predicted, about 0.57 simulated
#: C7, from look 1 on (batch 1 made its target "does not hold", through Adan's EF effect -0.051
#: [-0.077, -0.025], n = 3): planned from the line's own 3-seed spread, about 0.007 per cell, while the
#: simulation draws Adan's cells at its pool's SD (about 0.027): 6 seeds predicted 0.89, simulated 0.15
#: (20 replicates; at the older dof rule 7 seeds, 0.91 against 0.35). Batch 4's seeds tell which spread holds.
#: C10 and C12, from looks 2 and 3 on (batches 2 and 3 whole, 3 seeds per cell): 7 seeds predicted 0.92,
#: simulated 0.65 (C10); 5 seeds predicted 0.99, simulated 0.10 (C12; 20 replicates, seed 41). Not yet
#: diagnosed beyond the pattern C4 and C7 show (the count planned from the cells' own 3-seed spreads, the
#: simulation drawing at the pools' SDs); found when the batches entered, not tuned away.
DISAGREE = {"C4": "planned from Adan's own gap SD 0.0145; the simulation's pool SD is 0.0299",
            "C7": "planned from Adan's own 3-seed EF spread (~0.007); the simulation's pool SD is ~0.027",
            "C10": "predicted 0.92 at 7 seeds, simulated 0.65 (look 2 on; own 3-seed spreads vs pools, undiagnosed)",
            "C12": "predicted 0.99 at 5 seeds, simulated 0.10 (look 3 on; own 3-seed spreads vs pools, undiagnosed)"}


@pytest.fixture(scope="module")
def design():
    return er.design("full")


def _check(rs):
    out = {}
    for r in rs:
        out[r["claim"]] = abs(r["simulated"] - r["predicted"]) <= 3 * r["se"] + 1e-9
    return out


@pytest.fixture(scope="module")
def default_rows(design):
    return sn.agreement(design, claims=AGREE, reps=20, seed=41)


AGREE = tuple(c for c in ("C2", "C4", "C7", "C10", "C12") if c not in DISAGREE)


@pytest.mark.parametrize("claim", AGREE)
def test_seeds_needed_and_the_simulation_agree(default_rows, claim):
    """The plan's claims with a count under 20 seeds, but those in DISAGREE (findings: the slow
    test shows them)."""
    r = next(r for r in default_rows if r["claim"] == claim)
    assert _check([r])[claim], r


def test_a_wrong_power_is_caught(design, monkeypatch):
    """A power computed at a third of the true SE (an overstated power, planted): seeds_needed then
    recommends fewer seeds than C2 needs (C2 agrees without it), and the simulated rate at that count
    leaves the band."""
    assert "C2" in AGREE
    real = sn.power_of
    monkeypatch.setattr(sn, "power_of", lambda delta, se, n0, n, dof, level: real(delta, se / 3, n0, n, dof, level))
    r = sn.agreement(design, claims=("C2",), reps=20, seed=42)[0]
    assert not _check([r])["C2"], r


@pytest.mark.slow
def test_seeds_needed_and_the_simulation_agree_on_every_claim(design):
    """Every claim with a count up to 40 seeds per cell (C11 and C14 need about 100: hours here;
    ``python -m paper_figs.seeds_needed --check 100`` runs them). C7 was +2.7 SEs at 60 replicates
    (predicted 0.84, simulated 0.97: planned at the wider of its pools)."""
    rs = sn.agreement(design, reps=100, seed=43, max_n=40)
    bad = {c for c, ok in _check(rs).items() if not ok}
    assert bad == set(DISAGREE), "\n".join(sn.agreement_table(rs))

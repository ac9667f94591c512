"""The implication table (reading x variant) against hand-derived facts and independent numbers."""
import math

import numpy as np
import pytest
import sympy as sp

from theory.results.implications import VARIANTS, confirm_region, implication
from theory.records.registry import get
from theory.records.symbols import L, eta, mu, rho, sigma

C_ROWS = ["paper_c1_y", "paper_c2_y", "paper_c3_y", "paper_c4_y", "paper_c1_x", "paper_c2_x",
          "paper_c3_x", "paper_c4_x"]
# hand-derived: I implied, N not implied, - other quantity
EXPECTED = {  # delayed at y, delayed at x, EF worst case, EF trajectory
    "paper_c1_y": "I-IN", "paper_c2_y": "I-IN", "paper_c3_y": "I-NN", "paper_c4_y": "N-NN",
    "paper_c1_x": "-I--", "paper_c2_x": "-I--", "paper_c3_x": "-I--", "paper_c4_x": "-I--"}
CODE = {"implied": "I", "not implied": "N", "n/a (other quantity)": "-"}


@pytest.mark.parametrize("reading", C_ROWS)
def test_table_row(reading):
    got = "".join(CODE[implication(reading, v).status] for v in VARIANTS)
    assert got == EXPECTED[reading]
    for v in VARIANTS:
        imp = implication(reading, v)
        if imp.status == "not implied":
            assert imp.region and imp.point and imp.point["diff_numeric"] < 0


@pytest.mark.parametrize("reading,variant", [("paper_c2_y", "EF worst case"), ("paper_c4_y", "delayed at y"),
                                             ("paper_c3_y", "EF worst case"), ("paper_c2_y", "EF trajectory"),
                                             ("paper_c1_y", "delayed at y")])
def test_region_confirmed_by_sampling(reading, variant):
    c = confirm_region(reading, variant, n=3000, seed=1)
    assert c["outside_region"] == 0 and c["region_but_nonnegative"] == 0
    assert (c["negative"] > 0) == (implication(reading, variant).status == "not implied")


def _ev(name, L_, eta_, a, mu_, t=0, r_w=0.0):
    return get(name).evaluate(L=L_, eta=eta_, sigma=a / math.sqrt(mu_), rho=1.0, mu=mu_, t=t, r_w=r_w)


def test_c4_fails_already_for_4_lt_L_lt_8():
    """The review expected 'C4 fails at y for L > 8' (that is the sigma -> 0 edge); the exact
    region is L > 4 with a = sqrt(mu) rho sigma between L eta -+ eta sqrt(2L(L-4))."""
    assert _ev("paper_c4_y", 5.0, 1.0, 5.0, 0.5) < _ev("derived_delayed_lemma", 5.0, 1.0, 5.0, 0.5)
    grid = np.geomspace(1e-3, 1e3, 200)
    for L_ in (1.0, 3.0, 3.99):
        assert np.all(_ev("paper_c4_y", L_, 1.0, grid, 0.3) >= _ev("derived_delayed_lemma", L_, 1.0, grid, 0.3) - 1e-12)
    assert _ev("paper_c4_y", 9.0, 1.0, 1e-4, 0.5) < _ev("derived_delayed_lemma", 9.0, 1.0, 1e-4, 0.5)


def test_c2_minus_ef_worst_is_exactly_qm_am():
    a, b = sp.sqrt(mu) * rho * sigma, 2 * L * eta
    d = get("paper_c2_y").expr - get("derived_ef_lemma_worst").expr
    assert sp.simplify(d - (sp.sqrt(2 * a**2 + 2 * b**2) - (a + b))) == 0


def test_valid_flags_match_the_proofs():
    for r in C_ROWS:
        v = "delayed at y" if r.endswith("_y") else "delayed at x"
        assert get(r).valid is (implication(r, v).status == "implied"), r
        assert get(r).reading.startswith(r.split("_")[1].upper())
    assert get("paper_delayed_noise_consistent").valid is False
    assert "not a bound by itself" in get("paper_delayed_noise_consistent").reading

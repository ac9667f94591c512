"""theory.dynamics.confrontation on synthetic input: a measurement inside the predicted interval
fits, one outside fails on the right side, the alternative and the bound's linear law are
judged separately, and malformed input is refused naming what is wrong."""
import pytest

from theory.dynamics.confrontation import confront, confront_markdown

PRED = {
    "muon": {"point": {(8, 2): 6.4, (4, 1): 11.4}, "ratios": {(8, 2): (6.4, 7.2), (4, 1): (11.4, 16.2)},
             "alternative": {(8, 2): (4.0, 7.4), (4, 1): (4.0, 5.1)}},
    "adamw": {"point": {(8, 2): 3.4, (4, 1): 5.4}, "ratios": {(8, 2): (2.1, 5.7), (4, 1): (3.4, 8.5)},
              "alternative": {(8, 2): (4.0, 6.9), (4, 1): (4.0, 5.0)},
              "combined": {(8, 2): (2.1, 13.5), (4, 1): (3.4, 14.2)}},
}


def test_inside_fits_outside_fails_on_its_side():
    r = confront({"muon": {(8, 2): (8.8, 5.1, 32.0)}, "adamw": {(4, 1): (13.8, 10.6, 18.0), (8, 2): (1.2, 1.0, 1.5)}}, PRED)
    assert r["muon"][(8, 2)]["verdict"] == "fits" and r["muon"][(8, 2)]["side"] is None
    assert r["adamw"][(4, 1)]["verdict"] == "fails" and r["adamw"][(4, 1)]["side"] == "above"
    assert r["adamw"][(8, 2)]["verdict"] == "fails" and r["adamw"][(8, 2)]["side"] == "below"
    assert not r["adamw"][(4, 1)]["alternative_fits"] and r["muon"][(8, 2)]["alternative_fits"]
    assert r["muon"][(8, 2)]["linear_bound"] == 4.0 and not r["muon"][(8, 2)]["linear_bound_fits"]
    assert r["muon"][(8, 2)]["point"] == 6.4
    assert "combined" not in r["muon"][(8, 2)]
    assert r["adamw"][(4, 1)]["combined_fits"] and not r["adamw"][(8, 2)]["combined_fits"]
    assert "with the edge oscillation [3.4, 14.2]: fits" in confront_markdown(r)


def test_touching_intervals_fit_and_a_hair_apart_fail():
    assert confront({"muon": {(8, 2): (7.5, 7.2, 9.0)}}, PRED)["muon"][(8, 2)]["verdict"] == "fits"
    assert confront({"muon": {(8, 2): (7.5, 7.2001, 9.0)}}, PRED)["muon"][(8, 2)]["verdict"] == "fails"


def test_the_table_has_a_row_per_pair():
    md = confront_markdown(confront({"muon": {(8, 2): (8.8, 5.1, 32.0), (4, 1): (3.0, 2.0, 4.0)}}, PRED))
    rows = [line for line in md.splitlines() if line.startswith("| muon")]
    assert len(rows) == 2 and "fits" in rows[0] and "fails (measured below)" in rows[1]


@pytest.mark.parametrize("measured, match", [
    ({"lion": {(8, 2): (1.0, 0.5, 2.0)}}, "optimizer"),
    ({"muon": {(2, 8): (1.0, 0.5, 2.0)}}, "hi > lo"),
    ({"muon": {(8, 1): (1.0, 0.5, 2.0)}}, "pair"),
    ({"muon": {(8, 2): (3.0, 0.5, 2.0)}}, "lo <= point <= hi"),
    ({"muon": {(8, 2): (float("nan"), 0.5, 2.0)}}, "lo <= point <= hi"),
    ({"muon": {(8, 2): (1.0, 2.0)}}, "point, lo, hi"),
])
def test_malformed_input_is_refused(measured, match):
    with pytest.raises(ValueError, match=match):
        confront(measured, PRED)

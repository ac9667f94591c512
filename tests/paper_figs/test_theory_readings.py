"""The theory verdict lines of REPORT.md: one per reading of the paper's delayed bound."""
from paper_figs.statistics import paper_numbers as pn
from paper_figs.figures.theory_figs import READINGS, reading_verdicts
from paper_figs.statistics.verdicts import CANNOT_BE_A_BOUND, FAILS, HOLDS, INCONCLUSIVE, NOT_A_BOUND_ALONE, reading_verdict


def _rows(violated=()):
    names = [n for ns in READINGS.values() for n in ns]
    return [{"bound": n, "holds": n not in violated, "checks": 4, "tightness": 0.5, "confirmed": None,
             "violated": n in violated} for n in names]


def test_reading_verdict_rules():
    kw = dict(scale_invariant=True, implied=True, checks=3, violated=[])
    assert reading_verdict("C2", **kw).status == HOLDS
    assert reading_verdict("C2", **{**kw, "violated": ["paper_c2_y"]}).status == FAILS
    assert reading_verdict("C2", **{**kw, "implied": False}).status == INCONCLUSIVE
    assert reading_verdict("C4", **{**kw, "scale_invariant": False}).status == CANNOT_BE_A_BOUND
    assert reading_verdict("alone", **kw, alone=True).status == NOT_A_BOUND_ALONE


def test_verdict_lines_per_reading():
    v = reading_verdicts(_rows(violated=("paper_delayed_noise_consistent",)))
    status = {k.split("reading ")[1].split(":")[0].split(" sqrt")[0]: x.status for k, x in v.items()}
    assert status == {"C1": HOLDS, "C2": HOLDS, "C3": CANNOT_BE_A_BOUND, "C4": CANNOT_BE_A_BOUND,
                      "the noise term": NOT_A_BOUND_ALONE}
    assert all("does not hold" != x.status for x in v.values())
    assert reading_verdicts(_rows(violated=("paper_c2_x",)))[
        "the paper's delayed bound, reading C2: full delayed lemma, drift L eta (1-mu)/mu"].status == FAILS


def test_literal_parse_is_a_transcription_ambiguity_not_a_discrepancy():
    assert not any("8 L eta^2" in d for d in pn.DISCREPANCIES)
    assert any("8 L eta^2" in d and "cannot be a bound" in d for d in pn.TRANSCRIPTION_AMBIGUITIES)

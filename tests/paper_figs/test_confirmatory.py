"""The confirmatory family decided with Holm (paper_figs.report.confirmatory), and the grid-edge rule
(paper_figs.figures.best_lrs): docs/protocol.md §4 and §6."""
from __future__ import annotations

from paper_figs_fakes import StubContext

from paper_figs.report import confirmatory
from paper_figs.figures.best_lrs import Argmin, argmin, rests_on
from paper_figs.figures.common import FigureOutput
from paper_figs.statistics.protocol import FAMILY
from paper_figs.statistics.t_tests import FAILS, HOLDS, INCONCLUSIVE, holm
from paper_figs.statistics.verdicts import Evidence, Verdict


def _line(p_hold, p_fail, claim):
    return Verdict(HOLDS if p_hold <= 0.025 else FAILS if p_fail <= 0.025 else INCONCLUSIVE, "r",
                   Evidence((p_hold, p_fail), (p_hold, p_fail), 0.1, 0.0, 0.2, 4, 3.0, "x"), claim)


def test_holm_decides_the_family_and_a_missing_claim_counts_as_p_1():
    """15 claims: C1 very strong, C2 strong against, C3 significant alone (p = 0.02) but not after
    Holm; C15 not computed. Decisions follow Holm on the line p-values 2 min(p_hold, p_fail)."""
    raw = {c.id: _line(0.5, 0.5, c.id) for c in FAMILY}
    raw["C1"] = _line(1e-6, 1 - 1e-6, "C1")
    raw["C2"] = _line(1 - 1e-5, 1e-5, "C2")
    raw["C3"] = _line(0.01, 0.99, "C3")
    del raw["C15"]
    final = confirmatory.decide(raw)
    assert final["C1"].status == HOLDS and final["C2"].status == FAILS
    assert final["C3"].status == INCONCLUSIVE and "not after the plan's spending and Holm" in final["C3"].reason
    assert final["C15"].status == INCONCLUSIVE and "not computed" in final["C15"].reason
    ps = [2e-6, 2e-5, 0.02] + [1.0] * 12
    assert [final[c.id].status != INCONCLUSIVE for c in FAMILY] == holm(ps)
    assert all(v.claim == c.id for c, v in zip(FAMILY, final.values()))
    assert "1 hold, 1 do not hold, 13 inconclusive" in confirmatory.summary_line(final)


def test_a_line_of_another_figure_on_the_same_runs_shows_the_family_decision_once():
    final = confirmatory.decide({"C1": _line(1e-6, 1, "C1")})
    fig3, table1 = FigureOutput("fig3", "t"), FigureOutput("table1", "t")
    fig3.verdicts["AdamW larger"] = _line(1e-6, 1, "C1")
    table1.verdicts["AdamW larger (tiny)"] = _line(1e-6, 1, "C1")
    table1.verdicts["exploratory line"] = Verdict(HOLDS, "x")
    confirmatory.apply([fig3, table1], final)
    assert fig3.verdicts["AdamW larger"] is final["C1"]
    assert table1.verdicts["AdamW larger (tiny)"].status == HOLDS
    assert "the same test on the same runs as C1 (fig3), counted once" in table1.verdicts["AdamW larger (tiny)"].reason
    assert table1.verdicts["exploratory line"].reason == "x"


def test_the_table_names_every_claim_its_horizon_and_interval():
    from paper_figs.records.profiles import get_profile
    p = get_profile("full")
    rows = confirmatory.table(confirmatory.decide({"C1": _line(1e-6, 1, "C1")}), p)
    assert len(rows) == 2 + len(FAMILY)
    assert "| C1 |" in rows[2] and "+0.1000 [+0.0000, +0.2000] (n=4)" in rows[2] and "1500 steps, tiny" in rows[2]
    assert "1500 -> 3000 -> 6000 steps, tiny" in next(r for r in rows if r.startswith("| C10 |"))


def test_argmin_is_usable_only_interior_and_resolved():
    """StubContext's borrowed SD 0.005 (10 dof): a paired margin's half-width is 2.23 x 0.0071."""
    ctx = StubContext()
    cell = lambda *ls: {c: {"sync": [x]} for c, x in zip((0.5, 1.0, 2.0, 4.0), ls)}  # noqa: E731
    ok = argmin(ctx, cell(1.50, 1.40, 1.45, 1.50), "sync", "adamw")
    assert ok.best == 1.0 and ok.usable and "interior" in ok.text
    edge = argmin(ctx, cell(1.30, 1.40, 1.45, 1.50), "sync", "adamw")
    assert edge.edge == "lowest" and not edge.usable and edge.extension == 0.25
    close = argmin(ctx, cell(1.50, 1.40, 1.405, 1.50), "sync", "adamw")
    assert close.best == 1.0 and not close.resolved and not close.usable
    v = Verdict(HOLDS, "planted", Evidence((1e-6, 1.0), (1e-6, 1.0)))
    assert rests_on(v, [ok]) is v
    bad = rests_on(v, [ok, edge])
    assert bad.status == INCONCLUSIVE and "grid edge" in bad.reason and bad.test.p_eff == (1.0, 1.0)
    assert Argmin(1.0, 2.0, "", True, "").usable


def test_each_claim_names_the_horizon_and_model_it_is_judged_at():
    from paper_figs.records.profiles import get_profile
    p = get_profile("full")
    assert confirmatory.horizon("C2", p) == "1500 steps, tiny"        # Table 1's claims: its first size
    assert confirmatory.horizon("C10", p) == "1500 -> 3000 -> 6000 steps, tiny"
    assert confirmatory.horizon("C13", p) == "1500 steps, tiny_moe"   # Table 3's horizon
    assert confirmatory.horizon("C14", p) == "1500 -> 3000 -> 6000 steps, tiny_moe"
    assert all(confirmatory.horizon(c.id, p) for c in FAMILY)


def test_c1_at_the_longest_horizon_is_welchs_interval():
    """Issue 47 item 8: C1's row says what Figure 5's longest horizon shows; with 3 seeds or more
    the interval is Welch's (checked against scipy), with fewer it says it is not resolved."""
    import re
    from scipy import stats
    a, m = [0.012, 0.004, 0.009], [-0.01, -0.006, -0.013, -0.002]
    got = confirmatory.c1_at_longest_horizon({"adamw": [(1500, [0.1]), (6000, a)], "muon": [(1500, [0.0]), (6000, m)]})
    lo, hi = (float(x) for x in re.search(r"\[([-+.\d]+), ([-+.\d]+)\]", got).groups())
    ci = stats.ttest_ind(a, m, equal_var=False).confidence_interval(0.95)
    assert got.startswith("at 6000 steps") and abs(lo - ci.low) < 1e-4 and abs(hi - ci.high) < 1e-4
    short = confirmatory.c1_at_longest_horizon({"adamw": [(6000, a[:2])], "muon": [(6000, m)]})
    assert "not resolved" in short and "[" not in short
    assert confirmatory.c1_at_longest_horizon({"adamw": [(6000, a)]}) == ""

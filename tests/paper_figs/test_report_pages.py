"""REPORT.md as a front page (issue 51 items 1 and 5): short verdict lines, table cells that link
to where they are whole instead of '...', the summary grouped by status and claim, a page per
figure, and runs.csv from which a confirmatory effect is recomputed with the csv module alone."""
from __future__ import annotations

import csv
import re
import statistics

from paper_figs_fakes import fake_deps, profile_with

from paper_figs.figures.common import FigureOutput
from paper_figs.pipeline import run_profile
from paper_figs.report import confirmatory, verdict_lines
from paper_figs.statistics.t_tests import FAILS, HOLDS, INCONCLUSIVE
from paper_figs.statistics.verdicts import Evidence, Verdict

LONG_NAME = ("theory (delayed bound's price 2 L eta): at fixed momentum the 2BW gap grows with the peak lr (AdamW x4 "
             "vs x0.25, Muon x2 vs x0.25, Lion x4 vs x0.25 preset, every optimizer and momentum of the lr grid, one "
             "seed) and some more words so that even without its asides the name runs past the budget of a line")
LONG_REASON = "p_hold 0.00013, p_fail 1; Bartlett 3.2 on 4 dof; " * 40


def _single(status=HOLDS, claim="C1", label="D - R"):
    t = Evidence((1e-4, 1.0), (1e-4, 1.0), 0.0592, 0.0439, 0.0746, 4, 4.59, label)
    return Verdict(status, LONG_REASON, t, claim)


def test_a_front_page_line_is_short_and_says_estimate_interval_unit_n_and_status():
    for v in (_single(), _single(FAILS, ""), _single(label="relative gap")):
        line = verdict_lines.short_line(LONG_NAME, v, "figures/fig4.md#v3")
        assert len(line) <= verdict_lines.LINE_MAX, len(line)
        assert "+0.0592 [+0.0439, +0.0746]" in line and "n=4" in line and f"**{v.status}**" in line
        assert "(figures/fig4.md#v3)" in line and "p_hold" not in line and "..." not in line
        assert ("fraction of the sync loss" if v.test.label == "relative gap" else "nats/byte") in line
    parts = Verdict(HOLDS, LONG_REASON, Evidence(parts=(_single(), _single(INCONCLUSIVE))), "C5")
    assert "1 of 2 parts hold" in verdict_lines.short_line("EF recovers", parts, "x")
    short = verdict_lines.short_line("AdamW gap larger than Muon's (D - R)", _single(), "x")
    assert "AdamW gap larger than Muon's (D - R)" in short   # a name that fits keeps its asides


def test_a_table_cell_that_does_not_fit_links_to_where_it_is_whole():
    whole = "; ".join(f"Optimizer{i}: +0.0{i}17 [+0.0457, +0.0578] (n=4)" for i in range(9))
    cell = confirmatory.fit(whole, "figures/table1.md#C3")
    assert len(cell) < len(whole) and "..." not in cell
    assert cell.startswith("Optimizer0: +0.0017 [+0.0457, +0.0578] (n=4)")
    kept = cell.count("Optimizer")
    assert f"{9 - kept} more: [whole on its figure's page](figures/table1.md#C3)" in cell
    assert confirmatory.fit("short", "x") == "short"


def test_the_summary_groups_lines_by_status_and_claim():
    fig3 = FigureOutput("fig3", "Figure 3", verdicts={"C1 line": _single(), "open": _single(INCONCLUSIVE, "")})
    table1 = FigureOutput("table1", "Table 1", verdicts={"C1 again": _single(), "much larger": _single(FAILS, ""),
                                                         "other open": _single(INCONCLUSIVE, "")})
    text = "\n".join(verdict_lines.summary([fig3, table1]))
    holds, rest = text.split("### Does not hold")
    fails, open_ = rest.split("### Inconclusive")
    assert holds.count("**C1**") == 1 and "[fig3](figures/fig3.md#v1)" in holds and "[table1](figures/table1.md#v1)" in holds
    assert "[much larger](figures/table1.md#v2)" in fails and "**C1**" not in fails
    assert "[fig3](figures/fig3.md#verdicts): 1 line(s)" in open_ and "[table1](figures/table1.md#verdicts): 1 line(s)" in open_


def test_runs_csv_recomputes_figure_3s_c1_as_the_report_prints_it(tmp_path):
    """C1 (AdamW's gap minus Muon's over Figure 3's seeds) from runs.csv alone equals REPORT.md's
    number; every run in runs.csv has its curve in curves.csv; each figure page links back."""
    p = profile_with("micro", seeds_main=(0, 1, 2), verdicts_meaningful=True, figures=("fig3",))
    run_profile(p, tmp_path, deps=fake_deps(), log=lambda _: None)
    with open(tmp_path / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    final = {(r["optimizer"], r["mode"], r["seed"]): float(r["final_val_loss"]) for r in rows
             if "fig3" in r["figures"].split() and r["ef"] == "False"}
    seeds = sorted({s for _, _, s in final})
    gap = {o: statistics.fmean(final[o, "2bw", s] - final[o, "sync", s] for s in seeds) for o in ("adamw", "muon")}
    report = (tmp_path / "REPORT.md").read_text()
    printed = re.search(r"^\| C1 \|.*?\(holds: > 0\): ([+-]\d+\.\d{4})", report, re.M)
    assert printed, report[:3000]
    assert abs(gap["adamw"] - gap["muon"] - float(printed.group(1))) < 5.1e-5
    with open(tmp_path / "curves.csv", newline="") as f:
        curves = list(csv.DictReader(f))
    assert {r["key"] for r in rows} == {c["key"] for c in curves}
    assert all(r["source"] in ("live", "cache", "kept") and r["commit"] for r in rows)
    assert "(../REPORT.md#fig-fig3)" in (tmp_path / "figures" / "fig3.md").read_text()

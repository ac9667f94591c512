"""REPORT.md: for every figure and table, the paper's claim, this run's measurement, the verdict,
and where every run behind it comes from (live, this machine's cache, or a kept record)."""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Sequence

from . import paper_numbers as pn
from .provenance import describe as describe_provenance
from .runs import KEEP_HINT
from .runs import describe as describe_run
from .verdicts import RESOLUTION

SOURCE_WORDS = {"live": "trained live by this invocation", "cache": "from this machine's cache (`OUT/cache/`)",
                "kept": "from kept records (`paper_figs/kept/`)", "missing": "missing"}


def _rel(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def verdict_table(outputs) -> list[str]:
    lines = ["| figure / table | claim | verdict |", "|---|---|---|"]
    for o in outputs:
        if not o.verdicts:
            lines.append(f"| {o.name} | - | {o.status} |")
        for claim, v in o.verdicts.items():
            lines.append(f"| {o.name} | {claim} | {v.status} |")
    return lines


def _source(o) -> str:
    return o.source if o.ok else "missing"


def source_counts(outcomes) -> dict[str, int]:
    """{source: number of distinct runs} over ``outcomes``."""
    uniq = {id(o): o for o in outcomes}.values()
    counts = {k: 0 for k in SOURCE_WORDS}
    for o in uniq:
        counts[_source(o)] += 1
    return counts


def sources_line(outcomes) -> str:
    c = source_counts(outcomes)
    return ", ".join(f"{n} {SOURCE_WORDS[k]}" for k, n in c.items() if n) or "no training runs"


def agreement_line(outcomes) -> str:
    """How far the runs trained here lie from the kept records of the same configuration."""
    diffs = [abs(o.final - o.kept["result"]["final_val_loss"]) for o in {id(o): o for o in outcomes}.values()
             if o.ok and o.source in ("live", "cache") and o.kept
             and o.kept["result"].get("final_val_loss") is not None and math.isfinite(o.final)]
    if not diffs:
        return ""
    return (f"{len(diffs)} run(s) trained here also have a kept record: largest |final val loss "
            f"here - kept| = {max(diffs):.4f} (0 on the machine that kept them; a large value means "
            "the trainer changed since: retrain the kept records).")


def runs_section(outcomes, prov_index: dict) -> list[str]:
    """Every run of a figure: its final validation loss, where it comes from and, for a run
    trained here that also has a kept record, how far the two finals differ."""
    if not outcomes:
        return []
    rows = ["<details><summary>Every run behind this figure (" + sources_line(outcomes) + ")</summary>", "",
            "| run | final val loss | from | kept record of the same run |", "|---|---|---|---|"]
    for o in outcomes:
        src = _source(o)
        if src in ("live", "cache"):
            prov = (o.record or {}).get("provenance")
        elif src == "kept":
            prov = o.record.get("provenance")
        else:
            prov = None
        ref = ""
        if prov:
            ref = f" [{prov_index.setdefault(describe_provenance(prov), len(prov_index) + 1)}]"
        final = f"{o.final:.4f}" if o.ok and math.isfinite(o.final) else "n/a"
        kept = "-"
        if o.kept and src != "kept":
            kf = o.kept["result"].get("final_val_loss")
            if kf is not None and o.ok:
                kept = f"{kf:.4f} (ours minus kept {o.final - kf:+.4f})"
        rows.append(f"| {describe_run(o.settings)} | {final} | {src}{ref} | {kept} |")
    return rows + ["", "</details>", ""]


def missing_section(missing: Sequence[str], figure: str | None = None) -> list[str]:
    """The missing runs grouped by reason (one kept-record hint, not 50 copies of it), and
    for missing kept records the command that trains this ``figure``'s runs alone."""
    groups: dict[str, list[str]] = {}
    for m in missing:
        run, _, why = m.partition(": ")
        groups.setdefault(why or run, []).append(run)
    L = ["Missing (not available):", ""]
    for why, runs in groups.items():
        shown = "; ".join(runs[:4]) + (f"; and {len(runs) - 4} more" if len(runs) > 4 else "")
        L.append(f"- {len(runs)} run(s): {why} -- {shown}")
        if figure and why == KEEP_HINT:
            L.append(f"  (this figure's runs alone: `python -m paper_figs --profile full --only {figure}`, "
                     f"`python -m paper_figs --profile full --only {figure} --list` for the time)")
    return L + [""]


def write_report(out_dir: Path, profile, outputs: Sequence, *, trained: int, overridden: Sequence[str],
                 elapsed_s: float) -> Path:
    """Write ``out_dir/REPORT.md`` and return its path."""
    out_dir = Path(out_dir)
    L = [f"# Reproduction report: profile `{profile.name}`", "",
         f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m paper_figs "
         f"--profile {profile.name}`; {trained} run(s) trained this invocation; {elapsed_s:.0f} s.", "",
         f"Profile: {profile.description}.", "",
         "Paper: \"One-Step Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline "
         "Parallel LLM Pretraining\", numbers as given by its Chinese summary "
         "(`paper_figs/paper_numbers.py` holds each with its source). The paper's losses are "
         "nats/token on FineWeb-Edu at 135M-10B parameters; ours are nats/byte on a small corpus "
         "at CPU scale, so only the qualitative claims are compared.", "",
         f"Verdict rules (`paper_figs/verdicts.py`): a difference counts only beyond "
         f"max({RESOLUTION}, 2 x seed std); '±' is the sample std over seeds. A claim made of "
         "several parts (optimizers, momenta, horizons) holds only if more than half of its "
         "parts are resolved and all of those hold; fewer resolved parts make it inconclusive. "
         "Where the paper says 'for most optimizers', the claim holds if more than half of the "
         "parts hold, and does not hold if that is out of reach whatever the unresolved parts do. "
         "The line then says 'most', and the stricter 'every' reading is given beside it. "
         f"With a single seed the margin is the floor {RESOLUTION}, an assumption rather than a "
         "measurement: on the tiny model a sync-async gap varies between seeds by more than that "
         "(Figure 3's two seeds: std 0.006-0.007 at 1500 steps), so a one-seed verdict that rests "
         "on a difference below about 0.015 is weaker than its margin says.", "",
         "Where the numbers come from: " + sources_line([r for o in outputs for r in o.runs]) + ". "
         "Each figure's 'runs from' column and its list of runs say which; a kept record is a "
         "run trained earlier and stored in the repository with its provenance (footnotes at the end).",
         "", agreement_line([r for o in outputs for r in o.runs]), ""]
    if overridden:
        L += ["**Test run: dependencies replaced by test doubles (fakes or wrappers): "
              + ", ".join(f"`{n}`" for n in overridden)
              + ". Numbers from a fake are not measurements.**", ""]
    L += ["## Horizon", "", profile.horizon_note, "", "## Summary of verdicts", "", *verdict_table(outputs), ""]
    prov_index: dict[str, int] = {}
    for o in outputs:
        L += [f"## {o.title}", "", f"Status: {o.status}", ""]
        if o.status == "not run in this profile":
            continue
        if o.caption:
            L += [f"Caption: {o.caption}", ""]
        if o.files:
            L += ["Files: " + ", ".join(f"`{_rel(f, out_dir)}`" for f in o.files), ""]
            pngs = [f for f in o.files if str(f).endswith(".png")]
            L += [f"![{o.name}]({_rel(f, out_dir)})" for f in pngs] + ([""] if pngs else [])
        if o.paper:
            L += ["What the paper reports:", ""] + [f"- {x}" for x in o.paper] + [""]
        if o.measured:
            L += ["What this run measured:", "", *o.measured, ""]
        if o.verdicts:
            L += ["Verdicts:", ""] + [f"- {k}: {v}" for k, v in o.verdicts.items()] + [""]
        if o.notes:
            L += ["Notes:", ""] + [f"- {x}" for x in o.notes] + [""]
        if o.missing:
            L += missing_section(o.missing, o.name)
        L += runs_section(o.runs, prov_index)
    L += ["## Discrepancies found in the paper's numbers", ""] + [f"- {d}" for d in pn.DISCREPANCIES] + [""]
    L += (["## Transcription ambiguities (readings the summary allows; not errors of the paper)", ""]
          + [f"- {d}" for d in pn.TRANSCRIPTION_AMBIGUITIES] + [""])
    if prov_index:
        L += ["## Provenance of the runs", ""] + [f"[{i}] {p}" for p, i in prov_index.items()] + [""]
    path = out_dir / "REPORT.md"
    path.write_text("\n".join(L))
    return path

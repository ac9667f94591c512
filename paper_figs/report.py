"""REPORT.md: for every figure and table, the paper's claim, this run's measurement, the verdict."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from . import paper_numbers as pn
from .verdicts import RESOLUTION


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


def write_report(out_dir: Path, profile, outputs: Sequence, *, trained: int, overridden: Sequence[str],
                 elapsed_s: float) -> Path:
    """Write ``out_dir/REPORT.md`` and return its path."""
    out_dir = Path(out_dir)
    L = [f"# Reproduction report: profile `{profile.name}`", "",
         f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m paper_figs "
         f"--profile {profile.name}`; {trained} run(s) trained this invocation, the rest from "
         f"`cache/`; {elapsed_s:.0f} s.", "",
         f"Profile: {profile.description}.", "",
         "Paper: \"One-Step Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline "
         "Parallel LLM Pretraining\", numbers as given by its Chinese summary "
         "(`paper_figs/paper_numbers.py` holds each with its source). The paper's losses are "
         "nats/token on FineWeb-Edu at 135M-10B parameters; ours are nats/byte on a small corpus "
         "at CPU scale, so only the qualitative claims are compared.", "",
         f"Verdict rules (`paper_figs/verdicts.py`): a difference counts only beyond "
         f"max({RESOLUTION}, 2 x seed std); '±' is the sample std over seeds.", ""]
    if overridden:
        L += ["**Test run: dependencies replaced by test doubles (fakes or wrappers): "
              + ", ".join(f"`{n}`" for n in overridden)
              + ". Numbers from a fake are not measurements.**", ""]
    L += ["## Horizon", "", profile.horizon_note, "", "## Summary of verdicts", "", *verdict_table(outputs), ""]
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
            L += ["Missing (not available):", ""] + [f"- {x}" for x in o.missing] + [""]
    L += ["## Discrepancies found in the paper's numbers", ""] + [f"- {d}" for d in pn.DISCREPANCIES] + [""]
    path = out_dir / "REPORT.md"
    path.write_text("\n".join(L))
    return path

"""A page per figure: ``OUT/figures/NAME.md`` holds everything REPORT.md said of a figure before
the front page was cut down (issue 51 item 1): its caption, files and images, what the paper
reports, what was measured, every verdict line whole (with the statistics behind it), notes,
missing runs, and every run behind it with its provenance. It links back to REPORT.md; each
verdict line has an anchor (``v1``, ``v2``, ...; a confirmatory line also its claim id) that the
front page links to."""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Sequence

from ..records.cache import write_atomically
from ..records.provenance import describe as describe_provenance
from ..records.runs import KEEP_HINT
from ..records.runs import describe as describe_run
from .verdict_lines import line_anchor, role

SOURCE_WORDS = {"live": "trained live by this invocation", "cache": "from this machine's cache (`OUT/cache/`)",
                "kept": "from kept records (`paper_figs/kept/`)", "missing": "missing"}


def page_path(out_dir: Path, name: str) -> Path:
    """Where figure ``name``'s page is written: ``OUT/figures/NAME.md``."""
    return Path(out_dir) / "figures" / f"{name}.md"


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


def runs_section(outcomes, prov_index: dict) -> list[str]:
    """Every run of a figure: its final validation loss, where it comes from and, for a run
    trained here that also has a kept record, how far the two finals differ."""
    if not outcomes:
        return []
    rows = ["## Every run behind this figure", "", sources_line(outcomes) + ".", "",
            "| run | final val loss | from | kept record of the same run |", "|---|---|---|---|"]
    for o in outcomes:
        src = _source(o)
        prov = (o.record or {}).get("provenance") if src in ("live", "cache", "kept") else None
        ref = f" [{prov_index.setdefault(describe_provenance(prov), len(prov_index) + 1)}]" if prov else ""
        final = f"{o.final:.4f}" if o.ok and math.isfinite(o.final) else "n/a"
        kept = "-"
        if o.kept and src != "kept":
            kf = o.kept["result"].get("final_val_loss")
            if kf is not None and o.ok:
                kept = f"{kf:.4f} (ours minus kept {o.final - kf:+.4f})"
        rows.append(f"| {describe_run(o.settings)} | {final} | {src}{ref} | {kept} |")
    return rows + [""]


def missing_section(missing: Sequence[str], figure: str | None = None) -> list[str]:
    """The missing runs grouped by reason (one kept-record hint, not 50 copies of it), and
    for missing kept records the command that trains this ``figure``'s runs alone."""
    groups: dict[str, list[str]] = {}
    for m in missing:
        run, _, why = m.partition(": ")
        groups.setdefault(why or run, []).append(run)
    L = ["## Missing (not available)", ""]
    for why, runs in groups.items():
        L.append(f"- {len(runs)} run(s): {why} -- " + "; ".join(runs))
        if figure and why == KEEP_HINT:
            L.append(f"  (this figure's runs alone: `python -m paper_figs --profile full --only {figure}`, "
                     f"`python -m paper_figs --profile full --only {figure} --list` for the time)")
    return L + [""]


def verdict_section(o, horizon: str) -> list[str]:
    """Every verdict line whole, each with its anchor (and its claim id's, if confirmatory)."""
    L = [f'<a id="verdicts"></a>', "", f"## Verdicts{' (horizon: ' + horizon + ')' if horizon else ''}", ""]
    for i, (k, v) in enumerate(o.verdicts.items()):
        ids = f'<a id="{line_anchor(i)}"></a>' + (f'<a id="{v.claim}"></a>' if v.claim else "")
        L.append(f"- {ids}[{role(v)}] {k}: {v}")
    return L + [""]


def figure_page(o, out_dir: Path, profile_name: str, horizon: str) -> list[str]:
    """The lines of figure ``o``'s page (paths relative to the page's folder)."""
    here = page_path(out_dir, o.name).parent

    def rel(f) -> str:
        return os.path.relpath(Path(f).resolve(), here.resolve())
    L = [f"# {o.title}", "", f"[Back to REPORT.md](../REPORT.md#fig-{o.name}) (profile `{profile_name}`). "
                             f"Status: {o.status}.", ""]
    if o.caption:
        L += [f"Caption: {o.caption}", ""]
    if o.files:
        L += ["Files: " + ", ".join(f"`{rel(f)}`" for f in o.files), ""]
        L += [f"![{o.name}]({rel(f)})" for f in o.files if str(f).endswith(".png")] + [""]
    if o.paper:
        L += ["## What the paper reports", ""] + [f"- {x}" for x in o.paper] + [""]
    if o.measured:
        L += ["## What this run measured", "", *o.measured, ""]
    if o.verdicts:
        L += verdict_section(o, horizon)
    if o.notes:
        L += ["## Notes", ""] + [f"- {x}" for x in o.notes] + [""]
    if o.missing:
        L += missing_section(o.missing, o.name)
    prov_index: dict[str, int] = {}
    L += runs_section(o.runs, prov_index)
    if prov_index:
        L += ["## Provenance of the runs", ""] + [f"[{i}] {p}" for p, i in prov_index.items()] + [""]
    return L


def write_pages(out_dir: Path, outputs, profile_name: str, horizon_of) -> dict[str, Path]:
    """Write a page for every figure the invocation ran ({name: its path}); ``horizon_of(name)``
    gives the horizon its verdicts are judged at. Each page is written atomically."""
    pages = {}
    for o in outputs:
        if o.status == "not run in this profile":
            continue
        path = page_path(out_dir, o.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        pages[o.name] = write_atomically(path, "\n".join(figure_page(o, out_dir, profile_name, horizon_of(o.name))))
    return pages

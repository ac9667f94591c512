"""REPORT.md: for every figure and table, the paper's claim, this run's measurement, the verdict,
and where every run behind it comes from (live, this machine's cache, or a kept record)."""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Sequence

from . import confirmatory
from ..statistics import machine_noise
from ..statistics import paper_numbers as pn
from ..records.machine_regimes import regime_of
from ..statistics.protocol import ALPHA, M_BENIGN, M_SMALLEST, MUCH_LARGER, OWN_SD_MIN_N
from ..records.provenance import describe as describe_provenance
from ..records.provenance import machine
from ..records.runs import KEEP_HINT
from ..records.runs import describe as describe_run
from ..statistics.seed_stats import NO_NOISE

SOURCE_WORDS = {"live": "trained live by this invocation", "cache": "from this machine's cache (`OUT/cache/`)",
                "kept": "from kept records (`paper_figs/kept/`)", "missing": "missing"}


def _rel(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def role(v) -> str:
    """'confirmatory C3' for a line of the family, else 'exploratory' (docs/protocol.md §4)."""
    return f"confirmatory {v.claim}" if getattr(v, "claim", "") else "exploratory"


def verdict_table(outputs) -> list[str]:
    lines = ["| figure / table | claim | kind | verdict |", "|---|---|---|---|"]
    for o in outputs:
        if not o.verdicts:
            lines.append(f"| {o.name} | - | - | {o.status} |")
        for claim, v in o.verdicts.items():
            lines.append(f"| {o.name} | {claim} | {role(v)} | {v.status} |")
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


def live_kept_pairs(outcomes) -> list[tuple]:
    """(outcome, kept final) of every run trained here that also has a kept record."""
    return [(o, o.kept["result"]["final_val_loss"]) for o in {id(o): o for o in outcomes}.values()
            if o.ok and o.source in ("live", "cache") and o.kept
            and o.kept["result"].get("final_val_loss") is not None and math.isfinite(o.final)]


def tolerance(o, spread) -> tuple[float, str]:
    """The live-vs-kept tolerance of run ``o``: its regime's (machine_noise.MachineSpread.tolerance)."""
    return (spread or machine_noise.MachineSpread(False)).tolerance(regime_of(o.settings))


def agreement_line(outcomes, spread=None) -> str:
    """How far the runs trained here lie from the kept records of the same configuration."""
    pairs = live_kept_pairs(outcomes)
    if not pairs:
        return ""
    o, k = max(pairs, key=lambda ok: abs(ok[0].final - ok[1]))
    tol, why = tolerance(o, spread)
    return (f"{len(pairs)} run(s) trained here also have a kept record of the same configuration (same "
            f"corpus sha256 included): largest |final val loss here - kept| = {abs(o.final - k):.4f} "
            f"({describe_run(o.settings)}); its regime's tolerance {tol:.4f} ({why}; section 'The machine as a "
            "noise source' below).")


def likely_causes(kept_machines: Sequence[str], here: str) -> str:
    """What differs between the machines that kept the records and this one (Python, torch, CPU)."""
    def parts(m):
        cpu, _, rest = m.partition(" x")
        py = rest.split("Python ")[-1].split(",")[0] if "Python " in rest else "?"
        tv = rest.split("torch ")[-1] if "torch " in rest else "?"
        return {"CPU": cpu, "Python": py, "torch": tv}
    now = parts(here)
    diffs = sorted({f"{k} {v} there, {now[k]} here" for m in kept_machines for k, v in parts(m).items()
                    if v != now[k]})
    if not diffs:
        return ("the machines look alike (same CPU model, Python and torch): the trainer or the "
                "optimizers changed since the records were kept; retrain them")
    return ("the corpus is the same (its sha256 is part of the key), so: " + "; ".join(diffs)
            + " (a different CPU instruction set changes float summation order, most in Muon's "
              "fp32 Newton-Schulz; a different torch can change kernels)")


def mismatch_warning(outcomes, spread=None) -> list[str]:
    """A loud block for the top of REPORT.md when a live run differs from its kept twin
    beyond the tolerance of its own regime ([] otherwise)."""
    bad = [(o, k, tolerance(o, spread)) for o, k in live_kept_pairs(outcomes) if abs(o.final - k) > tolerance(o, spread)[0]]
    if not bad:
        return []
    machines = sorted({(o.kept.get("provenance") or {}).get("machine", "?") for o, _, _ in bad})
    L = [f"> **WARNING: {len(bad)} run(s) trained here differ from their kept record of the same "
         f"configuration by more than their regime's measured cross-machine tolerance.** Verdicts below pool them "
         f"with kept runs of other seeds; read them with that in mind. Likely cause: "
         f"{likely_causes(machines, machine())}.", ">"]
    for o, k, (tol, why) in bad[:10]:
        L.append(f"> - {describe_run(o.settings)}: here {o.final:.4f}, kept {k:.4f} ({o.final - k:+.4f}; "
                 f"tolerance {tol:.4f}, {why})")
    return L + [""]


def rules_paragraph(noise) -> str:
    """The verdict rules (docs/protocol.md), with the pooled seed spread this report measured."""
    return (f"Verdict rules (docs/protocol.md; `paper_figs/statistics/protocol.py`, `paper_figs/statistics/t_tests.py`, "
            f"`paper_figs/statistics/seed_stats.py`): every training verdict compares paired differences of final losses (same "
            f"seed, same data order) with a Student-t test at the estimate's own degrees of freedom, its 95 % "
            f"interval printed beside it. A cell's SD is its own from n >= {OWN_SD_MIN_N} seeds (n - 1 dof); a cell "
            f"with fewer seeds borrows a pooled SD with the pool's dof, chosen by one rule (Bartlett's test across "
            f"the optimizer's multi-seed cells: homogeneous -> all of them, else the most specific of (optimizer, "
            f"model, lr), (optimizer, model), (optimizer, lr)), and is computed again under the widest candidate pool: "
            f"a line decided under one pool only is inconclusive. Combinations of cells use Welch-Satterthwaite "
            f"dof. A line holds when its 95 % interval lies on the claim's side of the decision boundary, does not "
            f"hold when it lies on the other, and is inconclusive otherwise. 'Does not grow' and 'stays stable' are "
            f"one-sided tests against margins from the paper's own numbers ({M_SMALLEST:.2%} of the sync loss: the "
            f"10B MoE's 0.005 / 1.906, its smallest reported gap; {M_BENIGN:.2%}: its 'within 0.03' over 2.896); "
            f"'EF closes the gap' is two one-sided tests within +-{M_SMALLEST:.2%}. 'Much larger' means D - "
            f"{MUCH_LARGER:g} R > 0 (exploratory; the ratio's Fieller interval is printed). A claim about every "
            f"part holds when every part holds (intersection-union) and fails when one part fails at the "
            f"Bonferroni level; 'most parts' uses the order-statistic rule of docs/protocol.md §3. The paper's claims "
            f"(one line each) form the confirmatory family, decided with Holm at family-wise {ALPHA:.0%}; every other "
            f"line is exploratory, decided at {ALPHA:.0%} for itself. A pair whose runs come from two kinds of "
            f"machine adds the measured cross-machine variance of its regime; a best lr at a grid edge or not "
            f"resolved leaves its verdict inconclusive. '±' in tables is the sample SD over seeds. Seed spreads "
            f"borrowed: {noise}.")


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


def corpus_line(base: dict) -> str:
    """Which corpus every run of the profile trains on, with its tokens' sha256 (part of every key)."""
    data = base.get("data", "stdlib")
    if data == "stdlib":
        from gpu_runs.builtin_corpus import STDLIB_SHA256
        return (f"Corpus: the built-in `stdlib` corpus (CPython 3.11.7's documentation topics and Lib/ "
                f"sources, frozen in gpu_runs/corpora/; tokens sha256 {STDLIB_SHA256[:12]}...), bytes as tokens.")
    return (f"Corpus: `{data}` (tokens sha256 {str(base.get('data_sha256'))[:12]}..., part of every run's "
            "identity; no kept record applies to it).")


def family_section(family: dict | None, profile, headline: str) -> list[str]:
    """The opening screen: the confirmatory table (docs/protocol.md §4) and the horizon headline."""
    if not family:
        return []
    return ["## The paper's claims: the confirmatory family", "",
            confirmatory.summary_line(family) + " Effect = the line's statistic (a gap difference, a growth, ...; "
                                                "for claims of parts each part's), nats/byte; the detail of each "
                                                "line follows in its figure's section.", "",
            *confirmatory.table(family, profile), "", *([headline, ""] if headline else [])]


def machine_section(spread) -> list[str]:
    return ["## The machine as a noise source", "", *machine_noise.table(spread or machine_noise.MachineSpread(False)),
            "", "A verdict whose pairs mix machine kinds adds its regime's RMS to the variance (docs/protocol.md §7); "
                "each verdict line says 'one machine kind' or how many pairs mix.", ""]


def write_report(out_dir: Path, profile, outputs: Sequence, *, trained: int, overridden: Sequence[str],
                 elapsed_s: float, noise=NO_NOISE, family: dict | None = None, headline: str = "") -> Path:
    """Write ``out_dir/REPORT.md`` and return its path."""
    out_dir = Path(out_dir)
    spread = getattr(noise, "machine", None)
    L = [f"# Reproduction report: profile `{profile.name}`", "",
         *mismatch_warning([r for o in outputs for r in o.runs], spread),
         *family_section(family, profile, headline),
         f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m paper_figs "
         f"--profile {profile.name}`; {trained} run(s) trained this invocation; {elapsed_s:.0f} s.", "",
         f"Profile: {profile.description}.", "",
         corpus_line(profile.base), "",
         "Paper: \"One-Step Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline "
         "Parallel LLM Pretraining\", numbers as given by its Chinese summary "
         "(`paper_figs/statistics/paper_numbers.py` holds each with its source). The paper's losses are "
         "nats/token on FineWeb-Edu at 135M-10B parameters; ours are nats/byte on a small corpus "
         "at CPU scale, so only the qualitative claims are compared.", "",
         rules_paragraph(noise), "",
         "Where the numbers come from: " + sources_line([r for o in outputs for r in o.runs]) + ". "
         "Each figure's 'runs from' column and its list of runs say which; a kept record is a "
         "run trained earlier and stored in the repository with its provenance (footnotes at the end).",
         "", agreement_line([r for o in outputs for r in o.runs], spread), "", *machine_section(spread)]
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
            at = confirmatory.figure_horizon(o.name, profile)
            L += [f"Verdicts{' (horizon: ' + at + ')' if at else ''}:", ""]
            L += [f"- [{role(v)}] {k}: {v}" for k, v in o.verdicts.items()] + [""]
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

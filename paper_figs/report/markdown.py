"""REPORT.md, the front page: the confirmatory family's first screen, a table of contents, the
summary of verdicts grouped by status and claim, and per figure one short paragraph (its image,
its decided lines, a link to its page). Each figure's full detail (caption, measurements, every
verdict line whole, notes, missing runs, every run and its provenance) is on its own page,
``OUT/figures/NAME.md`` (:mod:`paper_figs.report.pages`)."""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Sequence

from . import confirmatory, verdict_lines
from .pages import source_counts, sources_line, write_pages
from ..statistics import machine_noise
from ..statistics import paper_numbers as pn
from ..records.machine_regimes import regime_of
from ..statistics.protocol import ALPHA, M_BENIGN, M_SMALLEST, MUCH_LARGER, OWN_SD_MIN_N
from ..records.cache import write_atomically
from ..records.provenance import machine
from ..records.runs import describe as describe_run
from ..statistics.seed_stats import NO_NOISE

def _rel(path: Path, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


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


def corpus_line(base: dict) -> str:
    """Which corpus every run of the profile trains on, with its tokens' sha256 (part of every key)."""
    data = base.get("data", "stdlib")
    if data == "stdlib":
        from gpu_runs.builtin_corpus import STDLIB_SHA256
        return (f"Corpus: the built-in `stdlib` corpus (CPython 3.11.7's documentation topics and Lib/ "
                f"sources, frozen in gpu_runs/corpora/; tokens sha256 {STDLIB_SHA256[:12]}...), bytes as tokens.")
    return (f"Corpus: `{data}` (tokens sha256 {str(base.get('data_sha256'))[:12]}..., part of every run's "
            "identity; no kept record applies to it).")


def family_section(family: dict | None, profile, headline: str, needs: dict | None = None,
                   waiting: dict | None = None, notes: dict | None = None) -> list[str]:
    """The opening screen: three sentences (what holds, what does not, what is not decided and
    why), the confirmatory table (docs/protocol.md §4) and the horizon headline. ``needs``: per
    claim the seeds and CPU hours a decision needs (``paper_figs.seeds_needed``); ``waiting``:
    the claims a batch of the sequential plan still feeds (docs/plan.md)."""
    if not family:
        return []
    return ["## The paper's claims: the confirmatory family", "",
            *confirmatory.first_screen(family, needs, waiting),
            confirmatory.summary_line(family) + " Each claim is judged on cells with their own spread (3 seeds "
                                                "or more), at the sequential plan's current look (docs/plan.md); "
                                                "the detail of each line is on its figure's page.", "",
            *confirmatory.table(family, profile, needs, waiting, notes), "", *([headline, ""] if headline else [])]


def machine_section(spread) -> list[str]:
    return ["## The machine as a noise source", "", *machine_noise.table(spread or machine_noise.MachineSpread(False)),
            "", "A verdict whose pairs mix machine kinds adds its regime's RMS to the variance (docs/protocol.md §7); "
                "each verdict line says 'one machine kind' or how many pairs mix.", ""]


def _section(anchor: str, title: str) -> list[str]:
    """A front-page heading with an explicit anchor (the table of contents links to it)."""
    return [f'<a id="{anchor}"></a>', "", f"## {title}", ""]


#: the front page's sections after the figures: (anchor, title)
SECTIONS = {"about": "About this run", "summary": "Summary of verdicts", "figures": "Figures",
            "rules": "How verdicts are decided", "machine": "The machine as a noise source", "horizon": "Horizon",
            "discrepancies": "Discrepancies found in the paper's numbers",
            "ambiguities": "Transcription ambiguities (readings the summary allows; not errors of the paper)"}


def contents(outputs, pages: dict) -> list[str]:
    """The table of contents: every section, and every figure with a link to its page."""
    L = ['<a id="contents"></a>', "", "## Contents", ""]
    for anchor, title in SECTIONS.items():
        L.append(f"- [{title}](#{anchor})")
        if anchor == "figures":
            L += [f"  - [{o.title}](#fig-{o.name})" + (f" ([its page]({verdict_lines.page_link(o.name)}))"
                                                      if o.name in pages else f" ({o.status})") for o in outputs]
    return L + [""]


def figure_paragraph(o, pages: dict, out_dir: Path) -> list[str]:
    """A figure on the front page: its status, how many lines hold / fail / are open, where its runs
    come from, a link to its page, its images and its decided lines (at most ~300 characters each)."""
    L = [f'<a id="fig-{o.name}"></a>', "", f"### {o.title}", ""]
    if o.name not in pages:
        return L + [f"Status: {o.status}.", ""]
    count = {s: sum(v.status == s for v in o.verdicts.values()) for s in verdict_lines.STATUSES}
    lines = (f"{len(o.verdicts)} verdict line(s): " + ", ".join(f"{n} {s}" for s, n in count.items()) + "; "
             if o.verdicts else "")
    runs = f"runs: {sources_line(o.runs)}; " if o.runs else ""
    L += [f"Status: {o.status}; {lines}{runs}full detail (caption, measurements, every line whole, every run): "
          f"[{verdict_lines.page_link(o.name)}]({verdict_lines.page_link(o.name)}).", ""]
    L += [f"![{o.name}]({_rel(f, out_dir)})" for f in o.files if str(f).endswith(".png")]
    L += [""] if any(str(f).endswith(".png") for f in o.files) else []
    decided = verdict_lines.decided(o)
    L += ["Decided lines:", "", *decided, ""] if decided else []
    return L + (["How to read them (computed; the figure's page has the detail):", "",
                 *(f"- {x}" for x in o.highlights), ""] if getattr(o, "highlights", None) else [])


def write_report(out_dir: Path, profile, outputs: Sequence, *, trained: int, overridden: Sequence[str],
                 elapsed_s: float, noise=NO_NOISE, family: dict | None = None, headline: str = "",
                 needs: dict | None = None, waiting: dict | None = None, notes: dict | None = None) -> Path:
    """Write every figure's page (``out_dir/figures/NAME.md``) and the front page
    ``out_dir/REPORT.md``, each atomically; return the front page's path."""
    out_dir = Path(out_dir)
    spread = getattr(noise, "machine", None)
    pages = write_pages(out_dir, outputs, profile.name, lambda n: confirmatory.figure_horizon(n, profile))
    every_run = [r for o in outputs for r in o.runs]
    L = [f"# Reproduction report: profile `{profile.name}`", "",
         *mismatch_warning(every_run, spread),
         *family_section(family, profile, headline, needs, waiting, notes),
         *contents(outputs, pages),
         *_section("about", SECTIONS["about"]),
         f"Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `python -m paper_figs "
         f"--profile {profile.name}`; {trained} run(s) trained this invocation; {elapsed_s:.0f} s.", "",
         f"Profile: {profile.description}.", "",
         corpus_line(profile.base), "",
         "Paper: \"One-Step Gradient Delay is Not a Barrier for Large-Scale Asynchronous Pipeline "
         "Parallel LLM Pretraining\", numbers as given by its Chinese summary "
         "(`paper_figs/statistics/paper_numbers.py` holds each with its source). The paper's losses are "
         "nats/token on FineWeb-Edu at 135M-10B parameters; ours are nats/byte on a small corpus "
         "at CPU scale, so only the qualitative claims are compared.", "",
         "Where the numbers come from: " + sources_line(every_run) + ". Each figure's page lists its runs "
         "and where each comes from; a kept record is a run trained earlier and stored in the repository "
         "with its provenance (footnotes on the figure's page). Every run used, with its settings and "
         "final loss, is in `runs.csv`, its validation curve in `curves.csv`.",
         "", agreement_line(every_run, spread), ""]
    if overridden:
        L += ["**Test run: dependencies replaced by test doubles (fakes or wrappers): "
              + ", ".join(f"`{n}`" for n in overridden)
              + ". Numbers from a fake are not measurements.**", ""]
    L += [*_section("summary", SECTIONS["summary"]), *verdict_lines.summary(outputs),
          *_section("figures", SECTIONS["figures"])]
    for o in outputs:
        L += figure_paragraph(o, pages, out_dir)
    L += [*_section("rules", SECTIONS["rules"]), rules_paragraph(noise), ""]
    L += ['<a id="machine"></a>', "", *machine_section(spread)]
    L += [*_section("horizon", SECTIONS["horizon"]), profile.horizon_note, ""]
    L += [*_section("discrepancies", SECTIONS["discrepancies"])] + [f"- {d}" for d in pn.DISCREPANCIES] + [""]
    L += [*_section("ambiguities", SECTIONS["ambiguities"])] + [f"- {d}" for d in pn.TRANSCRIPTION_AMBIGUITIES] + [""]
    return write_atomically(out_dir / "REPORT.md", "\n".join(L))

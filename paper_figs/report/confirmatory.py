"""The confirmatory family (docs/protocol.md §4): each claim of ``protocol.FAMILY`` computed
from its figure's runs, whichever figures an invocation shows, and decided with Holm's
step-down at family-wise ALPHA; the one-screen table REPORT.md opens with.

A claim's line is computed once, by the figure it belongs to (``claims(ctx)`` of that figure
module); a line of another figure that tests the same runs (Table 1's main-model "AdamW larger
than Muon" is Figure 3's C1) carries the same claim id and shows the same decision, counted once.
"""
from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Sequence

from ..figures import CATALOG, fig2_table2, fig5, fig6, grids, moe
from ..statistics.protocol import ALPHA, CLAIMS_BY_ID, EFFECT, FAMILY, OWN_SD_MIN_N
from .verdict_lines import page_link

#: a claim that would cost more CPU hours than this is undecidable at this scale (docs/plan.md §2)
UNDECIDABLE_CPU_H = 50.0
from ..statistics.sequential import SPENDING, sequential_p
from ..statistics.t_tests import FAILS, HOLDS, INCONCLUSIVE, fmt_p, holm, holm_level, line_p, t_quantile
from ..statistics.verdicts import Evidence, Verdict, gate


def own_spreads_only(ctx):
    """``ctx`` whose noise model lends no pooled SD (the cross-machine spread kept): a cell with
    fewer than OWN_SD_MIN_N seeds then has no SD, and a line resting on it has p = 1. The
    confirmatory family is judged so (issue 47 item 2): no confirmatory cell rests on one seed,
    since a pool's SD is not shown valid for a cell whose spread exceeds it (single-seed cells
    2-4x noisier than their pool, SDs that grow with the gap: ``paper_figs.error_rates``)."""
    return dataclasses.replace(ctx, noise=dataclasses.replace(ctx.noise, groups=(), memo={}))


def judge_family(ctx, own_only: bool = True) -> dict[str, Verdict]:
    """{claim id: its line's per-line verdict} for every claim whose figure the profile runs
    (a figure without runs yields nothing; its claims are then missing), each from its cells'
    own spreads only (:func:`own_spreads_only`). ``own_only=False``: with the pooled SDs a cell
    would borrow, for planning only (``paper_figs.seeds_needed``: an SD to size a cell by)."""
    raw: dict[str, Verdict] = {}
    ctx = own_spreads_only(ctx) if own_only else ctx
    for fig in dict.fromkeys(c.figure for c in FAMILY):
        if not ctx.profile.runs_figure(fig):
            continue
        for v in CATALOG[fig].claims(ctx).values():
            if CLAIMS_BY_ID[v.claim].figure == fig:
                raw[v.claim] = v
    return raw


def decide(raw: dict[str, Verdict], meaningful: bool = True, alpha: float = ALPHA,
           earlier: Sequence[dict[str, Verdict]] = (), spending: Sequence[float] = SPENDING) -> dict[str, Verdict]:
    """Holm over the family at the plan's current look: {claim id: the decided verdict}.

    ``raw`` is the family at look k = len(``earlier``); ``earlier`` the families at looks
    0..k-1 (docs/plan.md §3). Each claim enters Holm with its sequential p-value
    p* = min_j p_j / f_j over its looks (``paper_figs.statistics.sequential``), its direction
    that of the look attaining it. A claim without a line enters with p = 1 (its figure did not
    run: the others' decisions can only be more conservative). ``spending``: the fractions of
    the level per look (the plan's; ``(1.0,)``: one look at the full level, as the simulation of
    one look's validity uses it)."""
    looks = [*earlier, raw]

    def p_at(fam, c):
        return line_p(fam[c].test.p_eff) if c in fam and fam[c].test else 1.0
    seq = [sequential_p([p_at(f, c.id) for f in looks], spending) for c in FAMILY]
    ps = [p for p, _ in seq]
    rejected = holm(ps, alpha)
    rank = {j: i for i, j in enumerate(sorted(range(len(ps)), key=lambda j: ps[j]))}
    out = {}
    for j, c in enumerate(FAMILY):
        v = raw.get(c.id)
        if v is None or v.test is None:
            out[c.id] = Verdict(INCONCLUSIVE, "not computed in this invocation (its figure did not run or has no "
                                              "runs)", Evidence(), c.id)
            continue
        at = looks[seq[j][1]].get(c.id) or v
        p_hold, p_fail = (at.test or v.test).p_eff
        level = holm_level(rank[j], len(ps), alpha)
        status = (HOLDS if p_hold <= p_fail else FAILS) if rejected[j] else INCONCLUSIVE
        head = (f"confirmatory {c.id}, Holm: p* = {fmt_p(ps[j])} (look {len(looks) - 1}"
                + (f", attained at look {seq[j][1]}" if seq[j][1] != len(looks) - 1 else "")
                + f"; this look's p = {fmt_p(p_at(raw, c.id))}, its spent fraction "
                f"{spending[len(looks) - 1]:g}), rank {rank[j] + 1} of {len(ps)}, level {level:.3g}")
        if not rejected[j] and v.status != INCONCLUSIVE:
            head += f" (at 5 % for this line alone it would say {v.status}; not after the plan's spending and Holm)"
        out[c.id] = gate(Verdict(status, f"{head}; {v.reason}", v.test, c.id), meaningful)
    return out


def apply(outputs, final: dict[str, Verdict]) -> None:
    """Give every figure line tagged with a claim id its family decision (in place)."""
    for o in outputs:
        for name, v in list(o.verdicts.items()):
            if not v.claim or v.claim not in final:
                continue
            f = final[v.claim]
            home = CLAIMS_BY_ID[v.claim].figure
            if o.name != home:
                f = Verdict(f.status, f"the same test on the same runs as {v.claim} ({home}), counted once: {f.reason}",
                            f.test, v.claim)
            o.verdicts[name] = f


def horizon(claim_id: str, p) -> str:
    """The training horizon and model a claim is judged at, in the profile ``p``."""
    fig = CLAIMS_BY_ID[claim_id].figure
    if claim_id == "C13":
        return f"{p.steps} steps, {moe.spec(p).moe_size}"
    if fig == "table1":
        return f"{p.steps} steps, {p.sizes[0]}"
    if fig == "fig5":
        return f"{' -> '.join(map(str, grids.shared(p).horizons))} steps, {p.main_size}"
    return figure_horizon(fig, p)


def figure_horizon(fig: str, p) -> str:
    """The training horizon(s) and model of a figure's verdicts ('' for a figure without training)."""
    horizons, f2, f5 = grids.shared(p).horizons, fig2_table2.spec(p), fig5.spec(p)
    hs = " -> ".join(map(str, horizons))
    moe_hs = " -> ".join(map(str, moe.horizons(p)))
    main = f"{p.steps} steps, {p.main_size}"
    scale = f"; {' -> '.join(map(str, f5.scale_horizons))} steps, {f5.scale_size}" if f5.scale_horizons else ""
    return {"fig3": main, "table1": f"{p.steps} steps, {' and '.join(p.sizes)}", "lr_tuning": main,
            "fig3_tuned": main, "fig2_table2": f"{p.steps} steps, {f2.mitigation_size}",
            "fig2_tuned": f"{p.steps} steps, {f2.mitigation_size}", "fig4": main, "theory_training": main,
            "fig5": f"{hs} steps, {p.main_size}" + scale,
            "fig6": f"{p.steps} steps, {fig6.spec(p).pipedream_size}",
            "moe": f"{moe_hs} steps, {moe.spec(p).moe_size}"}.get(fig, "")


def status_cell(c: str, v: Verdict, needs: dict | None = None, waiting: dict | None = None) -> str:
    """The verdict column: the decision; for an inconclusive claim, why (docs/plan.md §2): undecidable
    at this scale (``needs[c]``: seeds_needed's row, over UNDECIDABLE_CPU_H or past its seed cap),
    waiting for a plan batch (``waiting[c]``: the batch), or resting on cells without 3 seeds."""
    if v.status != INCONCLUSIVE:
        return f"**{v.status}**"
    row = (needs or {}).get(c)
    if row and row.get("target") in (HOLDS, FAILS) and (row.get("n") is None or (row.get("cpu_h") or 0) > UNDECIDABLE_CPU_H):
        n = f"> {row['max_n']}" if row.get("n") is None else str(row["n"])
        h = "" if row.get("cpu_h") is None else f", {row['cpu_h']:.0f} CPU h"
        return f"**undecidable at this scale** (needs {n} seeds per cell{h})"
    if waiting and c in waiting:
        return f"**inconclusive** (more seeds in the plan's batch {waiting[c]})"
    if row and row.get("target") not in (HOLDS, FAILS):
        return ("**undecidable at this scale** (its measured effects decide nothing even with every cell "
                "seeded: an estimate on its boundary, or a confounded sweep)")
    return "**inconclusive**"


def c1_at_longest_horizon(gaps: dict) -> str:
    """What Figure 5's longest horizon shows for C1 (AdamW's gap minus Muon's), from ``gaps``
    {optimizer: [(horizon, per-seed gaps)]}: the difference of the means and, with 3 seeds or more
    each, its Welch 95 % interval; '' without both optimizers.

    >>> c1_at_longest_horizon({"adamw": [(6000, [0.01, 0.002])], "muon": [(6000, [-0.01, -0.01])]})
    'at 6000 steps (Figure 5): AdamW minus Muon +0.0160 (n = 2, 2 seeds: no own spread, not resolved)'
    """
    if not {"adamw", "muon"} <= set(gaps):
        return ""
    (h, a), (_, m) = gaps["adamw"][-1], gaps["muon"][-1]
    a, m = [x for x in a if math.isfinite(x)], [x for x in m if math.isfinite(x)]
    if not a or not m:
        return ""
    d = sum(a) / len(a) - sum(m) / len(m)
    head = f"at {h} steps (Figure 5): AdamW minus Muon {d:+.4f} (n = {len(a)}, {len(m)} seeds"
    if min(len(a), len(m)) < OWN_SD_MIN_N:
        return head + ": no own spread, not resolved)"
    va, vm = statistics.variance(a) / len(a), statistics.variance(m) / len(m)
    dof = (va + vm) ** 2 / (va ** 2 / (len(a) - 1) + vm ** 2 / (len(m) - 1)) if va + vm > 0 else math.inf
    half = t_quantile(0.975, dof) * math.sqrt(va + vm)
    return head + f"; 95 % interval [{d - half:+.4f}, {d + half:+.4f}])"


def table(final: dict[str, Verdict], p, needs: dict | None = None, waiting: dict | None = None,
          notes: dict | None = None) -> list[str]:
    """The one-screen confirmatory table: claim, the paper's number, ours (what the effect is, its
    estimate and interval, and ``notes[claim]``: e.g. C1 at the longest horizon), horizon, verdict."""
    rows = ["| | the paper's claim | paper's number | ours: the effect, its 95 % interval (n) | horizon, model | verdict |",
            "|---|---|---|---|---|---|"]
    for c in FAMILY:
        v = final[c.id]
        ours = v.test.effect() if v.test else "n/a"
        note = (notes or {}).get(c.id)
        rows.append(f"| {c.id} | {c.paper} | {c.paper_number} | {EFFECT[c.id]}: {fit(ours, page_link(c.figure, c.id))}"
                    f"{'; ' + note if note else ''} | {horizon(c.id, p)} | "
                    f"{status_cell(c.id, v, needs, waiting)} |")
    return rows


def first_screen(final: dict[str, Verdict], needs: dict | None = None, waiting: dict | None = None) -> list[str]:
    """The three sentences above the table: what holds, what does not, what cannot be decided and why."""
    def names(ids):
        return ", ".join(f"{c} ({CLAIMS_BY_ID[c].paper.split(' (')[0]})" for c in ids) or "none"
    holds = [c.id for c in FAMILY if final[c.id].status == HOLDS]
    fails = [c.id for c in FAMILY if final[c.id].status == FAILS]
    open_ = [c.id for c in FAMILY if final[c.id].status == INCONCLUSIVE]
    cells = {c: status_cell(c, final[c], needs, waiting) for c in open_}
    undecidable = [c for c in open_ if "undecidable" in cells[c]]
    planned = [c for c in open_ if "plan's batch" in cells[c]]
    rest = [c for c in open_ if c not in undecidable and c not in planned]
    why = []
    if undecidable:
        why.append(f"{', '.join(undecidable)} cannot be decided at this scale (each would need more than "
                   f"{UNDECIDABLE_CPU_H:.0f} CPU hours of runs at its measured effect, or its measured effects decide "
                   "nothing whatever the seeds)")
    if planned:
        why.append(f"{', '.join(planned)} wait for the sequential plan's next batches (docs/plan.md)")
    if rest:
        why.append(f"{', '.join(rest)} rest on cells with fewer than 3 seeds or are not yet resolved")
    return [f"**What holds here:** {names(holds)}.", "",
            f"**What does not hold here:** {names(fails)}.", "",
            "**What is not decided, and why:** " + ("; ".join(why) if why else "nothing") + ".", ""]


def fit(text: str, link: str, limit: int = 160) -> str:
    """``text`` whole when it fits in ``limit`` characters; else its first parts (split at '; ')
    that fit, then how many more there are and a link to where the cell is whole (a table cell is
    never cut with '...')."""
    if len(text) <= limit:
        return text
    parts, kept = text.split("; "), []
    for part in parts:
        if len("; ".join(kept + [part])) > limit - 40:
            break
        kept.append(part)
    more = len(parts) - len(kept)
    return "; ".join(kept + [f"{more} more: [whole on its figure's page]({link})"])


def summary_line(final: dict[str, Verdict]) -> str:
    count = {s: sum(v.status == s for v in final.values()) for s in (HOLDS, FAILS, INCONCLUSIVE)}
    return (f"{len(final)} confirmatory claims, decided with Holm at family-wise {ALPHA:.0%}: {count[HOLDS]} hold, "
            f"{count[FAILS]} do not hold, {count[INCONCLUSIVE]} inconclusive.")


def headline(gaps: dict) -> str:
    """What the gap does with the horizon at this scale, from Figure 5's cells: ``gaps``
    {optimizer: [(horizon, per-seed gaps)]}."""
    parts = []
    for o, pts in gaps.items():
        xs = [(h, [g for g in gs if math.isfinite(g)]) for h, gs in pts]
        if not all(gs for _, gs in xs):
            continue
        ms = " -> ".join(f"{sum(gs) / len(gs):+.3f}" for _, gs in xs)
        parts.append(f"{o}: {ms} (n={min(len(gs) for _, gs in xs)} seeds each)")
    if not parts:
        return ""
    hs = " / ".join(str(h) for h, _ in next(iter(gaps.values())))
    return (f"**Horizon at this scale:** the mean sync-async gap over {hs} steps (Figure 5, each horizon its own "
            f"cosine schedule): " + "; ".join(parts) + ". Every line below names its horizon: a verdict at "
            "1500 steps is about the gap at 1500 steps, not after longer training.")

"""The confirmatory family (docs/protocol.md §4): each claim of ``protocol.FAMILY`` computed
from its figure's runs, whichever figures an invocation shows, and decided with Holm's
step-down at family-wise ALPHA; the one-screen table REPORT.md opens with.

A claim's line is computed once, by the figure it belongs to (``claims(ctx)`` of that figure
module); a line of another figure that tests the same runs (Table 1's main-model "AdamW larger
than Muon" is Figure 3's C1) carries the same claim id and shows the same decision, counted once.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..figures import CATALOG, fig2_table2, fig5, fig6, grids, moe
from ..statistics.protocol import ALPHA, CLAIMS_BY_ID, FAMILY
from ..statistics.sequential import SPENDING, sequential_p
from ..statistics.t_tests import FAILS, HOLDS, INCONCLUSIVE, fmt_p, holm, holm_level, line_p
from ..statistics.verdicts import Evidence, Verdict, gate


def judge_family(ctx) -> dict[str, Verdict]:
    """{claim id: its line's per-line verdict} for every claim whose figure the profile runs
    (a figure without runs yields nothing; its claims are then missing)."""
    raw: dict[str, Verdict] = {}
    for fig in dict.fromkeys(c.figure for c in FAMILY):
        if not ctx.profile.runs_figure(fig):
            continue
        for v in CATALOG[fig].claims(ctx).values():
            if CLAIMS_BY_ID[v.claim].figure == fig:
                raw[v.claim] = v
    return raw


def decide(raw: dict[str, Verdict], meaningful: bool = True, alpha: float = ALPHA,
           earlier: Sequence[dict[str, Verdict]] = ()) -> dict[str, Verdict]:
    """Holm over the family at the plan's current look: {claim id: the decided verdict}.

    ``raw`` is the family at look k = len(``earlier``); ``earlier`` the families at looks
    0..k-1 (docs/plan.md §3). Each claim enters Holm with its sequential p-value
    p* = min_j p_j / f_j over its looks (``paper_figs.statistics.sequential``), its direction
    that of the look attaining it. A claim without a line enters with p = 1 (its figure did not
    run: the others' decisions can only be more conservative)."""
    looks = [*earlier, raw]

    def p_at(fam, c):
        return line_p(fam[c].test.p_eff) if c in fam and fam[c].test else 1.0
    seq = [sequential_p([p_at(f, c.id) for f in looks]) for c in FAMILY]
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
                f"{SPENDING[len(looks) - 1]:g}), rank {rank[j] + 1} of {len(ps)}, level {level:.3g}")
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


def table(final: dict[str, Verdict], p) -> list[str]:
    """The one-screen confirmatory table: claim, the paper's number, ours, horizon, verdict."""
    rows = ["| | the paper's claim | paper's number | ours: effect, 95 % interval (n) | horizon, model | verdict |",
            "|---|---|---|---|---|---|"]
    for c in FAMILY:
        v = final[c.id]
        ours = v.test.effect() if v.test else "n/a"
        rows.append(f"| {c.id} | {c.paper} | {c.paper_number} | {_short(ours)} | {horizon(c.id, p)} | "
                    f"**{v.status}** |")
    return rows


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


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

"""Figure 4: final sync-async gap as a function of the momentum, per optimizer.

``momentum`` is the trainer's knob for the primary momentum beta (AdamW's beta1, Muon's
momentum, Lion's beta1 ...; mu = 1 - beta in docs/design.md's notation). Claim: higher momentum
shrinks the gap.
"""
from __future__ import annotations

import math

from .. import paper_numbers as pn
from .. import plotting
from ..verdicts import combine, fmt, gap_shrinks_with, mean
from .common import GAP_LABEL, Context, FigureOutput, finals, paired, status_of, variant

NAME = "fig4"
TITLE = "Figure 4: final sync-async gap vs momentum"


def runs(p) -> list[dict]:
    return [variant(p, o, k, seed=s, momentum=m)
            for o in p.momentum_optimizers for m in p.momentum_grid for k in ("sync", "2bw")
            for s in p.seeds]


def build(ctx: Context) -> FigureOutput:
    p = ctx.profile
    out = FigureOutput(NAME, TITLE)
    gaps = {}
    for o in p.momentum_optimizers:
        for m in p.momentum_grid:
            r = {k: finals(ctx, [variant(p, o, k, seed=s, momentum=m) for s in p.seeds], out.missing)
                 for k in ("sync", "2bw")}
            gaps[o, m] = paired(r["sync"], r["2bw"])
    out.status = status_of(out.missing, len(gaps) * 2 * len(p.seeds))
    if out.status.startswith("not available"):
        return out
    fig, axes = plotting.new()
    ax = axes[0]
    parts = []
    rows = ["| optimizer | " + " | ".join(f"momentum {m}" for m in p.momentum_grid) + " |",
            "|" + "---|" * (1 + len(p.momentum_grid))]
    for o in p.momentum_optimizers:
        ys = [mean(gaps[o, m]) for m in p.momentum_grid]
        ax.plot(p.momentum_grid, ys, marker="o", label=plotting.label(o))
        rows.append(f"| {plotting.label(o)} | " + " | ".join(fmt(gaps[o, m]) for m in p.momentum_grid) + " |")
        parts.append(gap_shrinks_with(p.momentum_grid, ys, plotting.label(o)))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("momentum beta (primary; mu = 1 - beta)")
    ax.set_ylabel(GAP_LABEL)
    ax.set_title(f"Delay penalty vs momentum ({p.main_size} model, {p.steps} steps)")
    ax.legend()
    ax.grid(alpha=0.3)
    out.files = plotting.save(fig, ctx.fig_dir, "fig4_gap_vs_momentum")
    out.caption = "Final sync-async validation-loss gap against the momentum coefficient, per optimizer."
    out.paper = [pn.CLAIMS["momentum"]]
    out.measured = [f"Gap (nats/byte), {p.main_size} model, {p.steps} steps, learning rate at its preset:",
                    "", *rows]
    out.verdicts = {"higher momentum shrinks the gap": ctx.verdict(combine(parts, "momentum"))}
    out.notes = [v.reason for v in parts]
    return out

"""Figure 4: final sync-async gap as a function of the momentum, per optimizer.

``momentum`` is the trainer's knob for the primary momentum beta (AdamW's beta1, Muon's
momentum, Lion's beta1 ...; mu = 1 - beta in docs/design.md's notation). Claim: higher momentum
shrinks the gap.
"""
from __future__ import annotations

from lmo.presets import MU_MAPS_TO
from lmo.variants import SYNC, TWO_BW

from .. import paper_numbers as pn
from .. import plotting
from ..verdicts import combine, fmt, gap_shrinks_with, mean
from .common import GAP_LABEL, Context, FigureOutput, grid_figure, paired, sources, variant_grid

NAME = "fig4"
TITLE = "Figure 4: final sync-async gap vs momentum"


KINDS = (SYNC, TWO_BW)


def grid(p) -> dict:
    """{(optimizer, momentum, variant): [settings per seed]}."""
    return variant_grid(p, KINDS, {"optimizer": p.momentum_optimizers, "momentum": p.momentum_grid})


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    gaps = {cell: paired(r["sync"], r["2bw"]) for cell, r in res.items()}
    fig, (ax, ax_sync) = plotting.new(ncols=2)
    one_minus = [1 - m for m in p.momentum_grid]   # mu = 1 - beta: log axis, momentum grows to the right
    parts = []
    rows = ["| optimizer | " + " | ".join(f"momentum {m}" for m in p.momentum_grid) + " |",
            "|" + "---|" * (1 + len(p.momentum_grid))]
    for o in p.momentum_optimizers:
        ys = [mean(gaps[o, m]) for m in p.momentum_grid]
        line = ax.plot(one_minus, ys, marker="o", label=plotting.label(o))[0]
        err = plotting.seed_errorbars([gaps[o, m] for m in p.momentum_grid])
        if err:
            ax.errorbar(one_minus, ys, yerr=err["yerr"], fmt="none", ecolor=line.get_color(), capsize=3)
        ax_sync.plot(one_minus, [mean(res[o, m]["sync"]) for m in p.momentum_grid], marker="o",
                     color=line.get_color(), label=plotting.label(o))
        rows.append(f"| {plotting.label(o)} | " + " | ".join(fmt(gaps[o, m]) for m in p.momentum_grid) + " |")
        parts.append(gap_shrinks_with(p.momentum_grid, [gaps[o, m] for m in p.momentum_grid], plotting.label(o),
                                      noise=ctx.noise_for(o)))
    ax.axhline(0, color="black", linewidth=0.8)
    for a in (ax, ax_sync):
        a.set_xscale("log")
        a.invert_xaxis()
        a.set_xticks(one_minus)
        a.set_xticklabels([f"{m}" for m in p.momentum_grid])
        a.minorticks_off()
        a.set_xlabel("momentum beta (log scale in mu = 1 - beta)")
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    ax.set_ylabel(GAP_LABEL)
    ax.set_title(f"Delay penalty vs momentum ({p.main_size} model, {p.steps} steps)\n"
                 "paper: the gap falls as the momentum rises", fontsize=10)
    ax_sync.set_ylabel("synchronous run's final loss (nats/byte)")
    ax_sync.set_title("The synchronous run's own final loss\n(same preset lr at every momentum)", fontsize=10)
    out.files = plotting.save(fig, ctx.fig_dir, "fig4_gap_vs_momentum")
    out.caption = ("Left: final sync-async validation-loss gap against the momentum coefficient, per "
                   f"optimizer ({len(p.seeds)} seed(s) per point; whiskers = std over seeds where there are "
                   "several). Right: the synchronous run's own final loss. x: log scale in 1 - beta. The "
                   "paper's claim: the gap falls as the momentum rises.")
    out.paper = [pn.CLAIMS["momentum"]]
    src = sources(ctx, [s for ss in g.values() for s in ss])
    out.measured = [f"Gap (nats/byte), {p.main_size} model, {p.steps} steps, {len(p.seeds)} seed(s), "
                    f"learning rate at its preset; runs from: {src}. The paper gives no numbers for "
                    "this figure, only the trend.", "", *rows]
    sync_rows = [f"| {plotting.label(o)} | " + " | ".join(fmt(res[o, m]["sync"]) for m in p.momentum_grid) + " |"
                 for o in p.momentum_optimizers]
    out.measured += ["", "The synchronous run's own final loss at each momentum (a gap next to a sync run "
                     "that got worse says the preset lr no longer suits that momentum):", "",
                     rows[0], rows[1], *sync_rows]
    seeds = "one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds"
    out.verdicts = {f"higher momentum shrinks the gap (absolute gap, lr at its preset, {seeds})":
                    ctx.verdict(combine(parts, "momentum"))}
    out.notes = [v.reason for v in parts]
    out.notes.append("The momentum swept (the reading this figure tests): "
                     + "; ".join(f"{plotting.label(o)}: {MU_MAPS_TO[o]}" for o in p.momentum_optimizers)
                     + ". Lion's betas[0] weights the update's interpolation; its momentum buffer decays "
                     "at betas[1], which stays at its preset, so a reading of Lion's 'momentum decay' as "
                     "betas[1] is not tested here.")
    return out


build = grid_figure(NAME, TITLE, grid, _render)

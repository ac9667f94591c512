"""Figure 5: final validation loss across training horizons (sync, delay, delay + EF).

Each horizon is its own run with its own cosine schedule (as the paper's scaling curves).
Claims: the gap does not grow with the horizon; EF reduces the remaining gap at every
horizon. Doubles as the horizon check of Figure 3: is AdamW's gap much larger than
Muon's at every horizon, or does a longer run reverse the verdict?
"""
from __future__ import annotations

from .. import paper_numbers as pn
from .. import plotting
from ..verdicts import (FAILS, HOLDS, INCONCLUSIVE, Verdict, combine, fmt, larger_gap, lower_is_better, mean,
                        much_larger_gap, no_growth)
from .common import LOSS_LABEL, VARIANTS, Context, FigureOutput, cell_sources, grid_figure, paired, variant_grid

NAME = "fig5"
TITLE = "Figure 5: sync, delayed and delayed+EF final loss across training horizons"


def grid(p) -> dict:
    """{(optimizer, horizon, variant): [settings per seed]}."""
    return variant_grid(p, VARIANTS, {"optimizer": p.horizon_optimizers, "steps": p.horizons},
                        seeds=p.horizon_seeds)


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    fig, axes = plotting.new(ncols=len(p.horizon_optimizers))
    growth, ef_parts = [], []
    rows = ["| optimizer | horizon (steps) | sync | async | async + EF | gap | runs from |",
            "|---|---|---|---|---|---|---|"]
    for ax, o in zip(axes, p.horizon_optimizers):
        for k in VARIANTS:
            ys = [mean(res[o, h][k]) for h in p.horizons]
            ax.plot(p.horizons, ys, marker="o", **plotting.VARIANT_STYLE[k])
            err = plotting.seed_errorbars([res[o, h][k] for h in p.horizons])
            if err:
                ax.errorbar(p.horizons, ys, yerr=err["yerr"], fmt="none",
                            ecolor=plotting.VARIANT_STYLE[k]["color"], capsize=3)
        ax.set_xscale("log")
        ax.set_xticks(list(p.horizons))
        ax.set_xticklabels([str(h) for h in p.horizons])
        ax.set_xlabel("training horizon (steps, one cosine schedule each)")
        ax.set_ylabel("final " + LOSS_LABEL)
        ax.set_title(f"{plotting.label(o)} ({p.main_size} model{plotting.seeds_note(len(p.horizon_seeds))})\n"
                     "paper: the curves stay parallel", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        gaps = [paired(res[o, h]["sync"], res[o, h]["2bw"]) for h in p.horizons]
        growth.append(no_growth(p.horizons, gaps, plotting.label(o), noise=ctx.noise_for(o)))
        for h in p.horizons:
            r = res[o, h]
            rows.append(f"| {plotting.label(o)} | {h} | {fmt(r['sync'])} | {fmt(r['2bw'])} | "
                        f"{fmt(r['ef'])} | {fmt(paired(r['sync'], r['2bw']))} | "
                        f"{cell_sources(ctx, g, (o, h), VARIANTS)} |")
            ef_parts.append(lower_is_better(r["ef"], r["2bw"], f"{plotting.label(o)} at {h} steps", noise=ctx.noise_for(o)))
    out.files = plotting.save(fig, ctx.fig_dir, "fig5_horizons")
    out.caption = ("Final validation loss against the training horizon for sync, delayed and delayed+EF "
                   f"runs ({len(p.horizon_seeds)} seed(s); whiskers = std over seeds where there are several). "
                   "The paper's claim: the curves stay parallel (the gap does not grow).")
    out.paper = [pn.CLAIMS["horizon"]]
    out.measured = [f"{p.main_size} model, final validation loss (nats/byte); the paper gives no numbers "
                    "for this figure, only the trend:", "", *rows]
    out.verdicts = {
        "the gap does not grow with the horizon (longest vs shortest horizon: growth + 2 SE below half "
        "the first gap), AdamW and Muon": ctx.verdict(combine(growth, "no growth")),
        "EF reduces the remaining gap at every horizon (final loss, EF below async beyond 2 SE)":
            ctx.verdict(combine(ef_parts, "EF"))}
    if {"adamw", "muon"} <= set(p.horizon_optimizers):
        per_h, larger_h = {}, []
        pair = (ctx.noise_for("adamw"), ctx.noise_for("muon"))
        for h in p.horizons:
            a, m = res["adamw", h], res["muon", h]
            ga, gm = paired(a["sync"], a["2bw"]), paired(m["sync"], m["2bw"])
            per_h[h] = much_larger_gap(ga, gm, noise=pair)
            v = larger_gap(ga, gm, noise=pair)
            larger_h.append(Verdict(v.status, f"{h} steps: {v.reason}"))
        out.notes.append("Horizon check of Figure 3's verdict (AdamW gap much larger than Muon's): "
                         + "; ".join(f"{h} steps: {v.status} ({v.reason})" for h, v in per_h.items()))
        seeds = "one seed" if len(p.horizon_seeds) == 1 else f"{len(p.horizon_seeds)} seeds"
        out.verdicts[f"horizon check: AdamW's gap at least 3x Muon's, resolved, at every horizon ({seeds} "
                     "per horizon)"] = ctx.verdict(horizon_check({h: v.status for h, v in per_h.items()}))
        out.verdicts[f"horizon check: AdamW's gap larger than Muon's beyond 2 SE at every horizon ({seeds} "
                     "per horizon)"] = ctx.verdict(combine(larger_h, "AdamW larger"))
        out.notes += [v.reason for v in larger_h]
    out.notes += [v.reason for v in growth]
    return out


def horizon_check(status_of: dict) -> Verdict:
    """Figure 3's verdict per horizon -> does it survive longer training? Only resolved
    horizons (holds / does not hold) count: two of them that differ -> does not hold; any
    unresolved horizon (missing runs, within the noise) -> inconclusive, never a reversal."""
    resolved = {h: s for h, s in status_of.items() if s in (HOLDS, FAILS)}
    listing = ", ".join(f"{h} steps: {s}" for h, s in status_of.items())
    if len(set(resolved.values())) > 1:
        return Verdict(FAILS, "the verdict changes with the horizon: " + listing)
    if len(resolved) < len(status_of):
        return Verdict(INCONCLUSIVE, "not every horizon is resolved: " + listing)
    return Verdict(HOLDS, f"same verdict ({next(iter(resolved.values()))}) at every horizon")


build = grid_figure(NAME, TITLE, grid, _render)

"""Figure 5: final validation loss across training horizons (sync, delay, delay + EF).

Each horizon is its own run with its own cosine schedule (as the paper's scaling curves).
Claims: the gap does not grow with the horizon; EF reduces the remaining gap at every
horizon. Doubles as the horizon check of Figure 3: is AdamW's gap much larger than
Muon's at every horizon, or does a longer run reverse the verdict?
"""
from __future__ import annotations

from dataclasses import dataclass
import math

from lmo.variants import SYNC, TWO_BW

from ..statistics import paper_numbers as pn
from . import plotting
from ..statistics.protocol import M_SMALLEST
from ..statistics.verdicts import FAILS, HOLDS, INCONCLUSIVE, Verdict, combine, fmt, larger_gap, lower_is_better, mean, much_larger_gap, no_growth
from .common import LOSS_LABEL, VARIANTS, Context, FigureOutput, cell_sources, grid_claims, grid_figure, paired, spec_of, tag, variant_grid
from .grids import shared

NAME = "fig5"
TITLE = "Figure 5: sync, delayed and delayed+EF final loss across training horizons"



@dataclass(frozen=True)
class Spec:
    """Figure 5's knobs: its seeds and optimizers (its horizons are shared with the MoE figure,
    ``grids.Shared.horizons``); the second model size, its horizons (() off) and seeds: does the
    gap's change with the horizon depend on scale?"""

    horizon_seeds: tuple = (0,)        # Figure 5 (and its horizon check of Figure 3's verdict)
    horizon_optimizers: tuple = ("adamw", "muon")
    scale_size: str = "small"
    scale_horizons: tuple = ()
    scale_seeds: tuple = ()


_FULL = Spec(horizon_seeds=(0, 1), scale_horizons=(1500, 3000), scale_seeds=(0, 1, 2))
SPECS = {"full": _FULL, "quick": _FULL, "gpu": Spec(), "micro": Spec(scale_horizons=(4, 8), scale_seeds=(0,))}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


SCALE = "scale"   # cells (SCALE, optimizer, horizon, variant): sync and 2BW on ``scale_size``


def grid(p) -> dict:
    """{(optimizer, horizon, variant): [settings per seed]}, and {(SCALE, optimizer, horizon,
    variant): ...} on the second size (``s.scale_horizons`` at ``s.scale_seeds``, sync and 2BW)."""
    s = spec(p)
    g = variant_grid(p, VARIANTS, {"optimizer": s.horizon_optimizers, "steps": shared(p).horizons},
                     seeds=s.horizon_seeds)
    if s.scale_horizons:
        for key, runs in variant_grid(p, (SYNC, TWO_BW),
                                      {"optimizer": s.horizon_optimizers, "steps": s.scale_horizons},
                                      seeds=s.scale_seeds, config=s.scale_size).items():
            g[(SCALE, *key)] = runs
    return g


def scale_line(p) -> str:
    s = spec(p)
    return (f"{s.scale_size} model: the gap does not grow from {s.scale_horizons[0]} to {s.scale_horizons[-1]} steps "
            f"(growth below {M_SMALLEST:.2%} of the sync loss), AdamW and Muon (exploratory: does the main model's "
            "shrinking gap depend on scale?)")


def _scale(ctx: Context, out: FigureOutput, res: dict) -> None:
    """The second size's cells: table and an exploratory no-growth line."""
    p = ctx.profile
    s = spec(p)
    if not s.scale_horizons:
        return
    rows = ["| optimizer | horizon (steps) | sync | async | gap |", "|---|---|---|---|---|"]
    parts = []
    for o in s.horizon_optimizers:
        cells = {h: res[SCALE, o, h] for h in s.scale_horizons}
        for h, r in cells.items():
            rows.append(f"| {plotting.label(o)} | {h} | {fmt(r['sync'])} | {fmt(r['2bw'])} | "
                        f"{fmt(paired(r['sync'], r['2bw']))} |")
        margin = M_SMALLEST * mean(cells[s.scale_horizons[0]]["sync"])
        gaps = [paired(cells[h]["sync"], cells[h]["2bw"]) for h in s.scale_horizons]
        if math.isfinite(margin):
            parts.append(no_growth(s.scale_horizons, gaps, plotting.label(o), ctx.noise_for(o, s.scale_size), margin))
    out.measured += ["", f"{s.scale_size} model at {', '.join(map(str, s.scale_horizons))} steps "
                     f"({len(s.scale_seeds)} seeds; sync and 2BW), the same question on a larger model:", "", *rows]
    v = combine(parts, "no growth") if parts else Verdict(INCONCLUSIVE, "missing runs")
    out.verdicts[scale_line(p)] = ctx.verdict(v)
    out.notes += [f"{s.scale_size} model: " + x.reason for x in parts]


def growth_line(p) -> str:
    sh = shared(p)
    return (f"the gap does not grow with the horizon ({sh.horizons[0]} -> {sh.horizons[-1]} steps: growth below "
            f"{M_SMALLEST:.2%} of the sync loss, one-sided), AdamW and Muon")


def ef_line(p) -> str:
    hs = ", ".join(map(str, shared(p).horizons))
    return f"EF reduces the remaining gap at every horizon ({hs} steps; EF below async)"


def judge(ctx: Context, res: dict) -> dict:
    """C10: per optimizer the gap's growth from the shortest to the longest horizon below
    M_SMALLEST x the sync loss at the shortest (non-inferiority), every optimizer; C11: EF
    below async at every horizon and optimizer."""
    p = ctx.profile
    sh = shared(p)
    growth, ef_parts = [], []
    for o in spec(p).horizon_optimizers:
        gaps = [paired(res[o, h]["sync"], res[o, h]["2bw"]) for h in sh.horizons]
        margin = M_SMALLEST * mean(res[o, sh.horizons[0]]["sync"])
        growth.append(no_growth(sh.horizons, gaps, plotting.label(o), ctx.noise_for(o), margin))
        ef_parts += [lower_is_better(res[o, h]["ef"], res[o, h]["2bw"], f"{plotting.label(o)} at {h} steps",
                                     ctx.noise_for(o)) for h in sh.horizons]
    return {growth_line(p): tag(combine(growth, "no growth"), "C10"),
            ef_line(p): tag(combine(ef_parts, "EF below async"), "C11")}


def claims(ctx: Context) -> dict:
    """Figure 5's confirmatory lines (C10, C11), measured without drawing."""
    return grid_claims(ctx, grid, judge)


def horizon_gaps(ctx: Context) -> dict:
    """{optimizer: [(horizon, per-seed gaps)]} of Figure 5's cells (the report's headline)."""
    p = ctx.profile
    res = {}
    for key, ss in grid(p).items():
        if key[0] != SCALE and key[-1] in (SYNC, TWO_BW):
            res.setdefault(key[:2], {})[key[-1]] = [ctx.get(s).final if ctx.get(s).ok else float("nan") for s in ss]
    hs = shared(p).horizons
    return {o: [(h, paired(res[o, h]["sync"], res[o, h]["2bw"])) for h in hs] for o in spec(p).horizon_optimizers}


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    sh = shared(p)
    s = spec(p)
    fig, axes = plotting.new(ncols=len(s.horizon_optimizers))
    rows = ["| optimizer | horizon (steps) | sync | async | async + EF | gap | runs from |",
            "|---|---|---|---|---|---|---|"]
    for ax, o in zip(axes, s.horizon_optimizers):
        for k in VARIANTS:
            ys = [mean(res[o, h][k]) for h in sh.horizons]
            ax.plot(sh.horizons, ys, marker="o", **plotting.VARIANT_STYLE[k])
            err = plotting.seed_errorbars([res[o, h][k] for h in sh.horizons])
            if err:
                ax.errorbar(sh.horizons, ys, yerr=err["yerr"], fmt="none",
                            ecolor=plotting.VARIANT_STYLE[k]["color"], capsize=3)
        ax.set_xscale("log")
        ax.set_xticks(list(sh.horizons))
        ax.set_xticklabels([str(h) for h in sh.horizons])
        ax.set_xlabel("training horizon (steps, one cosine schedule each)")
        ax.set_ylabel("final " + LOSS_LABEL)
        ax.set_title(f"{plotting.label(o)} ({p.main_size} model{plotting.seeds_note(len(s.horizon_seeds))})\n"
                     "paper: the curves stay parallel", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        for h in sh.horizons:
            r = res[o, h]
            rows.append(f"| {plotting.label(o)} | {h} | {fmt(r['sync'])} | {fmt(r['2bw'])} | "
                        f"{fmt(r['ef'])} | {fmt(paired(r['sync'], r['2bw']))} | "
                        f"{cell_sources(ctx, g, (o, h), VARIANTS)} |")
    out.files = plotting.save(fig, ctx.fig_dir, "fig5_horizons")
    out.caption = ("Final validation loss against the training horizon for sync, delayed and delayed+EF "
                   f"runs ({len(s.horizon_seeds)} seed(s); whiskers = std over seeds where there are several). "
                   "The paper's claim: the curves stay parallel (the gap does not grow).")
    out.paper = [pn.CLAIMS["horizon"]]
    out.measured = [f"{p.main_size} model, final validation loss (nats/byte); the paper gives no numbers "
                    "for this figure, only the trend:", "", *rows]
    judged = judge(ctx, res)
    out.verdicts = {k: ctx.verdict(v) for k, v in judged.items()}
    growth = list(judged[growth_line(p)].test.parts)
    out.notes += ["EF below async: " + v.reason for v in judged[ef_line(p)].test.parts]
    if {"adamw", "muon"} <= set(s.horizon_optimizers):
        per_h, larger_h = {}, []
        pair = (ctx.noise_for("adamw"), ctx.noise_for("muon"))
        for h in sh.horizons:
            a, m = res["adamw", h], res["muon", h]
            ga, gm = paired(a["sync"], a["2bw"]), paired(m["sync"], m["2bw"])
            per_h[h] = much_larger_gap(ga, gm, noise=pair)
            v = larger_gap(ga, gm, noise=pair)
            larger_h.append(Verdict(v.status, f"{h} steps: {v.reason}", v.test))
        out.notes.append("Horizon check of Figure 3's verdict (AdamW gap much larger than Muon's): "
                         + "; ".join(f"{h} steps: {v.status} ({v.reason})" for h, v in per_h.items()))
        seeds = "one seed" if len(s.horizon_seeds) == 1 else f"{len(s.horizon_seeds)} seeds"
        out.verdicts[f"horizon check: AdamW's gap at least 3x Muon's at every horizon ({seeds} "
                     "per horizon; exploratory)"] = ctx.verdict(horizon_check({h: v.status for h, v in per_h.items()}))
        out.verdicts[f"horizon check: AdamW's gap larger than Muon's at every horizon ({seeds} "
                     "per horizon; exploratory)"] = ctx.verdict(combine(larger_h, "AdamW larger"))
        out.notes += [v.reason for v in larger_h]
    out.notes += [v.reason for v in growth]
    _scale(ctx, out, res)
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

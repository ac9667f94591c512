"""Figure 6: sync vs PipeDream-2BW (constant one-step delay) vs original PipeDream (variable delay).

Original PipeDream with P stages: stage s's parameters see delay tau_s = P - 1 - s.
Claim: the constant delay is more stable (lower final loss) than the variable one. Needs
P >= 3 to mean anything: at P = 2 PipeDream's delays (1, 0) are *smaller* than 2BW's (1, 1),
so the CPU profiles use the 4-layer ``small`` model at P = 4 (delays 3, 2, 1, 0).
"""
from __future__ import annotations

from dataclasses import dataclass

from lmo.variants import PIPEDREAM, SYNC, TWO_BW

from ..statistics import paper_numbers as pn
from . import plotting
from ..statistics.verdicts import combine, fmt, lower_is_better
from .common import Context, FigureOutput, cell_sources, curve_panel, grid_claims, grid_figure, paired, spec_of, tag, variant_grid

NAME = "fig6"
TITLE = "Figure 6: sync vs PipeDream-2BW (constant delay) vs PipeDream (variable delay)"
KINDS = (SYNC, TWO_BW, PIPEDREAM)



@dataclass(frozen=True)
class Spec:
    """Figure 6's knobs: its optimizers, model and PipeDream's stage count P (stages <= layers:
    tiny has 2, small 4, with delays 3, 2, 1, 0 at P = 4)."""

    pipedream_optimizers: tuple = ("adamw", "muon")
    pipedream_size: str = "small"
    pipedream_stages: int = 4
    # the sequential plan's seeds (docs/plan.md): added to the 2BW and PipeDream runs (C12's pair)
    extra_seeds: tuple = ()


SPECS = {"full": Spec(), "quick": Spec(), "gpu": Spec(pipedream_size="135m", pipedream_stages=8),
         "micro": Spec(pipedream_optimizers=("adamw",), pipedream_stages=2, pipedream_size="tiny")}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


def grid(p) -> dict:
    """{(optimizer, kind): [settings per seed]}."""
    s = spec(p)
    g = variant_grid(p, KINDS, {"optimizer": s.pipedream_optimizers}, at={PIPEDREAM: s.pipedream_stages},
                     config=s.pipedream_size)
    extra = variant_grid(p, (TWO_BW, PIPEDREAM), {"optimizer": s.pipedream_optimizers}, seeds=s.extra_seeds,
                         at={PIPEDREAM: s.pipedream_stages}, config=s.pipedream_size) if s.extra_seeds else {}
    return {k: v + extra.get(k, []) for k, v in g.items()}


def line(p) -> str:
    stages = spec(p).pipedream_stages
    return (f"constant delay beats variable delay (final loss, 2BW below PipeDream with P = {stages}, "
            "every optimizer)")


def judge(ctx: Context, res: dict) -> dict:
    """C12: per optimizer 2BW's final loss below PipeDream's (paired), every optimizer."""
    p = ctx.profile
    s = spec(p)
    parts = [lower_is_better(res[o]["2bw"], res[o]["pipedream"], f"{plotting.label(o)} 2BW vs PipeDream",
                             noise=ctx.noise_for(o, s.pipedream_size)) for o in s.pipedream_optimizers]
    return {line(p): tag(combine(parts, "constant delay"), "C12")}


def claims(ctx: Context) -> dict:
    """Figure 6's confirmatory line (C12), measured without drawing."""
    return grid_claims(ctx, grid, judge)


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    s = spec(p)
    opts = s.pipedream_optimizers
    fig, axes = plotting.new(ncols=len(opts))
    rows = ["| optimizer | sync | PipeDream-2BW | PipeDream | gap 2BW | gap PipeDream | runs from |",
            "|---|---|---|---|---|---|---|"]
    for ax, o in zip(axes, opts):
        curve_panel(ctx, ax, g, o, KINDS,
                    f"{plotting.label(o)} ({s.pipedream_size} model, PipeDream P={s.pipedream_stages}"
                    f"{plotting.seeds_note(len(p.seeds))})\npaper: constant delay (2BW) beats "
                    "variable delay (PipeDream)")
        r = res[o]
        rows.append(f"| {plotting.label(o)} | {fmt(r['sync'])} | {fmt(r['2bw'])} | {fmt(r['pipedream'])} | "
                    f"{fmt(paired(r['sync'], r['2bw']))} | {fmt(paired(r['sync'], r['pipedream']))} | "
                    f"{cell_sources(ctx, g, o, KINDS)} |")
    out.files = plotting.save(fig, ctx.fig_dir, "fig6_pipedream")
    out.caption = (f"Validation loss: synchronous, constant one-step delay (2BW) and PipeDream's "
                   f"per-stage delay P-1-s with P={s.pipedream_stages} stages.")
    out.paper = [pn.CLAIMS["constant_delay"],
                 pn.AJANTHAN_16_STAGES.source + "."]
    out.measured = [f"Final validation loss (nats/byte), {s.pipedream_size} model, {p.steps} steps:", "", *rows]
    judged = judge(ctx, res)
    out.verdicts = {k: ctx.verdict(v) for k, v in judged.items()}
    out.notes = [v.reason for v in judged[line(p)].test.parts]
    return out


build = grid_figure(NAME, TITLE, grid, _render)

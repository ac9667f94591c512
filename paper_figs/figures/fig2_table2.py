"""Figure 2 + Table 2: the gap under mitigations, and the fraction of it each recovers.

Mitigations of a one-step-delayed run: synchronous start (first 10 % of steps sync),
synchronous cool-down (last 10 %), DC-ASGD (g + lambda g*g*(x_t - x_{t-1}), lambda 0.04:
this package's choice, the summary gives none), and error feedback. Recovered fraction
= (L_async - L_mitigated) / (L_async - L_sync). The sensitivity reading (each mitigation's
window / lambda swept) is ``fig2_sweep``.
"""
from __future__ import annotations

import math

from lmo.variants import EF, SYNC, TWO_BW

from .. import paper_numbers as pn
from .. import plotting
from ..verdicts import both, combine, ef_recovers, fmt, lower_is_better, mean, most, negate
from . import fig2_sweep
from .common import (MITIGATION_KINDS, Context, FigureOutput, cell_sources, grid_claims, grid_figure, lr_mult, paired,
                     pct, recovered, tag, variant_grid)

NAME = "fig2_table2"
TITLE = "Figure 2 + Table 2: the sync-async gap under staleness mitigations"
MITIGATIONS = (*MITIGATION_KINDS, EF)
KINDS = (SYNC, TWO_BW) + MITIGATIONS
ROBUST = ("muon", "adamuon", "soap", "normuon", "mars", "adamw")  # the claim's optimizers
EF_HURTS = ("adan", "nadam")  # "EF slightly hurts Adan and NAdam" (summary, limitations)


def main_grid(p) -> dict:
    """{(optimizer, kind): [settings per seed]}: Figure 2 / Table 2 proper."""
    return variant_grid(p, KINDS, {"optimizer": p.mitigation_optimizers}, config=p.mitigation_size)


def grid(p) -> dict:
    """:func:`main_grid`, and the sensitivity reading's cells (``fig2_sweep.grid``)."""
    g = main_grid(p)
    g.update(fig2_sweep.grid(p))
    return g


def _paper_ef(o: str) -> str:
    """The paper's EF recovery for ``o``: its own number, else the range its group is given."""
    num = pn.EF_RECOVERY.get(o)
    if num is not None:
        return f"{num.value:.0%}"
    for group, (lo, hi, _) in pn.EF_RECOVERY_RANGES.items():
        if "(" in group and o in group[group.index("(") + 1:group.rindex(")")].split(", "):
            return f"{lo:.0%}-{hi:.0%} ({group.split(' ')[0]} group)"
    return "not given (said to hurt slightly)" if o in ("adan", "nadam") else "not given"


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    render(ctx, out, g, res, "fig2_mitigations", "at the preset lrs", confirmatory=True)
    fig2_sweep.render(ctx, out, res)
    p = ctx.profile
    if set(p.mitigation_optimizers) != set(pn.GAPS):
        out.notes.append("Optimizers not run in this profile: "
                         + ", ".join(plotting.label(o) for o in pn.GAPS if o not in p.mitigation_optimizers) + ".")
    return out


CAPTION = ("Figure 2's caption: for most optimizers EF recovers >= 50 % of the gap and beats "
           "synchronous start")
HURTS = "EF slightly hurts Adan and NAdam (final loss above plain async)"
LIMITED = ("sync start, sync cool-down, DC-ASGD: limited or inconsistent (for each, not most optimizers "
           "recover >= 50 %)")


def judge(ctx: Context, res: dict, g: dict, confirmatory: bool = True) -> dict:
    """Figure 2's verdict lines from ``res[o][kind]`` (ungated); every variant borrows the
    spread of its sync run's lr. ``confirmatory``: tag C6 (the caption), C7 (EF hurts Adan and
    NAdam), C8 (limited); else every line is exploratory."""
    p = ctx.profile
    opts = [o for o in p.mitigation_optimizers if o in res]
    ef_v, beat_v, caption_v, hurt_v = [], [], [], []
    limited = {k: [] for k in MITIGATION_KINDS}
    for o in opts:
        r, name = res[o], plotting.label(o)
        nz = ctx.noise_for(o, p.mitigation_size, lr_mult(g[(o, SYNC)][0]))   # every variant at the sync run's lr
        recovers = ef_recovers(r["sync"], r["2bw"], r["ef"], name, noise=nz)[0]
        beats = lower_is_better(r["ef"], r["sync_start"], f"{name} EF vs sync start", noise=nz)
        if o in ROBUST:
            ef_v.append(recovers)
        beat_v.append(beats)
        caption_v.append(both(recovers, beats, name))
        if o in EF_HURTS:
            hurt_v.append(lower_is_better(r["2bw"], r["ef"], f"{name} async vs async + EF", noise=nz))
        for k in MITIGATION_KINDS:
            limited[k].append(ef_recovers(r["sync"], r["2bw"], r[k], name,
                                          by=plotting.VARIANT_STYLE[k]["label"], noise=nz)[0])
    limited_v = [negate(most(v, ">= 50 % recovered"), plotting.VARIANT_STYLE[k]["label"])
                 for k, v in limited.items()]
    mark = (lambda v, c: tag(v, c)) if confirmatory else (lambda v, c: v)
    return {
        CAPTION: mark(most(caption_v, "both, per optimizer"), "C6"),
        "EF recovers >= 50 % of the gap (every optimizer the summary's ranges name)": combine(ef_v, "EF recovers"),
        "EF beats synchronous start, every optimizer (stricter than the caption's 'most')":
            combine(beat_v, "EF beats sync start"),
        HURTS: mark(combine(hurt_v, "EF hurts"), "C7"),
        LIMITED: mark(combine(limited_v, "limited effect"), "C8"),
    }


def claims(ctx: Context) -> dict:
    """Figure 2's confirmatory lines (C6, C7, C8), measured without drawing (the sweep's
    cells are the sensitivity reading's, not the family's)."""
    return grid_claims(ctx, main_grid, lambda c, res: judge(c, res, main_grid(c.profile)))


def render(ctx: Context, out: FigureOutput, g: dict, res: dict, stem: str, lrs: str,
           confirmatory: bool = False) -> FigureOutput:
    """Figure 2's bars (saved as ``stem``), Table 2 and the verdicts, from ``res[o][kind]``
    (final losses per seed); ``lrs`` says in the title which lrs the runs train at;
    ``confirmatory``: the preset-lr reading's lines are the family's (C6-C8)."""
    p = ctx.profile
    opts = [o for o in p.mitigation_optimizers if o in res]
    fig, axes = plotting.new(width=max(5.0, 1.2 * len(opts) + 2))
    ax = axes[0]
    kinds = ("2bw",) + MITIGATIONS
    w = 0.8 / len(kinds)
    for i, k in enumerate(kinds):
        per_seed = [paired(res[o]["sync"], res[o][k]) for o in opts]
        gaps = [mean(x) for x in per_seed]
        xs = [j + (i - (len(kinds) - 1) / 2) * w for j in range(len(opts))]
        style = plotting.VARIANT_STYLE[k]
        ax.bar(xs, [v if math.isfinite(v) else 0 for v in gaps], width=w, color=style["color"],
               label=style["label"], **plotting.seed_errorbars(per_seed))
    ax.axhline(0, color="black", linewidth=0.8)
    # symmetric log: a 0.02 gap stays readable beside MARS's 0.2 (linear within +-0.01)
    ax.set_yscale("symlog", linthresh=0.01, linscale=0.5)
    lo, hi = ax.get_ylim()
    ax.set_ylim(min(lo, -0.02), 2 * hi)   # headroom above the tallest bar (log part of the axis)
    ax.set_xticks(range(len(opts)))
    ax.set_xticklabels([plotting.label(o) for o in opts], rotation=30)
    ax.set_xlabel("optimizer")
    ax.set_ylabel("final loss minus synchronous (nats/byte)")
    ax.set_title(f"Gap under mitigations ({p.mitigation_size} model, {p.steps} steps, {lrs})\n"
                 "paper: EF recovers 50-90 %, beats sync start", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))   # beside the bars, never on them
    ax.grid(alpha=0.3, axis="y")
    out.files = plotting.save(fig, ctx.fig_dir, stem)
    out.caption = ("Final validation loss minus the synchronous run's, for plain one-step delay "
                   "and each mitigation (lower is better; 0 = synchronous quality; symmetric-log axis, "
                   f"linear within +-0.01; {len(p.seeds)} seed(s) per bar, whiskers = std over seeds "
                   "where there are several).")
    head = "| optimizer | sync | async | " + " | ".join(plotting.VARIANT_STYLE[k]["label"] for k in MITIGATIONS)
    rows = [head + " | paper: EF recovers | runs from |", "|" + "---|" * (5 + len(MITIGATIONS))]
    for o in opts:
        r = res[o]
        cells = [f"{fmt(r[k])} (recovers {pct(recovered(r, r[k]))})" for k in MITIGATIONS]
        rows.append(f"| {plotting.label(o)} | {fmt(r['sync'])} | {fmt(r['2bw'])} | " + " | ".join(cells)
                    + f" | {_paper_ef(o)} | {cell_sources(ctx, g, o, KINDS)} |")
    out.measured = [f"Table 2 at this scale: final validation loss (nats/byte), {p.mitigation_size} model, "
                    f"{p.steps} steps; 'recovers' = fraction of the sync-async gap recovered.", "", *rows]
    out.paper = [pn.CLAIMS["ef_recovers"], pn.CLAIMS["ef_beats_sync_start"],
                 "Table 2's individual numbers (360M): not given in the summary."]
    judged = judge(ctx, res, g, confirmatory)
    out.verdicts = {k: ctx.verdict(v) for k, v in judged.items()}
    out.notes = [part.reason for v in judged.values() for part in (v.test.parts if v.test else ())]
    out.notes.append(f"Sync start / cool-down: first / last {p.sync_start_frac:.0%} / "
                     f"{p.sync_cooldown_frac:.0%} of steps synchronous; DC-ASGD lambda {p.dc_asgd} "
                     "(this package's choices; the summary gives none). On the tiny model DC-ASGD's correction "
                     "is about lambda x 1e-5 of the gradient's norm (python -m gpu_runs.dc_asgd_scale), so at "
                     "lambda 0.04 this column tests almost no correction; the sensitivity reading sweeps lambda "
                     "to 1e4 (fig2_sweep).")
    return out


build = grid_figure(NAME, TITLE, grid, _render)

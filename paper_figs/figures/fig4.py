"""Figure 4: final sync-async gap as a function of the momentum, per optimizer.

``momentum`` is the trainer's knob for the primary momentum beta (AdamW's beta1, Muon's
momentum, Lion's beta1 ...; mu = 1 - beta in docs/design.md's notation). Claim: higher momentum
shrinks the gap. Three readings, each with its own verdict line:

- preset lr: gap(beta) = L_2bw(beta, eta_0) - L_sync(beta, eta_0), one peak lr eta_0 for every beta;
- lr retuned: gap*(beta) = min_eta L_2bw(beta, eta) - min_eta L_sync(beta, eta) over
  eta in {c eta_0 : c in momentum_lr_mults}, each variant at its own best lr (delay theory
  predicts the stable lr range of a delayed heavy-ball method shrinks as beta grows, so a
  fixed eta_0 can hide or invert the effect);
- Lion's betas[1]: Lion's buffer m_t = beta2 m_{t-1} + (1 - beta2) g_t decays at betas[1],
  so "momentum decay" may mean beta2; swept with betas[0] and the lr at their presets.
"""
from __future__ import annotations

from dataclasses import dataclass

from lmo.presets import DEFAULT_MOMENTUM, MU_MAPS_TO
from lmo.variants import SYNC, TWO_BW

from ..statistics import paper_numbers as pn
from . import plotting
from ..statistics.verdicts import Verdict, combine, fmt, gap_shrinks_with, larger_gap, mean
from .best_lrs import argmin, rests_on
from .common import (GAP_LABEL, Context, FigureOutput, grid_claims, grid_figure, paired, retuned_gap,
    sources, spec_of, tag, variant_grid)
from .grids import lr_setting, shared

NAME = "fig4"
TITLE = "Figure 4: final sync-async gap vs momentum"


KINDS = (SYNC, TWO_BW)
LR = "lr"                    # cells of the lr-retuned reading: (LR, optimizer, momentum, multiplier)
BETA2 = "lion_beta2"         # cells of Lion's betas[1] reading: (BETA2, beta2)
LION_BETA2 = 0.99            # lmo.steepest_descent.lion's betas[1] default (lion-pytorch's)


@dataclass(frozen=True)
class Spec:
    """Figure 4's own knobs: the preset-lr reading's optimizers; the lr-retuned reading's grid
    extensions ``((optimizer, (extra multipliers, ...)), ...)``, where a best lr lay at the grid's
    edge (docs/protocol.md §6: no verdict from a grid edge); Lion's betas[1] grid (betas[0] at its
    preset; () off). Its momenta and the lr-retuned reading's optimizers and multipliers are shared
    (``grids.Shared``: lr_tuning and theory_training train some of its runs)."""

    momentum_optimizers: tuple = ("adamw", "muon", "lion")
    momentum_lr_extend: tuple = ()
    lion_beta2_grid: tuple = ()


_FULL = Spec(momentum_optimizers=("adamw", "muon", "lion", "nadam"),
             # the lr-retuned reading's best lrs at x0.5 or x2, the grid's edges (docs/protocol.md §6)
             momentum_lr_extend=(("adamw", (0.25, 4.0)), ("lion", (0.25, 4.0)), ("muon", (0.25,))),
             lion_beta2_grid=(0.95, 0.99, 0.999))
SPECS = {"full": _FULL, "quick": _FULL,
         "gpu": Spec(momentum_optimizers=("adamw", "muon", "lion", "nadam"), lion_beta2_grid=(0.95, 0.99, 0.999)),
         "micro": Spec(momentum_optimizers=("adamw", "muon"), lion_beta2_grid=(0.99, 0.999))}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


def lr_mults(p, o: str) -> tuple:
    """The lr-retuned reading's grid of ``o``: ``momentum_lr_mults`` and ``o``'s ``momentum_lr_extend``."""
    return tuple(sorted(set(shared(p).momentum_lr_mults) | set(dict(spec(p).momentum_lr_extend).get(o, ()))))


def grid(p) -> dict:
    """{(optimizer, momentum, variant): [settings per seed]} (preset lr), plus
    {(LR, optimizer, momentum, multiplier, variant): ...} and {(BETA2, beta2, variant): ...}."""
    sh = shared(p)
    s = spec(p)
    g = variant_grid(p, KINDS, {"optimizer": s.momentum_optimizers, "momentum": sh.momentum_grid})
    for o in sh.momentum_lr_optimizers:
        for c in lr_mults(p, o):
            for (m, k), runs in variant_grid(p, KINDS, {"momentum": sh.momentum_grid}, optimizer=o,
                                             **lr_setting(o, c)).items():
                g[(LR, o, m, c, k)] = runs
    b1 = DEFAULT_MOMENTUM["lion"]
    for b2 in s.lion_beta2_grid:
        extra = {} if b2 == LION_BETA2 else {"opt_kwargs": {"betas": [b1, b2]}}
        for (k,), runs in variant_grid(p, KINDS, {}, optimizer="lion", momentum=b1, **extra).items():
            g[(BETA2, b2, k)] = runs
    return g


def _log_mu_axes(axes, betas, what: str = "momentum beta") -> None:
    """x axis: log scale in 1 - beta, inverted (beta grows to the right), ticks at ``betas``."""
    for a in axes:
        a.set_xscale("log")
        a.invert_xaxis()
        a.set_xticks([1 - b for b in betas])
        a.set_xticklabels([f"{b}" for b in betas])
        a.minorticks_off()
        a.set_xlabel(f"{what} (log scale in 1 - beta)")
        a.grid(alpha=0.3)
        a.legend(fontsize=8)


def retuned(p, res: dict) -> dict:
    """{(optimizer, momentum): (per-seed gap*, best sync multiplier, best 2BW multiplier)}:
    gap* = L_2bw(c_a) - L_sync(c_s) per seed, c_v = argmin_c mean_seeds L_v(c)."""
    sh = shared(p)
    out = {}
    for o in sh.momentum_lr_optimizers:
        for m in sh.momentum_grid:
            out[o, m] = retuned_gap({c: res[LR, o, m, c] for c in lr_mults(p, o)})
    return out


def preset_line(p) -> str:
    seeds = "one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds"
    return f"higher momentum shrinks the gap (absolute gap, lr at its preset, every optimizer, {seeds})"


def judge(ctx: Context, res: dict) -> dict:
    """The preset-lr reading, the paper's protocol as we read it (C9): per optimizer the gap
    at the largest momentum below the smallest's, monotone, the sync loss not moving
    (``verdicts.gap_shrinks_with``); every optimizer."""
    p = ctx.profile
    sh = shared(p)
    parts = [gap_shrinks_with(sh.momentum_grid, [paired(res[o, m][SYNC], res[o, m][TWO_BW]) for m in sh.momentum_grid],
                              plotting.label(o), ctx.noise_for(o), sync=[res[o, m][SYNC] for m in sh.momentum_grid])
             for o in spec(p).momentum_optimizers]
    return {preset_line(p): tag(combine(parts, "momentum shrinks the gap"), "C9")}


def claims(ctx: Context) -> dict:
    """Figure 4's confirmatory line (C9), measured without drawing."""
    return grid_claims(ctx, grid, judge)


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    sh = shared(p)
    s = spec(p)
    gaps = {cell: paired(r["sync"], r["2bw"]) for cell, r in res.items()}
    fig, (ax, ax_sync) = plotting.new(ncols=2)
    one_minus = [1 - m for m in sh.momentum_grid]   # mu = 1 - beta: log axis, momentum grows to the right
    parts = []
    rows = ["| optimizer | " + " | ".join(f"momentum {m}" for m in sh.momentum_grid) + " |",
            "|" + "---|" * (1 + len(sh.momentum_grid))]
    for o in s.momentum_optimizers:
        ys = [mean(gaps[o, m]) for m in sh.momentum_grid]
        line = ax.plot(one_minus, ys, marker="o", label=plotting.label(o))[0]
        err = plotting.seed_errorbars([gaps[o, m] for m in sh.momentum_grid])
        if err:
            ax.errorbar(one_minus, ys, yerr=err["yerr"], fmt="none", ecolor=line.get_color(), capsize=3)
        ax_sync.plot(one_minus, [mean(res[o, m]["sync"]) for m in sh.momentum_grid], marker="o",
                     color=line.get_color(), label=plotting.label(o))
        rows.append(f"| {plotting.label(o)} | " + " | ".join(fmt(gaps[o, m]) for m in sh.momentum_grid) + " |")
    ax.axhline(0, color="black", linewidth=0.8)
    _log_mu_axes((ax, ax_sync), sh.momentum_grid)
    ax.set_ylabel(GAP_LABEL)
    every = [gaps[o, m] for o in s.momentum_optimizers for m in sh.momentum_grid]
    ax.set_title(f"Delay penalty vs momentum ({p.main_size} model, {p.steps} steps"
                 f"{plotting.seeds_span_note(every)})\npaper: the gap falls as the momentum rises", fontsize=10)
    ax_sync.set_ylabel("synchronous run's final loss (nats/byte)")
    ax_sync.set_title("The synchronous run's own final loss\n(same preset lr at every momentum)", fontsize=10)
    out.files = plotting.save(fig, ctx.fig_dir, "fig4_gap_vs_momentum")
    out.caption = ("Left: final sync-async validation-loss gap against the momentum coefficient, per "
                   f"optimizer ({len(p.seeds)} seed(s) per point; whiskers = 95 % t interval over seeds where there are "
                   "several). Right: the synchronous run's own final loss. x: log scale in 1 - beta. The "
                   "paper's claim: the gap falls as the momentum rises.")
    out.paper = [pn.CLAIMS["momentum"]]
    src = sources(ctx, [x for ss in g.values() for x in ss])
    out.measured = [f"Gap (nats/byte), {p.main_size} model, {p.steps} steps, {len(p.seeds)} seed(s), "
                    f"learning rate at its preset; runs from: {src}. The paper gives no numbers for "
                    "this figure, only the trend.", "", *rows]
    sync_rows = [f"| {plotting.label(o)} | " + " | ".join(fmt(res[o, m]["sync"]) for m in sh.momentum_grid) + " |"
                 for o in s.momentum_optimizers]
    out.measured += ["", "The synchronous run's own final loss at each momentum (a gap next to a sync run "
                     "that got worse says the preset lr no longer suits that momentum):", "",
                     rows[0], rows[1], *sync_rows]
    judged = judge(ctx, res)
    out.verdicts = {k: ctx.verdict(v) for k, v in judged.items()}
    out.notes = [v.reason for v in judged[preset_line(p)].test.parts]
    out.notes.append("The momentum swept (the reading this figure tests): "
                     + "; ".join(f"{plotting.label(o)}: {MU_MAPS_TO[o]}" for o in s.momentum_optimizers)
                     + ". Lion's betas[0] weights the update's interpolation; its momentum buffer decays "
                     "at betas[1], which stays at its preset here; the reading of Lion's 'momentum decay' "
                     "as betas[1] is its own line below (when the profile sweeps it).")
    if sh.momentum_lr_optimizers:
        _render_retuned(ctx, out, res)
    if s.lion_beta2_grid:
        _render_lion_beta2(ctx, out, res)
    return out


def _render_retuned(ctx: Context, out: FigureOutput, res: dict) -> None:
    """The lr-retuned reading: its table, panel and verdict line."""
    p = ctx.profile
    sh = shared(p)
    best = retuned(p, res)
    mults = sorted({c for o in sh.momentum_lr_optimizers for c in lr_mults(p, o)})
    fig, (ax,) = plotting.new()
    parts, rows, edge, argmins = [], [], [], []
    for o in sh.momentum_lr_optimizers:
        ys = [mean(best[o, m][0]) for m in sh.momentum_grid]
        line = ax.plot([1 - m for m in sh.momentum_grid], ys, marker="o", label=f"{plotting.label(o)}: lr retuned")[0]
        err = plotting.seed_errorbars([best[o, m][0] for m in sh.momentum_grid])
        if err:
            ax.errorbar([1 - m for m in sh.momentum_grid], ys, yerr=err["yerr"], fmt="none", ecolor=line.get_color(),
                        capsize=3)
        if o in spec(p).momentum_optimizers:
            ax.plot([1 - m for m in sh.momentum_grid], [mean(paired(res[o, m][SYNC], res[o, m][TWO_BW]))
                                                        for m in sh.momentum_grid],
                    linestyle=":", color=line.get_color(), label=f"{plotting.label(o)}: preset lr")
        for m in sh.momentum_grid:
            gap, c_s, c_a = best[o, m]
            losses = [fmt(res[LR, o, m, c][v]) if (LR, o, m, c) in res else "-" for v in KINDS for c in mults]
            rows.append(f"| {plotting.label(o)} | {m} | " + " | ".join(losses)
                        + f" | x{c_s:g} | x{c_a:g} | {fmt(gap)} |")
            own = lr_mults(p, o)
            edge += [f"{plotting.label(o)} beta {m} {v}" for v, c in ((SYNC, c_s), (TWO_BW, c_a))
                     if len(own) > 1 and c in (min(own), max(own))]
        used = [argmin(ctx, {c: res[LR, o, m, c] for c in lr_mults(p, o)}, v, o,
                       name=f"{plotting.label(o)} beta {m}") for m in sh.momentum_grid for v in KINDS]
        argmins += [(o, a) for a in used]
        ends = (best[o, sh.momentum_grid[0]], best[o, sh.momentum_grid[-1]])
        if ends[0][1:] == ends[1][1:]:   # one (c_sync, c_2bw) at both ends: that pair's spread
            noise = ctx.noise_for(o, lr=ends[0][1:])
        else:                             # two: the wider of the two (each cell's own in reality)
            noise = max((ctx.noise_for(o, lr=e[1:]) for e in ends), key=lambda n: n.conservative.width())
        sync_best = [res[LR, o, m, best[o, m][1]][SYNC] for m in sh.momentum_grid]
        parts.append(rests_on(gap_shrinks_with(sh.momentum_grid, [best[o, m][0] for m in sh.momentum_grid],
                                               plotting.label(o), noise, sync=sync_best), used))
    ax.axhline(0, color="black", linewidth=0.8)
    _log_mu_axes((ax,), sh.momentum_grid)
    ax.set_ylabel("best 2BW - best sync loss (nats/byte)")
    note = plotting.seeds_span_note([best[o, m][0] for o in sh.momentum_lr_optimizers for m in sh.momentum_grid])
    ax.set_title(f"Delay penalty vs momentum, lr retuned\nper momentum and variant (peak lr in "
                 f"{{{', '.join(f'{c:g}' for c in mults)}}} x preset;\ndotted: preset lr{note})", fontsize=9)
    out.files += plotting.save(fig, ctx.fig_dir, "fig4_lr_retuned")
    head = (" | ".join(f"{v} lr x{c:g}" for v in KINDS for c in mults))
    out.measured += ["", f"Lr-retuned reading ({len(p.seeds)} seed(s) per run): final validation loss of every run "
                     f"of the lr grid (peak lr = multiplier x the optimizer's preset), the lr each variant does "
                     f"best at, and gap* = best 2BW - best sync:", "",
                     f"| optimizer | momentum | {head} | best sync lr | best 2BW lr | gap* |",
                     "|" + "---|" * (5 + 2 * len(mults)), *rows]
    seeds = "one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds"
    grid_txt = "{" + ", ".join(f"{c:g}" for c in mults) + "} x preset"
    out.verdicts[f"higher momentum shrinks the gap (lr retuned: best 2BW minus best sync over peak lr "
                 f"{grid_txt}, per momentum, {seeds})"] = ctx.verdict(combine(parts, "momentum"))
    out.notes += ["Lr-retuned reading: " + v.reason for v in parts]
    out.notes += ["Lr-retuned reading, best lrs (docs/protocol.md §6): " + "; ".join(a.text for _, a in argmins) + "."]
    ext = sorted({f"{plotting.label(o)} x{a.extension:g}" for o, a in argmins if a.extension})
    if ext:
        out.notes.append("Grid extensions that would make the edge best lrs interior: " + ", ".join(ext) + ".")
    _lr_ordering(ctx, out, res)
    out.notes.append("Lr-retuned reading, protocol: each (optimizer, momentum, variant) trains at every peak lr "
                     f"of {grid_txt} (Muon: the matrix group's lr; its AdamW group keeps its own preset), and "
                     "the gap is taken between each variant's best run; picking the minimum of a few noisy runs "
                     "favours both variants alike. "
                     + ("Best lr at the edge of the grid (the optimum may lie outside it): " + "; ".join(edge) + "."
                        if edge else "No best lr lies at the edge of the grid."))


def _lr_ordering(ctx: Context, out: FigureOutput, res: dict) -> None:
    """The theory's ordering 1 (gpu_runs/orderings.py) on the lr grid: at fixed beta the 2BW
    gap grows with the peak lr, since the delayed bound's price over the synchronous one is
    2 L eta. Per (optimizer, beta): gap(largest lr) > gap(smallest lr) (95 % interval above 0)."""
    p = ctx.profile
    sh = shared(p)
    if len(sh.momentum_lr_mults) < 2:
        return
    per_opt, ends = [], []
    for o in sh.momentum_lr_optimizers:
        lo, hi = min(lr_mults(p, o)), max(lr_mults(p, o))
        ends.append(f"{plotting.label(o)} x{hi:g} vs x{lo:g}")
        cells = [larger_gap(paired(res[LR, o, m, hi][SYNC], res[LR, o, m, hi][TWO_BW]),
                            paired(res[LR, o, m, lo][SYNC], res[LR, o, m, lo][TWO_BW]),
                            (f"{plotting.label(o)} beta {m} at lr x{hi:g}", f"at x{lo:g}"),
                            (ctx.noise_for(o, lr=hi), ctx.noise_for(o, lr=lo)))
                 for m in sh.momentum_grid]
        per_opt.append(combine(cells, f"{plotting.label(o)}: gap grows with lr"))
        out.notes += [f"Theory's lr ordering, {plotting.label(o)}: " + v.reason for v in cells]
    seeds = "one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds"
    out.verdicts[f"theory (delayed bound's price 2 L eta): at fixed momentum the 2BW gap grows with the peak lr "
                 f"({', '.join(ends)} preset, every optimizer and momentum of the lr grid, {seeds})"] = \
        ctx.verdict(combine(per_opt, "gap grows with lr"))


def _render_lion_beta2(ctx: Context, out: FigureOutput, res: dict) -> None:
    """Lion's betas[1] reading: its table, panel and verdict line."""
    p = ctx.profile
    b2s = spec(p).lion_beta2_grid
    gaps = [paired(res[BETA2, b][SYNC], res[BETA2, b][TWO_BW]) for b in b2s]
    fig, (ax,) = plotting.new()
    line = ax.plot([1 - b for b in b2s], [mean(g) for g in gaps], marker="o", label="Lion")[0]
    err = plotting.seed_errorbars(gaps)
    if err:
        ax.errorbar([1 - b for b in b2s], [mean(g) for g in gaps], yerr=err["yerr"], fmt="none",
                    ecolor=line.get_color(), capsize=3)
    ax.axhline(0, color="black", linewidth=0.8)
    _log_mu_axes((ax,), b2s, "Lion betas[1]")
    ax.set_ylabel(GAP_LABEL)
    ax.set_title(f"Lion: delay penalty vs betas[1] (betas[0] {DEFAULT_MOMENTUM['lion']}, preset lr"
                 f"{plotting.seeds_span_note(gaps)})", fontsize=10)
    out.files += plotting.save(fig, ctx.fig_dir, "fig4_lion_beta2")
    out.measured += ["", "Lion's betas[1] reading (betas[0] and the lr at their presets):", "",
                     "| betas[1] | sync | 2BW | gap |", "|---|---|---|---|",
                     *[f"| {b} | {fmt(res[BETA2, b][SYNC])} | {fmt(res[BETA2, b][TWO_BW])} | {fmt(g)} |"
                       for b, g in zip(b2s, gaps)]]
    v: Verdict = gap_shrinks_with(b2s, gaps, "Lion betas[1]", noise=ctx.noise_for("lion"),
                                  sync=[res[BETA2, b][SYNC] for b in b2s])
    seeds = "one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds"
    out.verdicts[f"higher Lion betas[1] shrinks Lion's gap (betas[1] read as the momentum decay; "
                 f"betas[0] and lr at their presets, {seeds})"] = ctx.verdict(v)
    out.notes.append("Lion betas[1] reading: " + v.reason)


build = grid_figure(NAME, TITLE, grid, _render)

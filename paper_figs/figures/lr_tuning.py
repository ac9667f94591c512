"""Learning-rate tuning: each optimizer's synchronous lr on the main size, and Table 1's
robustness claim for Adan judged at tuned lrs.

The peak lrs of ``lmo.presets.DEFAULT_LR`` are partly guesses for models 250-1000x larger
(``LR_SOURCE``). Here every Table 1 optimizer's sync run is trained at peak lr
c x preset for c in the profile's ``tuning_lr_mults`` (one seed each, the main size,
every other setting Table 1's), and the lr of the lowest final loss is reported. For the
optimizers in ``tuned_gap_optimizers`` the 2BW run is swept too, and their gap is
gap* = min_c L_2bw(c) - min_c L_sync(c), Figure 4's lr-retuned protocol.

Paper claim checked: Adan is among the most robust optimizers (gap 0.006 at 135M, 0.010 at
360M, against Muon's 0.014 / 0.012), read as "Adan's gap is smaller than Muon's", once at
the preset lrs (Table 1's cells) and once with both lrs retuned.

Runs shared with other figures: c = 1 is Table 1's own run; for an optimizer of Figure 4's
lr grid whose preset momentum is on Figure 4's momentum grid, c != 1 is Figure 4's run at
that (preset) momentum, the same training under an explicit momentum (c = 4, beyond Figure
4's grid, is a run of its own). The grid reaches x4 because at x{0.5, 1, 2} the best lr lay
at the grid's upper edge for 7 of the 9 optimizers.
"""
from __future__ import annotations

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM
from lmo.variants import SYNC, TWO_BW

from .. import paper_numbers as pn
from .. import plotting
from ..verdicts import fmt, larger_gap, mean
from .common import Context, FigureOutput, grid_figure, paired, variant
from .fig4 import lr_setting

NAME = "lr_tuning"
TITLE = "Learning-rate tuning: each optimizer's sync lr, and Adan's robustness at tuned lrs"
KINDS = (SYNC, TWO_BW)
TUNE = "tune"   # cells (TUNE, optimizer, multiplier)


def run_settings(p, o: str, c: float, kind: str, seed: int) -> dict:
    """One run of the sweep (module docstring: which runs other figures share)."""
    extra = lr_setting(o, c)
    if c != 1 and o in p.momentum_lr_optimizers and DEFAULT_MOMENTUM[o] in p.momentum_grid:
        extra["momentum"] = DEFAULT_MOMENTUM[o]
        return variant(p, o, kind, seed=seed, **extra)   # Figure 4's run (its config: the main size)
    return variant(p, o, kind, seed=seed, config=p.sizes[0], **extra)


def grid(p) -> dict:
    """{(TUNE, optimizer, multiplier, variant): [settings per seed]}: sync for every Table 1
    optimizer, 2BW too for ``p.tuned_gap_optimizers``, plus Table 1's cells
    {(size, optimizer, variant): ...} of those optimizers at the main size. Empty when the
    profile sweeps no lr."""
    if len(p.tuning_lr_mults) < 2 or p.sizes[0] != p.main_size:
        return {}
    from . import table1   # the Adan reading's preset-lr cells are Table 1's (its seeds)
    t1 = table1.grid(p)
    g = {k: t1[k] for k in t1 if k[0] == p.sizes[0] and k[1] in p.tuned_gap_optimizers}
    for o in p.table1_optimizers:
        kinds = KINDS if o in p.tuned_gap_optimizers else (SYNC,)
        for c in p.tuning_lr_mults:
            for k in kinds:
                g[(TUNE, o, c, k)] = [run_settings(p, o, c, k, s) for s in p.seeds]
    return g


def best(cells: dict, kind: str) -> float:
    """argmin_c mean_seeds L_kind(c) over ``cells`` {c: {kind: losses}} (a failed run never wins)."""
    return min(cells, key=lambda c: (lambda x: x if x == x else float("inf"))(mean(cells[c][kind])))


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    if not res:
        out.status = "not run in this profile"
        return out
    mults = p.tuning_lr_mults
    fig, (ax,) = plotting.new(width=6.0)
    rows = ["| optimizer | preset peak lr | " + " | ".join(f"sync lr x{c:g}" for c in mults)
            + " | best | 2BW at the best sync lr |", "|" + "---|" * (4 + len(mults))]
    moved, edge = [], []
    for o in p.table1_optimizers:
        cells = {c: res[TUNE, o, c] for c in mults}
        b = best(cells, SYNC)
        ax.plot(mults, [mean(cells[c][SYNC]) for c in mults], marker="o", label=plotting.label(o))
        two_bw = fmt(cells[b][TWO_BW]) if TWO_BW in cells[b] else "-"
        rows.append(f"| {plotting.label(o)} | {DEFAULT_LR[o]:g} | " + " | ".join(fmt(cells[c][SYNC]) for c in mults)
                    + f" | x{b:g} | {two_bw} |")
        if b != 1:
            moved.append(f"{plotting.label(o)} (x{b:g})")
        if b in (min(mults), max(mults)):
            edge.append(plotting.label(o))
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(mults))
    ax.set_xticklabels([f"x{c:g}" for c in mults])
    ax.minorticks_off()
    ax.set_xlabel("peak lr / preset peak lr (lmo.presets.DEFAULT_LR)")
    ax.set_ylabel("synchronous run's final val loss (nats/byte)")
    ax.set_title(f"Sync lr sweep ({p.sizes[0]} model, {p.steps} steps, {len(p.seeds)} seed(s) per lr)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    out.files = plotting.save(fig, ctx.fig_dir, "lr_tuning_sync")
    out.caption = ("The synchronous run's final validation loss against its peak lr, as a multiple of the "
                   "optimizer's preset, per optimizer.")
    out.paper = ["Adan is among the most robust optimizers: gap " + " and ".join(
        f"{n.value:.3f} ({size})" for size, n in pn.GAPS["adan"].items()) + ", Muon's " + " and ".join(
        f"{n.value:.3f} ({size})" for size, n in pn.GAPS["muon"].items()) + " (summary, results)"]
    out.measured = [f"Sync lr sweep at peak lr in {{{', '.join(f'{c:g}' for c in mults)}}} x preset "
                    f"({p.sizes[0]} model, {p.steps} steps, {len(p.seeds)} seed(s)); best = lowest final loss:",
                    "", *rows, "",
                    ("Optimizers whose best lr is not the preset: " + ", ".join(moved) + "." if moved
                     else "The preset is the best lr of the grid for every optimizer.")
                    + (" Best lr at the edge of the grid (the optimum may lie outside it): " + ", ".join(edge) + "."
                       if edge else "")]
    _adan(ctx, out, res)
    out.notes.append("The other figures still train at the preset lrs; this sweep says how far each preset is "
                     "from the grid's best, so a reader can weigh a figure's verdict by it.")
    out.notes.append("One seed per lr: two lrs whose sync losses differ by less than about 2 x the pooled seed SD "
                     "of a final loss are not ranked by this grid, whichever the table calls best.")
    return out


def _adan(ctx: Context, out: FigureOutput, res: dict) -> None:
    """Table 1's Adan claim, at the preset lrs and with both optimizers' lrs retuned."""
    p = ctx.profile
    if not {"adan", "muon"} <= set(p.tuned_gap_optimizers):
        return
    size, seeds = p.sizes[0], ("one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds")
    tuned = {}
    for o in ("adan", "muon"):
        cells = {c: res[TUNE, o, c] for c in p.tuning_lr_mults}
        c_s, c_a = best(cells, SYNC), best(cells, TWO_BW)
        tuned[o] = paired(cells[c_s][SYNC], cells[c_a][TWO_BW])
        out.measured.append(f"{plotting.label(o)}, lr retuned: best sync at x{c_s:g}, best 2BW at x{c_a:g}, "
                            f"gap* = {fmt(tuned[o])}.")
    noise = (ctx.noise_for("muon"), ctx.noise_for("adan"))
    v = larger_gap(tuned["muon"], tuned["adan"], ("Muon", "Adan"), noise)
    grid_txt = ", ".join(f"{c:g}" for c in p.tuning_lr_mults)
    out.verdicts[f"Adan's gap is smaller than Muon's (paper: 0.006 vs 0.014 at 135M; lr retuned, best 2BW minus "
                 f"best sync over peak lr {{{grid_txt}}} x preset, {seeds} per lr)"] = ctx.verdict(v)
    out.notes.append("Adan vs Muon, lr retuned: " + v.reason)
    gaps = {o: paired(res[size, o][SYNC], res[size, o][TWO_BW]) for o in ("adan", "muon")}
    v0 = larger_gap(gaps["muon"], gaps["adan"], ("Muon", "Adan"), noise)
    out.verdicts[f"Adan's gap is smaller than Muon's (paper: 0.006 vs 0.014 at 135M; preset lrs, Table 1's "
                 f"{size} cells)"] = ctx.verdict(v0)
    out.notes.append("Adan vs Muon, preset lrs: " + v0.reason)


build = grid_figure(NAME, TITLE, grid, _render)

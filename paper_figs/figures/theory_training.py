"""Theory vs training: the delayed-LMO theory's predictions set against training runs that
record the theory's quantities (``gpu_runs.diagnostics``: L_local, sigma, rho, ||d_t||, r, the
momentum error).

Runs: for each optimizer of ``theory_optimizers`` and each peak lr c x preset (c in Figure
4's ``momentum_lr_mults``), sync, 2BW and 2BW+EF on the main size, Figure 3's settings
otherwise, with diagnostics every ``theory_diag_every`` steps (the profile's own
``diag_every`` when it sets one). The diagnostics only read the state and evaluate extra
batches, so a diagnosed run trains its plain twin's trajectory: the two are one run
(:mod:`paper_figs.records.identity`), and Figure 3's preset-lr cells read the diagnosed record.

Predictions checked (``gpu_runs.predict``, ``gpu_runs.orderings``; docs/design.md §5), with
L = each run's own median L_local, eta = its mean measured ||d_t||, mu = 1 - beta, K = steps,
Delta_0 <= the first train loss; every line exploratory (docs/protocol.md §4, §8):

1. momentum error: ||m_t - gbar_t||_* <= the variant's lemma bound (sync:
   ``derived_sync_lemma``, 2BW: ``derived_delayed_lemma_x``, EF:
   ``derived_ef_lemma_trajectory``) at every diagnostics record; the lemma's premise
   m_0 = g(x_0) excludes, by a rule fixed before the check, the records where a zero-started
   buffer still misses more than MISSING_WEIGHT_MAX of its weight (beta^t > 0.01: step 1);
2. lr: pi_2bw = B_delayed - B_sync = 2 L eta at each run's own L and eta (one L for the
   whole sweep would make "2 L eta grows with eta" true by construction) predicts which of
   the largest and smallest lr has the larger 2BW gap; the measured gaps must agree (Welch t);
3. EF: EF's bound beats the delayed one iff r_avg / eta < 1; measured, EF helps iff
   L_ef < L_2bw (per cell; agreement is the verdict);
4. optimizer-specific: the bound's relative price pi_2bw / B_sync at each optimizer's own
   measured constants (preset lr) ranks the optimizers; measured, the relative gap
   (L_2bw - L_sync) / L_sync ranks them. The theory's only optimizer-dependence is through
   the measured constants (L and eta in the optimizer's geometry, mu): it makes no claim
   about an optimizer by name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from gpu_runs import orderings as od
from gpu_runs.predict import summarize_record
from lmo.presets import DEFAULT_MOMENTUM
from lmo.variants import EF, SYNC, TWO_BW

from . import plotting
from ..statistics.protocol import MISSING_WEIGHT_MAX
from ..statistics.seed_stats import scaled, scaled_noise
from ..statistics.verdicts import (FAILS, HOLDS, INCONCLUSIVE, Verdict, combine, fmt, larger_gap,
    lower_is_better, mean)
from .common import VARIANTS, Context, FigureOutput, grid_figure, paired, spec_of, variant
from .grids import lr_setting, shared

NAME = "theory_training"
TITLE = "Theory vs training: the bounds' predictions on runs that measure the theory's constants"
DIAG = "diag"   # cells (DIAG, optimizer, lr multiplier)


@dataclass(frozen=True)
class Spec:
    """theory_training's knobs: the optimizers whose runs record the theory's diagnostics (sync /
    2BW / EF at every lr multiplier; () off) and their cadence (the profile's base diag_every
    wins when it sets one)."""

    theory_optimizers: tuple = ("adamw", "muon")
    theory_diag_every: int = 100


SPECS = {"full": Spec(), "quick": Spec(), "gpu": Spec(), "micro": Spec(theory_diag_every=2)}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


def diag_every(p) -> int:
    """The diagnostics cadence of this figure's runs: the profile's ``diag_every`` if it sets one."""
    return int(p.base.get("diag_every") or spec(p).theory_diag_every)


def grid(p) -> dict:
    """{(DIAG, optimizer, multiplier, variant): [settings per seed]}; empty when the profile
    names no optimizer or sweeps no lr."""
    sh = shared(p)
    s = spec(p)
    if not s.theory_optimizers or len(sh.momentum_lr_mults) < 2:
        return {}
    return {(DIAG, o, c, k): [variant(p, o, k, seed=seed, config=p.main_size, diag_every=diag_every(p),
                                      **lr_setting(o, c)) for seed in p.seeds]
            for o in s.theory_optimizers for c in sh.momentum_lr_mults for k in VARIANTS}


def gap(res: dict, o: str, c: float, kind: str = TWO_BW) -> list[float]:
    """Per-seed L_kind - L_sync of cell (optimizer ``o``, lr multiplier ``c``)."""
    return paired(res[DIAG, o, c][SYNC], res[DIAG, o, c][kind])


def summaries(ctx: Context, g: dict) -> list[dict]:
    """``gpu_runs.predict.summarize_record`` of every run that exists, tagged with its cell."""
    out = []
    for (_, o, c, k), ss in g.items():
        for s in ss:
            oc = ctx.get(s)
            if oc.ok:
                out.append(dict(summarize_record(oc.record["config"], oc.diag_log(), name=f"{o} x{c:g} {k}"),
                                mult=c, seed=s["seed"]))
    return out


def first_seed_cells(runs: list[dict]) -> list[dict]:
    """``gpu_runs.orderings.cells`` of the first seed's runs (the constants of one trajectory
    per cell), each tagged with its lr multiplier; the gaps themselves come from every seed."""
    first = min(r["seed"] for r in runs) if runs else 0
    one = [r for r in runs if r["seed"] == first]
    mult = {(r["optimizer"], r["lr"]): r["mult"] for r in one}
    return [dict(c, mult=mult[c["optimizer"], c["lr"]]) for c in od.cells(one)]


def first_valid_step(beta: float) -> int:
    """The first step t whose zero-started buffer misses at most MISSING_WEIGHT_MAX of its weight:
    min t with beta^t <= MISSING_WEIGHT_MAX (docs/protocol.md §8)."""
    return max(1, math.ceil(math.log(MISSING_WEIGHT_MAX) / math.log(beta))) if 0 < beta < 1 else 1


def own_constant_ordering(ctx: Context, res: dict, cs: list[dict], o: str, lo: float, hi: float) -> Verdict:
    """Prediction 2 at each run's own constants: pi_2bw = 2 L eta of the sync run's own measured
    L and step norm (``gpu_runs.orderings.cells``) at the largest and smallest lr give the
    predicted direction; the measured gaps must move that way (the larger predicted price's gap
    larger, Welch t). With one L for the whole sweep 2 L eta grows with eta by construction;
    with each run's own L it need not."""
    pi = {c["mult"]: c.get("pi_2bw") for c in cs if c["optimizer"] == o}
    name = plotting.label(o)
    if pi.get(hi) is None or pi.get(lo) is None:
        return Verdict(INCONCLUSIVE, f"{name}: no diagnostics at x{lo:g} and x{hi:g}", None)
    grows = pi[hi] > pi[lo]
    big, small = (hi, lo) if grows else (lo, hi)
    v = larger_gap(gap(res, o, big), gap(res, o, small), (f"{name} at lr x{big:g}", f"at x{small:g}"),
                   (ctx.noise_for(o, lr=big), ctx.noise_for(o, lr=small)))
    return Verdict(v.status, f"predicted 2 L eta {pi[lo]:.3g} at x{lo:g} -> {pi[hi]:.3g} at x{hi:g} "
                             f"({'grows' if grows else 'falls'}: the gap at x{big:g} should be the larger); measured: "
                             f"{v.reason}", v.test)


def bound_check(runs: list[dict], from_step: int = 1, field: str = "measured") -> tuple[Verdict, list[str]]:
    """Prediction 1: every diagnostics record (at step >= ``from_step``) has its measured
    momentum error (``field`` of ``gpu_runs.predict.predict_record``'s rows: ``measured``, the
    buffer as stored, or ``measured_used``, the momentum the update uses) at or below its bound."""
    runs = [dict(r, rows=[dict(row, measured=row.get(field)) for row in r["rows"]]) for r in runs]
    rows = [(r, row) for r in runs for row in r["rows"]
            if row["measured"] is not None and math.isfinite(row["bound"]) and row["step"] >= from_step]
    if not rows:
        return Verdict(INCONCLUSIVE, "no diagnostics record with a momentum error"), []
    bad = [(r, row) for r, row in rows if row["measured"] > row["bound"]]
    worst = max(rows, key=lambda rr: rr[1]["measured"] / rr[1]["bound"])
    desc = (f"{len(rows) - len(bad)} of {len(rows)} records within the bound (a count, no seed statistics); "
            f"largest measured / bound "
            f"{worst[1]['measured'] / worst[1]['bound']:.3g} ({worst[0]['run']}, step {worst[1]['step']})")
    table = ["| run | records | largest measured / bound | at step |", "|---|---|---|---|"]
    for r in runs:
        rs = [row for row in r["rows"] if row["measured"] is not None]
        if rs:
            w = max(rs, key=lambda row: row["measured"] / row["bound"])
            table.append(f"| {r['run']} | {len(rs)} | {w['measured'] / w['bound']:.3g} | {w['step']} |")
    return Verdict(FAILS if bad else HOLDS, desc), table


def ef_agreement(ctx: Context, res: dict, cs: list[dict], sufficient: bool = False) -> tuple[Verdict, list[str]]:
    """Prediction 3 per cell: predicted 'EF helps' (r_avg / eta < 1) against the measured
    comparison L_ef vs L_2bw (95 % interval); a cell agrees, disagrees, or is unresolved.

    Two readings: 'iff' (default) judges every cell; ``sufficient`` (r_avg / eta < 1 implies
    that EF helps, what a better bound can promise) judges only the cells predicted to help:
    where EF's bound is the worse one, the bounds say nothing about the losses."""
    parts, lines = [], []
    for c in cs:
        if "r_over_eta_ef" not in c:
            continue
        o, m = c["optimizer"], c["mult"]
        predicted = c["r_over_eta_ef"] < 1
        if sufficient and not predicted:
            continue
        meas = lower_is_better(res[DIAG, o, m][EF], res[DIAG, o, m][TWO_BW], f"{plotting.label(o)} x{m:g}: EF below 2BW",
                               ctx.noise_for(o, lr=m))
        word = "helps" if predicted else "does not help"
        if meas.status == INCONCLUSIVE:
            parts.append(Verdict(INCONCLUSIVE, f"predicted EF {word} (r/eta {c['r_over_eta_ef']:.2f}); {meas.reason}"))
        else:
            agree = (meas.status == HOLDS) == predicted
            parts.append(Verdict(HOLDS if agree else FAILS,
                                 f"predicted EF {word} (r/eta {c['r_over_eta_ef']:.2f}); {meas.reason}"))
        lines.append(parts[-1].reason)
    return combine(parts, "EF helps where r_avg / eta < 1" if sufficient else "EF helps iff r_avg / eta < 1"), lines


def relative_ranking(ctx: Context, res: dict, cs: list[dict]) -> Verdict:
    """Prediction 4 at the preset lr: the optimizer with the larger predicted relative price
    pi_2bw / B_sync has the larger measured relative gap (Welch t; the seed SD borrowed is
    scaled by 1 / its sync loss)."""
    pre = {c["optimizer"]: c for c in cs if c["mult"] == 1 and "pi_2bw_rel" in c}
    if len(pre) < 2:
        return Verdict(INCONCLUSIVE, "needs two optimizers with diagnostics at the preset lr")
    hi, lo = sorted(pre, key=lambda o: -pre[o]["pi_2bw_rel"])[:2]

    def rel(o):
        """Per-seed gap / L_sync, and the optimizer's borrowed seed SD on that scale."""
        s, n = res[DIAG, o, 1][SYNC], ctx.noise_for(o)
        return [scaled(g, 1 / x) for g, x in zip(gap(res, o, 1), s)], scaled_noise(n, 1 / mean(s))

    (rh, nh), (rl, nl) = rel(hi), rel(lo)
    v = larger_gap(rh, rl, (f"{plotting.label(hi)} relative gap", plotting.label(lo)), (nh, nl))
    return Verdict(v.status, f"predicted pi_2bw / B_sync {pre[hi]['pi_2bw_rel']:.3g} ({plotting.label(hi)}) > "
                             f"{pre[lo]['pi_2bw_rel']:.3g} ({plotting.label(lo)}); measured: {v.reason}")


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p = ctx.profile
    sh = shared(p)
    s = spec(p)
    if not g:
        out.status = "not run in this profile"
        return out
    runs = summaries(ctx, g)
    cs = first_seed_cells(runs)
    pred = {(c["optimizer"], c["lr"]): c.get("pi_2bw") for c in cs}   # each run's own L and eta (item 10)
    seeds = "one seed" if len(p.seeds) == 1 else f"{len(p.seeds)} seeds"
    mults, lo, hi = sh.momentum_lr_mults, min(sh.momentum_lr_mults), max(sh.momentum_lr_mults)

    out.caption = ("Left: each run's measured momentum error over its bound at the run's measured constants "
                   "(below the line: the bound holds). Middle: the measured 2BW gap against the peak lr. "
                   "Right: the bound's predicted price pi_2bw = 2 L eta at the measured L and step norm.")
    out.paper = ["The paper's analysis: the one-step delay adds a price that grows with the step size, EF "
                 "replaces it by one that grows with r (the distance of the applied iterate from the virtual "
                 "one), and the size of the effect depends on the optimizer (summary, theory)."]
    out.measured = [f"{len(runs)} runs ({', '.join(map(plotting.label, s.theory_optimizers))}; peak lr in "
                    f"{{{', '.join(f'{c:g}' for c in mults)}}} x preset; sync, 2BW, 2BW+EF; {p.main_size} model, "
                    f"{p.steps} steps, {seeds}), diagnostics every {diag_every(p)} steps.", "",
                    "| optimizer | lr | gap 2BW | gap EF | L (median L_local, own run) | eta (mean ||d_t||) | pi_2bw = 2 L eta "
                    "| pi_2bw / B_sync | r_avg / eta (EF) |", "|---|---|---|---|---|---|---|---|---|"]
    f = lambda v, s="{:.3g}": "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else s.format(v)
    for c in cs:
        k = c["runs"][SYNC].get("consts") or {}
        out.measured.append(
            f"| {plotting.label(c['optimizer'])} | x{c['mult']:g} ({c['lr']:.3g}) "
            f"| {fmt(gap(res, c['optimizer'], c['mult']))} | {fmt(gap(res, c['optimizer'], c['mult'], EF))} "
            f"| {f(k.get('L'))} | {f(k.get('eta'))} | {f(pred.get((c['optimizer'], c['lr']), c.get('pi_2bw')))} "
            f"| {f(c.get('pi_2bw_rel'), '{:.3f}')} | {f(c.get('r_over_eta_ef'), '{:.2f}')} |")
    out.measured.append("")
    out.measured.append("The bound's prices are in units of its gradient-norm average, not of the loss: the "
                        "predictions compared are orderings (which lr, which variant, which optimizer pays more), "
                        "never magnitudes.")

    v1, table = bound_check(runs)
    beta = max(DEFAULT_MOMENTUM[o] for o in s.theory_optimizers)   # the slowest-decaying zero start
    later = first_valid_step(beta)
    v1b, _ = bound_check(runs, from_step=later)
    v1b = Verdict(v1b.status, f"exclusion rule, fixed before the check (docs/protocol.md §8): the lemma assumes "
                              f"m_0 = g(x_0) and the buffers start at zero, so a record at step t counts only where "
                              f"the zero start's missing weight beta^t <= {MISSING_WEIGHT_MAX:g}, i.e. t >= {later} at "
                              f"beta = {beta:g}; {v1b.reason}")
    v1c, _ = bound_check(runs, field="measured_used")
    missing = sorted({r["run"] for r in runs if any(row.get("measured_used") is None and row["measured"] is not None
                                                     for row in r["rows"])})
    out.measured += ["", "Momentum error against its bound, each run's worst record:", "", *table]
    out.verdicts["theory vs training: the momentum error stays within its lemma bound at the measured constants "
                 f"(m_t = the optimizer's buffer as stored, zero at start; every diagnostics record, {seeds})"] = \
        ctx.verdict(v1)
    out.verdicts["theory vs training: the momentum error stays within its lemma bound at the measured constants "
                 f"(the lemma's premise m_0 = g(x_0): records at steps t with beta^t <= {MISSING_WEIGHT_MAX:g}, "
                 f"t >= {later}; {seeds})"] = ctx.verdict(v1b)
    if missing:
        v1c = Verdict(INCONCLUSIVE, f"{len(missing)} run(s) have no bias-corrected momentum diagnostic (records made "
                                    f"before gpu_runs.diagnostics recorded it; retrain them): {', '.join(missing)}")
    out.verdicts["theory vs training: the momentum error stays within its lemma bound at the measured constants "
                 "(m_t = the momentum the update uses: AdamW's bias-corrected m_t / (1 - beta1^t), which after step 1 is "
                 f"the first (clipped) gradient, as the lemma's m_0 = g(x_0) asks; Muon's buffer as stored; every "
                 f"diagnostics record, {seeds})"] = \
        ctx.verdict(v1c)
    out.notes.append("Momentum-error bound, the momentum the update uses: " + v1c.reason + ".")
    out.notes.append("Momentum-error bound, buffer as stored: " + v1.reason + ". The lemma assumes m_0 = g(x_0; xi_0) "
                     "(docs/design.md §5), while every optimizer here starts its buffer at zero (Adam's exp_avg, "
                     "un-bias-corrected, is 0.1 g_1 after step 1), so a step-1 record tests a premise the buffer does not "
                     "meet; from a later record on the zero start's weight beta^t is negligible: " + v1b.reason + ". The "
                     "measured error uses the mean of diag_micro batch gradients for grad f(x_t), itself an estimate.")

    parts = [own_constant_ordering(ctx, res, cs, o, lo, hi) for o in s.theory_optimizers]
    out.notes += [f"lr ordering at each run's own constants, {plotting.label(o)}: " + v.reason
                  for o, v in zip(s.theory_optimizers, parts)]
    out.verdicts[f"theory vs training: the 2BW gap moves with the peak lr the way pi_2bw = 2 L eta does at each run's "
                 f"own measured L and eta (x{hi:g} vs x{lo:g} preset, every optimizer, {seeds})"] = \
        ctx.verdict(combine(parts, "the gap follows 2 L eta"))
    out.notes.append("The lr ordering's gaps are Figure 4's lr-grid cells at the preset momentum (the same trainings, "
                     "diagnostics aside): this line and Figure 4's lr-ordering line are not independent evidence.")

    v3, lines = ef_agreement(ctx, res, cs)
    out.verdicts[f"theory vs training: EF helps exactly where the measured r_avg / eta < 1 (final loss, EF vs "
                 f"2BW, 95 % interval, every cell, {seeds})"] = ctx.verdict(v3)
    out.notes += ["EF prediction: " + x for x in lines]
    v3b, _ = ef_agreement(ctx, res, cs, sufficient=True)
    out.verdicts[f"theory vs training: EF helps where the measured r_avg / eta < 1 (the bound's reading: a better "
                 f"bound where r_avg / eta < 1, no claim elsewhere; final loss, EF vs 2BW, 95 % interval, {seeds})"] = \
        ctx.verdict(v3b)

    v4 = relative_ranking(ctx, res, cs)
    out.verdicts[f"theory vs training: the optimizer with the larger predicted relative price pi_2bw / B_sync has "
                 f"the larger relative gap (preset lr, {seeds})"] = ctx.verdict(v4)
    out.notes.append("Optimizer-specific prediction: " + v4.reason + ". The theory names no optimizer: its "
                     "ranking comes only from each optimizer's measured L, eta and mu.")

    out.notes.append("Diagnostics do not steer training: a diagnosed run and its plain twin (Figure 3's run at the "
                     "preset lr) are one training (paper_figs.records.identity), so Figure 3 reads the diagnosed record. On "
                     "one machine their trajectories are bit-identical (tests/paper_figs/test_theory_training.py); "
                     "before the kept records were keyed by identity, 17 such pairs were stored twice with "
                     "identical curves.")
    _plot(ctx, out, runs, cs, res, pred)
    return out


def _plot(ctx: Context, out: FigureOutput, runs: list[dict], cs: list[dict], res: dict, pred: dict) -> None:
    p = ctx.profile
    sh = shared(p)
    s = spec(p)
    fig, axes = plotting.new(ncols=3, height=4.0)
    ax = axes[0]
    color = {o: f"C{i}" for i, o in enumerate(s.theory_optimizers)}
    for r in runs:
        rows = [x for x in r["rows"] if x["measured"] is not None]
        if rows and r["seed"] == p.seeds[0]:
            ax.plot([x["step"] for x in rows], [x["measured"] / x["bound"] for x in rows], lw=0.8,
                    color=color[r["optimizer"]], linestyle=plotting.VARIANT_STYLE[r["variant"]]["linestyle"],
                    alpha=0.4 + 0.6 * (r["mult"] == 1), label=r["run"] if r["mult"] == 1 else None)
    ax.axhline(1.0, color="black", linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set(xlabel=plotting.STEP_LABEL, ylabel="momentum error / bound", title="momentum error vs its bound")
    ax.legend(fontsize=6, title="preset lr (other lrs faint)", title_fontsize=6)
    for o in s.theory_optimizers:
        mults = [c for c in sh.momentum_lr_mults if res.get((DIAG, o, c))]
        ys = [mean(gap(res, o, c)) for c in mults]
        axes[1].plot(mults, ys, marker="o", color=color[o], label=plotting.label(o))
        err = plotting.seed_errorbars([gap(res, o, c) for c in mults])
        if err:
            axes[1].errorbar(mults, ys, yerr=err["yerr"], fmt="none", ecolor=color[o], capsize=3)
        xs = [c["mult"] for c in cs if c["optimizer"] == o]
        axes[2].plot(xs, [pred.get((o, c["lr"]), float("nan")) for c in cs if c["optimizer"] == o], marker="s",
                     color=color[o], label=plotting.label(o))
    axes[1].axhline(0, color="black", linewidth=0.8)
    axes[1].set(xlabel="peak lr / preset", ylabel="final 2BW gap (nats/byte)", title="measured: delay penalty vs lr")
    axes[2].set(xlabel="peak lr / preset", ylabel="pi_2bw = 2 L eta (bound units)", title="predicted: 2 L eta vs lr (own L, eta)",
                yscale="log")
    for ax in axes[1:]:
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(sh.momentum_lr_mults))
        ax.set_xticklabels([f"x{c:g}" for c in sh.momentum_lr_mults])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Theory vs training ({p.main_size} model, {p.steps} steps, diagnostics every {diag_every(p)} steps; "
                 f"left: seed {p.seeds[0]}, one seed per curve; middle: {plotting.seeds_note(len(p.seeds))[2:]})",
                 fontsize=10)
    out.files = plotting.save(fig, ctx.fig_dir, "theory_training")


build = grid_figure(NAME, TITLE, grid, _render)

"""Delays beyond one step, the delay correctors, and where Muon's delay penalty lives (issue 41).

Exploratory: none of these lines joins the paper's confirmatory family; each is judged by the
protocol's paired t intervals (docs/protocol.md) at the seeds it has. The theory's predicted
ordering was written down before any of these runs was trained (docs/correctors.md §1-§5), and
the protocol of this figure in §7 of that page.

Three panels, all on the main (tiny) model at the profile's horizon, seeds ``Spec.seeds``:

- gap vs tau: the sync-async gap L(delay tau) - L(sync) per seed for tau in ``Spec.taus``,
  AdamW, Muon and scion (every layer an LMO of its own norm, no AdamW group);
- the correctors: the recovered fraction 1 - gap(corrector) / gap(plain delay) at tau = 1
  (with error feedback, the paper's corrector) and tau = 4, for each optimizer of
  ``Spec.corrector_optimizers``;
- the attribution: Muon with only its matrix group delayed, only its AdamW group ("other":
  embeddings, head, norms, vectors) delayed, and both (the plain one-step delay).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from lmo.variants import EF, SYNC, TWO_BW

from . import plotting
from . import correctors_readings as R
from .correctors_readings import MODEL_RHO, measured_growth, predicted_growth, predicted_share, r_model  # noqa: F401
from ..statistics.seed_stats import estimate, paired
from ..statistics.verdicts import (both, equivalent, every, ef_recovers, fmt, larger_gap, lower_is_better,
    mean, spread)
from .common import Context, FigureOutput, curves, grid_figure, pct, spec_of, variant

NAME = "correctors"
TITLE = "Delays beyond one step, the delay correctors, and where Muon's delay penalty lives"
PLAIN = "none"


@dataclass(frozen=True)
class Spec:
    """This figure's knobs: the optimizers and delays of the gap-vs-tau panel, the correctors
    and the delays at which they are compared, the attribution's optimizer, and the seeds
    (paired by seed with the sync and one-step runs Figure 3 trains at the same seeds)."""

    tau_optimizers: tuple = ("adamw", "muon", "scion")
    taus: tuple = (1, 2, 4, 8)
    corrector_optimizers: tuple = ("muon", "adamw")
    corrector_taus: tuple = (1, 4)
    correctors: tuple = ("weight_prediction", "nesterov_lookahead", "dc_asgd_adaptive", "dc_asgd_ema",
                         "lr_damping")
    attribution_optimizer: str = "muon"   # "": no attribution panel
    seeds: tuple = (0, 1, 2)
    published_nesterov: float = 0.99      # the published Nesterov method's momentum at each corrector cell; 0: none


SPECS = {"full": Spec(), "quick": Spec(), "gpu": Spec(seeds=(0, 1)),
         "micro": Spec(tau_optimizers=("adamw",), taus=(1, 2), corrector_optimizers=("adamw",),
                       corrector_taus=(1, 2), correctors=("weight_prediction", "lr_damping"),
                       seeds=(0, 1), published_nesterov=0.0)}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


def delayed(p, o: str, tau: int, seed: int, corrector: str = PLAIN, groups: str = "all") -> dict:
    """Settings of one delayed run: Figure 3's 2BW run with only the fields that differ from it
    (tau 1, no corrector and every group delayed are Figure 3's own run, the same key)."""
    extra = dict({"tau": tau} if tau != 1 else {}, **({"corrector": corrector} if corrector != PLAIN else {}),
                 **({"delayed_groups": groups} if groups != "all" else {}))
    return variant(p, o, TWO_BW, seed=seed, **extra)


def published(p, o: str, tau: int, seed: int, beta: float) -> dict:
    """The published Nesterov method as a corrector of ``o``'s plain delay (issue 51; declared, not trained here): no
    forward extrapolation, Nesterov momentum ``beta`` at the preset lr, AdamW -> NAdamW (R.PUBLISHED_OPTIMIZER)."""
    return variant(p, R.PUBLISHED_OPTIMIZER.get(o, o), TWO_BW, seed=seed, momentum=beta,
                   **({"tau": tau} if tau != 1 else {}))


def published_sync(p, o: str, seed: int, beta: float) -> dict:
    """The synchronous run of the published method's optimizer at its momentum ``beta`` (the
    same run at every tau): the baseline of the method's own delay gap (:func:`own_gap_line`)."""
    return variant(p, R.PUBLISHED_OPTIMIZER.get(o, o), SYNC, seed=seed, momentum=beta)


def _applies(corrector: str, tau: int) -> bool:
    """lr damping by delay (eta tau^-p) is the identity at tau = 1: the plain delay's run."""
    return not (corrector == "lr_damping" and tau == 1)


def grid(p) -> dict:
    """{(panel, optimizer, kind): [settings per seed]}, in the order the runs are worth training:
    the attribution, the gap vs tau, then the correctors. Panels: ("attr", o, sync | all |
    matrix | other), ("tau", o, sync | tau<k>), ("corr<tau>", o, none | ef | corrector | published_nesterov)."""
    s = spec(p)
    g, a = {}, s.attribution_optimizer
    if a:   # "": no attribution panel
        g[("attr", a, SYNC)] = [variant(p, a, SYNC, seed=x) for x in s.seeds]
        for grp in ("all", "matrix", "other"):
            g[("attr", a, grp)] = [delayed(p, a, 1, x, groups=grp) for x in s.seeds]
    for o in s.tau_optimizers:
        g[("tau", o, SYNC)] = [variant(p, o, SYNC, seed=x) for x in s.seeds]
        for tau in s.taus:
            g[("tau", o, f"tau{tau}")] = [delayed(p, o, tau, x) for x in s.seeds]
    for tau in s.corrector_taus:
        for o in s.corrector_optimizers:
            panel = f"corr{tau}"
            g[(panel, o, SYNC)] = [variant(p, o, SYNC, seed=x) for x in s.seeds]
            g[(panel, o, PLAIN)] = [delayed(p, o, tau, x) for x in s.seeds]
            if tau == 1:
                g[(panel, o, EF)] = [variant(p, o, EF, seed=x) for x in s.seeds]
            for c in s.correctors:
                if _applies(c, tau):
                    g[(panel, o, c)] = [delayed(p, o, tau, x, corrector=c) for x in s.seeds]
            if s.published_nesterov:
                g[(panel, o, R.PUBLISHED)] = [published(p, o, tau, x, s.published_nesterov) for x in s.seeds]
                g[(panel, o, R.PUBLISHED_SYNC)] = [published_sync(p, o, x, s.published_nesterov) for x in s.seeds]
    return g


# --- the verdicts (docs/correctors.md §8)

ATTRIBUTION = "Muon's delay penalty lives in its AdamW group (AdamW-group-only gap > 0 and matrix-only below it)"
GROWS = "the gap grows with tau (L at the largest tau above L at tau = 1, every optimizer)"
ADAMW_ABOVE = "AdamW's gap above Muon's at every tau (D - R > 0)"
SCION_BELOW = ("the all-LMO variant removes the residual gap: scion's gap below Muon's at every tau (confounded: "
               f"scion's head steps at {R.scion_head_radius():g} x its hidden radius)")
EQUIV_MARGIN = 0.005


def recovers_line(tau: int, o: str, corrector: str) -> str:
    """§8's line per corrector (one line each, as §8 declared them: a merged "every corrector"
    line would fail by design on DC-ASGD, which §5 predicts recovers about nothing)."""
    return f"tau = {tau}, {plotting.label(o)}: {R.corrector_label(corrector)} recovers part of the gap (1 - h / g > 0)"


def best_line(tau: int, o: str) -> str:
    return f"tau = {tau}, {plotting.label(o)}: the best corrector beats the runner-up (paired)"


def own_gap_line(tau: int, o: str) -> str:
    """The published method read against its own synchronous run (declared before those runs were
    trained): is its delay gap, L(published, tau) - L(published sync), below the plain delay's?"""
    return (f"tau = {tau}, {plotting.label(o)}: published Nesterov's own delay gap (against sync at its own "
            f"optimizer and momentum) below the plain delay's (paired)")


def judge(ctx: Context, res: dict) -> tuple[dict, dict]:
    """(verdicts {line: Verdict}, shares {(tau, o, corrector): recovered share}) of §8."""
    s = spec(ctx.profile)
    nz = {o: ctx.noise_for(o) for o in set(s.tau_optimizers) | set(s.corrector_optimizers)
          | {s.attribution_optimizer} if o}
    out, shares = {}, {}
    a = res.get(("attr", s.attribution_optimizer))
    if a:
        n = nz[s.attribution_optimizer]
        out[ATTRIBUTION] = both(lower_is_better(a[SYNC], a["other"], "AdamW-group-only delay costs loss", n),
                                lower_is_better(a["matrix"], a["other"], "matrix-only below AdamW-group-only", n),
                                "attribution")
    taus = [t for t in s.taus if t != 1]
    tau_res = {o: res[("tau", o)] for o in s.tau_optimizers if ("tau", o) in res}
    if tau_res and taus:
        out[GROWS] = every([lower_is_better(r["tau1"], r[f"tau{max(taus)}"], f"{plotting.label(o)} tau 1 vs "
                                            f"{max(taus)}", nz[o]) for o, r in tau_res.items()], "gap grows")
    gaps = {o: {t: paired(r[SYNC], r[f"tau{t}"]) for t in s.taus} for o, r in tau_res.items()}
    if {"adamw", "muon"} <= set(gaps):
        out[ADAMW_ABOVE] = every([larger_gap(gaps["adamw"][t], gaps["muon"][t], ("AdamW", f"Muon at tau {t}"),
                                             (nz["adamw"], nz["muon"])) for t in s.taus], "AdamW above Muon")
    if {"scion", "muon"} <= set(gaps):
        out[SCION_BELOW] = every([larger_gap(gaps["muon"][t], gaps["scion"][t], ("Muon", f"scion at tau {t}"),
                                             (nz["muon"], nz["scion"])) for t in s.taus], "scion below Muon")
    for tau in s.corrector_taus:
        for o in s.corrector_optimizers:
            r = res.get((f"corr{tau}", o))
            if not r:
                continue
            names = [c for c in r if c not in (SYNC, PLAIN, R.PUBLISHED_SYNC)]
            if R.PUBLISHED in r and R.PUBLISHED_SYNC in r:
                out[own_gap_line(tau, o)] = lower_is_better(
                    paired(r[R.PUBLISHED_SYNC], r[R.PUBLISHED]), paired(r[SYNC], r[PLAIN]),
                    f"{plotting.label(o)} at tau {tau}: published Nesterov's own gap below the plain delay's", nz[o])
            for c in names:
                v, frac = ef_recovers(r[SYNC], r[PLAIN], r[c], plotting.label(o), low=0.0, by=c, noise=nz[o])
                out[recovers_line(tau, o, c)] = v
                shares[(tau, o, c)] = frac
            ranked = sorted(names, key=lambda c: (lambda m: m if math.isfinite(m) else math.inf)(mean(r[c])))
            if len(ranked) >= 2:
                out[best_line(tau, o)] = lower_is_better(r[ranked[0]], r[ranked[1]], f"{R.corrector_label(ranked[0])} "
                                                         f"below {R.corrector_label(ranked[1])}", nz[o])
            for c, line in ((("weight_prediction", EF), "(a) weight prediction ~ EF"),
                            (("dc_asgd_adaptive", PLAIN), "(b) DC-ASGD-a ~ the plain delay"),
                            (("dc_asgd_ema", PLAIN), "(b) DC-ASGD-EMA ~ the plain delay")):
                if all(k in r for k in c):
                    out[f"tau = {tau}, {plotting.label(o)}: {line} within +-{EQUIV_MARGIN} nats"] = equivalent(
                        paired(r[c[1]], r[c[0]]), EQUIV_MARGIN, line, nz[o])
    return out, shares


# --- drawing and the report's tables

MARIN = ("marin (d512 MoE, 3000 steps, one seed; docs/correctors.md §6): Muon gap +0.140 at tau = 2, +0.850 at "
         "tau = 8 (6.1 x), its Adam variant +0.744 / +2.213; weight prediction closes 53 % / 45 % of Muon's gap; "
         "DC-ASGD-EMA changes the loss by 0.0005")


def _gap_row(r: dict, kind: str) -> str:
    g = paired(r[SYNC], r[kind])
    return fmt(g) if g else "missing"


def _growth_cell(g: tuple | None, model: float) -> str:
    """A measured growth ratio with its Fieller interval (a ratio whose interval is unbounded is
    not printed as a number) and the model's value."""
    if g is None:
        return f"missing ({model:.2f})"
    point, lo, hi = g
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return f"unresolved, interval [{lo:.1f}, {hi:.1f}] ({model:.2f})"
    return f"{point:.2f} [{lo:.2f}, {hi:.2f}] ({model:.2f})"


def _tau_panel(ax, ax_ratio, s: Spec, res: dict) -> list[str]:
    """Left: |gap| on a log axis, filled markers where the mean gap is positive (the delay costs
    loss), hollow where negative; whiskers the 95 % t interval of the mean gap, one that reaches
    the bottom edge includes 0. Right: gap(tau) / gap(1) with its Fieller interval, bounded ones only."""
    later = [t for t in s.taus if t != 1]
    growth = measured_growth(s, res, {o: [(t, 1) for t in later] for o in s.tau_optimizers})
    rows = ["| optimizer | sync | " + " | ".join(f"gap tau={t}" for t in s.taus)
            + " | gap(tau)/gap(1) [Fieller 95 %] (model), tau = " + ", ".join(map(str, later)) + " |",
            "|---|" + "---|" * (len(s.taus) + 2)]
    floor = 1e-3    # nats/byte: the axis' bottom; a whisker that reaches it includes 0
    for o in s.tau_optimizers:
        r = res.get(("tau", o))
        if not r:
            continue
        gaps = [paired(r[SYNC], r[f"tau{t}"]) for t in s.taus]
        ms = [mean(g) if g else float("nan") for g in gaps]
        hw = [plotting.t_halfwidth(g) for g in gaps]
        size = [max(abs(m), floor) for m in ms]
        low = [a - max(a - h, floor) for a, h in zip(size, hw)]
        line = ax.errorbar(s.taus, size, yerr=[low, hw], capsize=3, label=plotting.label(o))[0]
        pos = [m > 0 for m in ms]
        for filled in (True, False):
            xs = [t for t, p in zip(s.taus, pos) if p == filled]
            ax.plot(xs, [a for a, p in zip(size, pos) if p == filled], ls="none", marker="o",
                    color=line.get_color(), mfc=line.get_color() if filled else "white")
        gr = growth.get(o, {})
        shown = [(t, gr[(t, 1)]) for t in later if (t, 1) in gr and all(map(math.isfinite, gr[(t, 1)]))]
        ax_ratio.errorbar([t for t, _ in shown], [g[0] for _, g in shown],
                          yerr=[[g[0] - g[1] for _, g in shown], [g[2] - g[0] for _, g in shown]], marker="o",
                          capsize=3, color=line.get_color(), ls="none",
                          label=f"{plotting.label(o)} measured" + ("" if shown else " (none bounded)"))
        ax_ratio.plot(s.taus, [predicted_growth(o, t) for t in s.taus], ls=":", color=line.get_color(),
                      label=f"{plotting.label(o)} model (rho {MODEL_RHO[o]})")
        rows.append(f"| {plotting.label(o)} | {fmt(r[SYNC])} | " + " | ".join(fmt(g) if g else "missing" for g in gaps)
                    + " | " + ", ".join(_growth_cell(gr.get((t, 1)), predicted_growth(o, t)) for t in later) + " |")
    ax.plot([], [], ls="none", marker="o", color="gray", label="filled: gap > 0")
    ax.plot([], [], ls="none", marker="o", color="gray", mfc="white", label="hollow: gap < 0")
    for a, yl in ((ax, "|final val loss - sync| (nats/byte, log)"), (ax_ratio, "gap(tau) / gap(1) (ratio, log)")):
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xticks(list(s.taus), [str(t) for t in s.taus])
        a.minorticks_off()
        a.set_xlabel("delay tau (steps)")
        a.set_ylabel(yl)
        a.legend(fontsize=7)
    ax.set_ylim(bottom=floor)
    ax.set_title("size of the gap vs delay (whiskers: 95 % t interval; to the bottom edge: includes 0)", fontsize=9)
    ax_ratio.set_title("growth (whiskers: Fieller 95 %; unbounded not drawn) vs the bound's r_plain (dotted)",
                       fontsize=9)
    return rows


def share_intervals(ctx: Context, s: Spec, res: dict, shares: dict) -> dict:
    """{(tau, o, c): the 95 % interval of the recovered share} (correctors_readings.share_interval)."""
    out = {}
    for tau, o, c in shares:
        r = res.get((f"corr{tau}", o)) or {}
        if c in r:
            out[(tau, o, c)] = R.share_interval(r[SYNC], r[PLAIN], r[c], ctx.noise_for(o))
    return out


SHARE_LIM = (-1.0, 1.5)   # the corrector panels' y range; a whisker cut by it runs further


def _corrector_panel(ax, s: Spec, res: dict, shares: dict, intervals: dict, o: str) -> list[str]:
    rows = []
    names = list(dict.fromkeys(c for tau in s.corrector_taus for c in (res.get((f"corr{tau}", o)) or {})
                               if c not in (SYNC, PLAIN, R.PUBLISHED_SYNC)))
    width = 0.8 / max(1, len(s.corrector_taus))
    for i, tau in enumerate(s.corrector_taus):
        xs = [j + i * width for j in range(len(names))]
        vals = [shares.get((tau, o, c), float("nan")) for c in names]
        ivs = [intervals.get((tau, o, c), (math.nan, math.nan)) for c in names]
        ax.bar(xs, [v if math.isfinite(v) else 0 for v in vals], width=width, label=f"tau = {tau}",
               yerr=plotting.interval_whiskers(vals, ivs, SHARE_LIM),
               capsize=2, ecolor="dimgray")
        for x, v in zip(xs, vals):    # a bar cut by the axis: its value written at the edge it runs past
            if math.isfinite(v) and not SHARE_LIM[0] <= v <= SHARE_LIM[1]:
                edge = SHARE_LIM[0] if v < SHARE_LIM[0] else SHARE_LIM[1]
                ax.annotate(pct(v), (x, edge), xytext=(0, 4 if v < edge else -4), textcoords="offset points",
                            ha="center", va="bottom" if v < edge else "top", fontsize=6, rotation=90)
        ax.scatter(xs, [predicted_share(o, c, tau) for c in names], marker="_", s=200, color="k",
                   label="model (§4)" if i == 0 else None, zorder=3)
        r = res.get((f"corr{tau}", o)) or {}
        for c in names:
            if c in r:
                lo, hi = intervals.get((tau, o, c), (math.nan, math.nan))
                sh = shares.get((tau, o, c), float("nan"))
                rows.append(f"| {plotting.label(o)} | {tau} | {R.corrector_label(c)} | {_gap_row(r, PLAIN)} | "
                            f"{_gap_row(r, c)} | {pct(sh) + ' ' + R.pct_interval(lo, hi) if math.isfinite(sh) else '-'}"
                            f" | {pct(predicted_share(o, c, tau))} |")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylim(*SHARE_LIM)
    ax.set_xticks([j + width * (len(s.corrector_taus) - 1) / 2 for j in range(len(names))],
                  [R.TICK_LABEL.get(c, R.corrector_label(c)) for c in names], fontsize=7)
    ax.set_ylabel("recovered share of the gap (fraction)")
    ax.set_xlabel("corrector (damped WP: weight prediction, c = sum 0.99^j)")
    ax.set_title(f"{plotting.label(o)}: correctors (bars measured, whiskers Fieller 95 %, - model)", fontsize=9)
    ax.legend(fontsize=7)
    return rows


def _attribution_rows(ctx: Context, s: Spec, res: dict) -> list[str]:
    a = res.get(("attr", s.attribution_optimizer))
    if not a:
        return []
    n = ctx.noise_for(s.attribution_optimizer)
    rows = ["| delayed blocks (Muon, tau = 1) | final loss | gap to sync [95 % interval] |", "|---|---|---|",
            f"| none (sync) | {fmt(a[SYNC])} | - |"]
    for k, what in (("all", "both groups (the plain one-step delay)"), ("matrix", "matrix group only (Muon's)"),
                    ("other", "AdamW group only (embeddings, head, norms)")):
        rows.append(f"| {what} | {fmt(a[k])} | {estimate(paired(a[SYNC], a[k]), n)} |")
    add = [al - m - ot + sy for al, m, ot, sy in zip(a["all"], a["matrix"], a["other"], a[SYNC])
           if all(map(math.isfinite, (al, m, ot, sy)))]
    rows.append(f"| additivity: gap(both) - gap(matrix) - gap(AdamW group) | | {estimate(add, n)} |")
    return rows


def tau_law_rows(s: Spec, res: dict) -> list[str]:
    """The tau law (docs/tau_law.md, theory.dynamics: its predictions were committed before this
    confrontation was computed) against the measured growth of the gap, with fits / fails."""
    from theory.dynamics.confrontation import confront, confront_markdown
    from theory.dynamics.predictions import predictions
    pred = predictions()
    wanted = {o: [pq for pq in pred[o]["ratios"] if pq in ((4, 1), (8, 2))] for o in pred}
    measured = measured_growth(s, res, wanted)
    if not measured:
        return []
    return ["The tau law against the measurement (docs/tau_law.md; predictions from `theory.dynamics`, committed "
            "before they were confronted; measured: ratio of mean paired gaps, Fieller 95 % interval at n - 1 dof; an "
            "interval that reaches +-inf is an unresolved denominator, and 'fits' then says little):", "",
            confront_markdown(confront(measured, pred)), ""]


def readings(ctx: Context, s: Spec, g: dict, res: dict, verdicts: dict, shares: dict,
             intervals: dict) -> tuple[list[str], list[str]]:
    """How §8's lines are to be read (correctors_readings): stall or diverge by the curves, the
    model against the measured shares, what the tau = 1 lines understate, DC-ASGD as the data
    allow. Returns (the page's lines, one sentence per reading for the front page)."""
    courses = {(plotting.label(o), t): curves(ctx, g[("tau", o, f"tau{t}")]) for o in s.tau_optimizers
               for t in s.taus if t != 1 and ("tau", o, f"tau{t}") in g}
    corr = {(tau, o): res[(f"corr{tau}", o)] for tau in s.corrector_taus for o in s.corrector_optimizers
            if (f"corr{tau}", o) in res}
    recovers = {k: verdicts[recovers_line(*k)] for k in shares if recovers_line(*k) in verdicts}
    blocks = [(f"Stall or diverge, by the validation curve (`correctors_readings.curve_course`: diverges when the "
               f"final loss is above the first recorded one or the curve rises more than {R.RISE_MARGIN} nats/byte "
               "above its running minimum; otherwise a stall, a slower fall):", R.course_lines(courses)),
              ("The corrector model against the measurement:", R.model_lines(shares, intervals, predicted_share,
                                                                             plotting.label)),
              ("Where a 'recovers' line understates the corrector:", R.beats_plain_lines(corr, recovers, ctx.noise_for,
                                                                                         plotting.label)),
              ("DC-ASGD-a / -EMA against the plain delay, worded as the data allow:",
               R.near_zero_lines(corr, ctx.noise_for, plotting.label, EQUIV_MARGIN))]
    out = []
    for head, lines in blocks:
        if lines:
            out += [head, "", *(f"- {x}" for x in lines), ""]
    short = [R.course_summary(courses)] + [lines[-1] for _, lines in blocks[1:] if lines]
    return out, [x for x in short if x]


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p, s = ctx.profile, spec(ctx.profile)
    verdicts, shares = judge(ctx, res)
    intervals = share_intervals(ctx, s, res, shares)
    fig, axes = plotting.new(ncols=2 + len(s.corrector_optimizers), width=5.0)
    tau_rows = _tau_panel(axes[0], axes[1], s, res)
    corr_rows = ["| optimizer | tau | corrector | plain delay's gap | corrector's gap | recovered [95 %] | model |",
                 "|---|---|---|---|---|---|---|"]
    for ax, o in zip(axes[2:], s.corrector_optimizers):
        corr_rows += _corrector_panel(ax, s, res, shares, intervals, o)
    out.files = plotting.save(fig, ctx.fig_dir, "correctors_gap_vs_tau")
    read, out.highlights = readings(ctx, s, g, res, verdicts, shares, intervals)
    out.caption = (f"First panel: the size of the sync-async gap |L(delay tau) - L(sync)| (nats/byte, log axis) vs the "
                   f"delay tau ({p.main_size} model, {p.steps} steps, seeds {', '.join(map(str, s.seeds))}); filled "
                   "markers: the mean gap is positive (the delay costs loss), hollow: negative; whiskers: the 95 % t "
                   "interval of the mean gap over seeds, a whisker reaching the bottom edge includes 0. Second: the "
                   "growth gap(tau) / gap(1) with its Fieller 95 % interval (a ratio whose interval is unbounded, an "
                   "unresolved gap(1), is not drawn), against the bound's r_plain(tau) (dotted). Right: each "
                   "corrector's recovered share 1 - gap(corrector) / gap(plain delay) at tau = "
                   f"{' and '.join(map(str, s.corrector_taus))}; whiskers: its Fieller 95 % interval (one cut by the "
                   "panel's edge runs further or is unbounded; a bar cut by the edge has its value written there; no "
                   "bar: runs not trained, listed as missing); black dashes: the model's prediction "
                   "(docs/correctors.md §4). 'Damped weight prediction' is `lmo.nesterov_lookahead`, the package's "
                   "own weight prediction with c = sum_j 0.99^j; 'published Nesterov' is NAdamW (in AdamW's place) "
                   "or Muon at momentum 0.99 without extrapolation, its gap taken against the sync run at the "
                   "preset momentum, so it carries the momentum change too.")
    out.paper = ["The paper studies one delay (one step) and one corrector (EF); these lines are the package's own "
                 "(issue 41), exploratory, judged by docs/correctors.md §8.", MARIN + "."]
    out.measured = (["Gap vs tau (final val loss minus sync, per seed; mean ± SD):", "", *tau_rows, "",
                     "Correctors (recovered share = 1 - mean h / mean g; h, g: the corrector's and the plain delay's "
                     "gaps to sync; 95 % Fieller interval):", "", *corr_rows, "", "Attribution:", "",
                     *_attribution_rows(ctx, s, res), "", *tau_law_rows(s, res), *read])
    out.verdicts = {k: ctx.verdict(v) for k, v in verdicts.items()}
    out.notes = ["lr damping at tau = 1 is the plain delay itself (eta tau^-1 = eta): not trained there, its share "
                 "is 0 by construction. The theory's predicted order, written before these runs, is "
                 "docs/correctors.md §5; §7 lists the sharpest predictions.", R.scion_confound()]
    return out


build = grid_figure(NAME, TITLE, grid, _render)

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
import statistics
from dataclasses import dataclass

from lmo.variants import EF, SYNC, TWO_BW

from . import plotting
from ..statistics.seed_stats import estimate, fieller, paired
from ..statistics.t_tests import t_quantile
from ..statistics.verdicts import (both, equivalent, every, ef_recovers, fmt, larger_gap, lower_is_better,
    mean, spread)
from .common import Context, FigureOutput, grid_figure, pct, spec_of, variant

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


SPECS = {"full": Spec(), "quick": Spec(), "gpu": Spec(seeds=(0, 1)),
         "micro": Spec(tau_optimizers=("adamw",), taus=(1, 2), corrector_optimizers=("adamw",),
                       corrector_taus=(1, 2), correctors=("weight_prediction", "lr_damping"),
                       seeds=(0, 1))}


def spec(p) -> Spec:
    """This figure's knobs in profile ``p``."""
    return spec_of(p, NAME, SPECS)


def delayed(p, o: str, tau: int, seed: int, corrector: str = PLAIN, groups: str = "all") -> dict:
    """Settings of one delayed run: Figure 3's 2BW run with only the fields that differ from it
    (tau 1, no corrector and every group delayed are Figure 3's own run, the same key)."""
    extra = dict({"tau": tau} if tau != 1 else {}, **({"corrector": corrector} if corrector != PLAIN else {}),
                 **({"delayed_groups": groups} if groups != "all" else {}))
    return variant(p, o, TWO_BW, seed=seed, **extra)


def _applies(corrector: str, tau: int) -> bool:
    """lr damping by delay (eta tau^-p) is the identity at tau = 1: the plain delay's run."""
    return not (corrector == "lr_damping" and tau == 1)


def grid(p) -> dict:
    """{(panel, optimizer, kind): [settings per seed]}, in the order the runs are worth training:
    the attribution, the gap vs tau, then the correctors. Panels: ("attr", o, sync | all |
    matrix | other), ("tau", o, sync | tau<k>), ("corr<tau>", o, none | ef | corrector)."""
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
    return g


# --- the theory's prediction (docs/correctors.md §4, its model: unit steps with lag-k correlation rho^k)

#: the model's rho per optimizer: its momentum (docs/correctors.md §4, assumption (i))
MODEL_RHO = {"adamw": 0.9, "muon": 0.95, "scion": 0.95}


def r_model(rho: float, tau: int, c: float) -> float:
    """r_t / eta = ||sum_{j=1..tau} u_{t-j} - c u_{t-1-tau}|| for unit steps with
    <u_s, u_{s-k}> = rho^k: sqrt(tau + 2 sum_{k<tau} (tau-k) rho^k + c^2 - 2 c sum_{k=1..tau} rho^k)."""
    s = tau + 2 * sum((tau - k) * rho ** k for k in range(1, tau))
    cross = sum(rho ** k for k in range(1, tau + 1))
    return math.sqrt(max(s + c * c - 2 * c * cross, 0.0))


def predicted_share(optimizer: str, corrector: str, tau: int) -> float:
    """The recovered share 1 - r(corrector) / r(plain) the model predicts (nan: no model line;
    DC-ASGD-a / -EMA: 0, their z_t is x_t; lr damping: 0 at tau = 1, tau^-1 = 1)."""
    rho = MODEL_RHO.get(optimizer)
    if rho is None:
        return float("nan")
    coef = {"weight_prediction": float(tau), "nesterov_lookahead": math.fsum(0.99 ** j for j in range(1, tau + 1)),
            EF: 1.0 if tau == 1 else float("nan")}.get(corrector)
    if corrector in ("dc_asgd_adaptive", "dc_asgd_ema") or (corrector == "lr_damping" and tau == 1):
        return 0.0
    if coef is None or not math.isfinite(coef):
        return float("nan")
    return 1 - r_model(rho, tau, coef) / r_model(rho, tau, 0.0)


def predicted_growth(optimizer: str, tau: int) -> float:
    """gap(tau) / gap(1) as the plain delay's r grows: r_plain(tau) / r_plain(1) (§5)."""
    rho = MODEL_RHO[optimizer]
    return r_model(rho, tau, 0.0) / r_model(rho, 1, 0.0)


# --- the verdicts (docs/correctors.md §8)

ATTRIBUTION = "Muon's delay penalty lives in its AdamW group (AdamW-group-only gap > 0 and matrix-only below it)"
GROWS = "the gap grows with tau (L at the largest tau above L at tau = 1, every optimizer)"
ADAMW_ABOVE = "AdamW's gap above Muon's at every tau (D - R > 0)"
SCION_BELOW = "the all-LMO variant removes the residual gap: scion's gap below Muon's at every tau"
EQUIV_MARGIN = 0.005


def recovers_line(tau: int, o: str, corrector: str) -> str:
    """§8's line per corrector (one line each, as §8 declared them: a merged "every corrector"
    line would fail by design on DC-ASGD, which §5 predicts recovers about nothing)."""
    return f"tau = {tau}, {plotting.label(o)}: {corrector} recovers part of the gap (1 - h / g > 0)"


def best_line(tau: int, o: str) -> str:
    return f"tau = {tau}, {plotting.label(o)}: the best corrector beats the runner-up (paired)"


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
            names = [c for c in r if c not in (SYNC, PLAIN)]
            for c in names:
                v, frac = ef_recovers(r[SYNC], r[PLAIN], r[c], plotting.label(o), low=0.0, by=c, noise=nz[o])
                out[recovers_line(tau, o, c)] = v
                shares[(tau, o, c)] = frac
            ranked = sorted(names, key=lambda c: (lambda m: m if math.isfinite(m) else math.inf)(mean(r[c])))
            if len(ranked) >= 2:
                out[best_line(tau, o)] = lower_is_better(r[ranked[0]], r[ranked[1]],
                                                         f"{ranked[0]} below {ranked[1]}", nz[o])
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


def _tau_panel(ax, ax_ratio, s: Spec, res: dict) -> list[str]:
    rows = ["| optimizer | sync | " + " | ".join(f"gap tau={t}" for t in s.taus)
            + " | gap(tau)/gap(1), measured (model) |", "|---|" + "---|" * (len(s.taus) + 2)]
    for o in s.tau_optimizers:
        r = res.get(("tau", o))
        if not r:
            continue
        gaps = [paired(r[SYNC], r[f"tau{t}"]) for t in s.taus]
        ms = [mean(g) if g else float("nan") for g in gaps]
        ax.errorbar(s.taus, ms, yerr=[plotting.t_halfwidth(g) for g in gaps], marker="o", capsize=3,
                    label=plotting.label(o))
        ratio = [m / ms[0] if ms[0] and math.isfinite(ms[0]) else float("nan") for m in ms]
        ax_ratio.plot(s.taus, ratio, marker="o", label=f"{plotting.label(o)} measured")
        ax_ratio.plot(s.taus, [predicted_growth(o, t) for t in s.taus], ls=":", color=ax_ratio.lines[-1].get_color(),
                      label=f"{plotting.label(o)} model (rho {MODEL_RHO[o]})")
        rows.append(f"| {plotting.label(o)} | {fmt(r[SYNC])} | " + " | ".join(fmt(g) if g else "missing" for g in gaps)
                    + " | " + ", ".join(f"{x:.2f} ({predicted_growth(o, t):.2f})" for x, t in zip(ratio, s.taus))
                    + " |")
    for a, yl in ((ax, "final val loss gap to sync"), (ax_ratio, "gap(tau) / gap(1)")):
        a.set_xscale("log", base=2)
        a.set_xticks(list(s.taus), [str(t) for t in s.taus])
        a.set_xlabel("delay tau (steps)")
        a.set_ylabel(yl)
        a.legend(fontsize=7)
    ax.set_yscale("symlog", linthresh=0.01)   # gaps span 0.01 to 1 nats (and may be negative)
    ax.set_title("gap vs delay (tiny model, 3 seeds; bars: 95 % t interval; symlog)", fontsize=9)
    ax_ratio.set_title("growth vs the bound's r_plain(tau) (dotted)", fontsize=9)
    return rows


def _corrector_panel(ax, s: Spec, res: dict, shares: dict, o: str) -> list[str]:
    rows = []
    names = list(dict.fromkeys(c for tau in s.corrector_taus for c in (res.get((f"corr{tau}", o)) or {})
                               if c not in (SYNC, PLAIN)))
    width = 0.8 / max(1, len(s.corrector_taus))
    for i, tau in enumerate(s.corrector_taus):
        xs = [j + i * width for j in range(len(names))]
        ax.bar(xs, [shares.get((tau, o, c), float("nan")) for c in names], width=width, label=f"tau = {tau}")
        ax.scatter(xs, [predicted_share(o, c, tau) for c in names], marker="_", s=200, color="k",
                   label="model (§4)" if i == 0 else None, zorder=3)
        r = res.get((f"corr{tau}", o)) or {}
        for c in names:
            if c in r:
                rows.append(f"| {plotting.label(o)} | {tau} | {c} | {_gap_row(r, PLAIN)} | {_gap_row(r, c)} | "
                            f"{pct(shares.get((tau, o, c), float('nan')))} | {pct(predicted_share(o, c, tau))} |")
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xticks([j + width * (len(s.corrector_taus) - 1) / 2 for j in range(len(names))],
                  [c.replace("_", "\n") for c in names], fontsize=6)
    ax.set_ylabel("recovered share of the gap")
    ax.set_xlabel("corrector")
    ax.set_title(f"{plotting.label(o)}: correctors (bars measured, - model)", fontsize=9)
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


def measured_growth(s: Spec, res: dict, pairs) -> dict:
    """{optimizer: {(hi, lo): (gap(hi) / gap(lo), Fieller 95 % interval)}} of the mean paired gaps
    (same seeds, so the two means covary: cov = cov_s(g_hi, g_lo) / n; z = t_{0.975, n - 1});
    an unresolved denominator gives an unbounded interval."""
    out: dict = {}
    for o in s.tau_optimizers:
        r = res.get(("tau", o))
        if not r:
            continue
        gaps = {t: paired(r[SYNC], r[f"tau{t}"]) for t in s.taus}
        for hi, lo in pairs.get(o, ()):
            a, b = gaps.get(hi) or [], gaps.get(lo) or []
            n = min(len(a), len(b))
            if n < 2:
                continue
            a, b = a[:n], b[:n]
            ma, mb = mean(a), mean(b)
            va, vb = statistics.variance(a) / n, statistics.variance(b) / n
            cov = sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (n - 1) / n
            lo_, hi_ = fieller(ma, mb, va, vb, cov, t_quantile(0.975, n - 1))
            point = ma / mb if mb else float("nan")
            if math.isfinite(point):
                out.setdefault(o, {})[(hi, lo)] = (point, min(lo_, point), max(hi_, point))
    return out


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


def _render(ctx: Context, out: FigureOutput, g: dict, res: dict) -> FigureOutput:
    p, s = ctx.profile, spec(ctx.profile)
    verdicts, shares = judge(ctx, res)
    fig, axes = plotting.new(ncols=2 + len(s.corrector_optimizers), width=4.6)
    tau_rows = _tau_panel(axes[0], axes[1], s, res)
    corr_rows = ["| optimizer | tau | corrector | plain delay's gap | corrector's gap | recovered | model |",
                 "|---|---|---|---|---|---|---|"]
    for ax, o in zip(axes[2:], s.corrector_optimizers):
        corr_rows += _corrector_panel(ax, s, res, shares, o)
    out.files = plotting.save(fig, ctx.fig_dir, "correctors_gap_vs_tau")
    out.caption = (f"Left: the sync-async gap vs the delay tau ({p.main_size} model, {p.steps} steps, seeds "
                   f"{', '.join(map(str, s.seeds))}); second: its growth against the bound's r_plain(tau). Right: "
                   "each corrector's recovered share 1 - gap(corrector) / gap(plain delay) at tau = "
                   f"{' and '.join(map(str, s.corrector_taus))}, with the model's prediction (docs/correctors.md §4).")
    out.paper = ["The paper studies one delay (one step) and one corrector (EF); these lines are the package's own "
                 "(issue 41), exploratory, judged by docs/correctors.md §8.", MARIN + "."]
    out.measured = (["Gap vs tau (final val loss minus sync, per seed; mean ± SD):", "", *tau_rows, "",
                     "Correctors (recovered share = 1 - mean h / mean g; h, g: the corrector's and the plain delay's "
                     "gaps to sync):", "", *corr_rows, "", "Attribution:", "", *_attribution_rows(ctx, s, res), "",
                     *tau_law_rows(s, res)])
    out.verdicts = {k: ctx.verdict(v) for k, v in verdicts.items()}
    out.notes = ["lr damping at tau = 1 is the plain delay itself (eta tau^-1 = eta): not trained there, its share "
                 "is 0 by construction. The theory's predicted order, written before these runs, is "
                 "docs/correctors.md §5; §7 lists the sharpest predictions."]
    return out


build = grid_figure(NAME, TITLE, grid, _render)

"""Readings of the correctors study beyond docs/correctors.md §8's verdict lines (issue 51 item 4).

Pure functions of the measured cells, shared by the correctors figure (``correctors.py``) and its
tests; none decides a §8 line, each says how a line is to be read:

- the corrector model of §4 (:func:`r_model`, :func:`predicted_share`, :func:`predicted_growth`) and
  the measured growth of the gap with its Fieller interval (:func:`measured_growth`);

- :func:`curve_course`: "stall" or "diverges", decided by a validation curve (the rule is in its
  docstring), and :func:`course_lines`, which applies it to the gap-vs-tau panel's delayed runs;
- :func:`share_interval`: the 95 % Fieller interval of a recovered share, and
  :func:`model_lines`: the corrector model's predicted shares (§4) against the measured ones,
  Spearman's rank correlation and the cells where the model's level is refuted;
- :func:`beats_plain_lines`: where §8's "recovers" line is inconclusive only because the plain
  delay's own gap is not resolved, yet the corrector's loss is decidedly below the plain delay's;
- :func:`near_zero_lines`: DC-ASGD's effect worded as the data allow ("not distinguishable from 0"
  unless the equivalence margin is actually shown);
- :func:`scion_confound`: the head radius that scion's comparison with Muon carries along.

The "Nesterov look-ahead" of ``lmo.nesterov_lookahead`` is the package's own construction: weight
prediction whose extrapolation coefficient is c = sum_{j=1..tau} beta^j (beta = 0.99) instead of
tau, i.e. a 1-4 % shorter forward step at tau <= 4. It is *labelled* for what it is here
(:data:`CORRECTOR_LABEL`); its runs keep their settings (``corrector="nesterov_lookahead"``), so
every kept record keeps its identity key.
"""
from __future__ import annotations

import inspect
import math
import statistics
from typing import Callable, Sequence

import lmo
from lmo.variants import EF, SYNC

from ..statistics.seed_stats import estimate, fieller, joined, paired, paired_ratio
from ..statistics.verdicts import HOLDS, equivalent, lower_is_better, mean, spearman

#: the name each corrector is shown by (the run settings and identity keys keep ``lmo.CORRECTORS``' names)
CORRECTOR_LABEL = {
    EF: "EF", "weight_prediction": "weight prediction",
    "nesterov_lookahead": "damped weight prediction (c = sum 0.99^j)",
    "dc_asgd_adaptive": "DC-ASGD-a", "dc_asgd_ema": "DC-ASGD-EMA", "lr_damping": "lr damping",
    "published_nesterov": "published Nesterov (NAdamW / Muon, momentum 0.99)",
}
#: the published Nesterov method for asynchronous pipelines (NAdamW with momentum 0.99, no forward
#: extrapolation), run as a corrector of each optimizer's plain delay: its cell kind, and the
#: optimizer it trains in place of AdamW (Muon keeps Muon, whose momentum is Nesterov already)
PUBLISHED = "published_nesterov"
PUBLISHED_OPTIMIZER = {"adamw": "nadam"}
#: the synchronous run of the published method's own optimizer and momentum (declared after its 12
#: delayed runs had shown the momentum change as a confound): its cell kind, no corrector of its own
PUBLISHED_SYNC = "published_nesterov_sync"
#: the correctors that extrapolate the gradient point along the last applied update (the model's own kind)
EXTRAPOLATING = (EF, "weight_prediction", "nesterov_lookahead")
NEAR_ZERO = ("dc_asgd_adaptive", "dc_asgd_ema")


#: shorter names for one-sentence summaries, and for a figure's tick labels
SHORT_LABEL = {"nesterov_lookahead": "damped weight prediction"}
TICK_LABEL = {"nesterov_lookahead": "damped\nWP", "published_nesterov": "published\nNesterov",
              "weight_prediction": "weight\npred.", "dc_asgd_adaptive": "DC-\nASGD-a", "dc_asgd_ema": "DC-ASGD\n-EMA",
              "lr_damping": "lr\ndamping"}


def corrector_label(c: str) -> str:
    return CORRECTOR_LABEL.get(c, c)


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



def measured_growth(s, res: dict, pairs) -> dict:
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
            ratio = paired_ratio(gaps.get(hi) or [], gaps.get(lo) or [])
            if ratio is not None:
                out.setdefault(o, {})[(hi, lo)] = ratio
    return out


# --- stall or diverges, by the curve

#: nats/byte a validation curve may rise above its running minimum before it counts as a rise
#: (chosen after the kept curves were seen: delayed AdamW's early wobbles reach +0.24, scion's
#: blow-ups at tau = 4 / 8 +1.3 / +8.4; the seed-to-seed spread of a final loss is 0.01-0.1)
RISE_MARGIN = 0.5
DIVERGES, STALL = "diverges", "stall"


def curve_course(losses: Sequence[float], margin: float = RISE_MARGIN) -> str:
    """How a delayed run's validation curve goes, by one stated rule.

    With L_0, ..., L_T the recorded validation losses in step order (nats/byte), the run
    **diverges** when it ends above where it started, L_T > L_0, or when it rises above its
    running minimum by more than ``margin`` at some record: max_t (L_t - min_{s <= t} L_s) > margin
    (a non-finite loss counts as a rise). Otherwise it is a **stall**: it never rose by more than the
    margin, so a large gap to sync comes from a slower fall, not from an instability. The rule is
    asked of delayed runs with a gap; on a healthy curve "stall" just means "no blow-up".

    >>> curve_course([3.27, 3.05, 2.9, 2.7, 2.49])       # AdamW tau = 4: a monotone slow fall
    'stall'
    >>> curve_course([5.2, 4.9, 13.3, 7.8, 2.8])         # scion tau = 8: blows up at the 3rd record
    'diverges'
    """
    xs = list(losses)
    if not xs:
        raise ValueError("losses: an empty curve")
    if not all(math.isfinite(x) for x in xs) or xs[-1] > xs[0]:
        return DIVERGES
    return DIVERGES if largest_rise(xs) > margin else STALL


def largest_rise(losses: Sequence[float]) -> float:
    """max_t (L_t - min_{s <= t} L_s): how far the curve ever climbed above its best so far."""
    low, rise = math.inf, 0.0
    for x in losses:
        low = min(low, x)
        rise = max(rise, x - low)
    return rise


def course_lines(cells: dict, margin: float = RISE_MARGIN) -> list[str]:
    """One line per (optimizer label, tau) of ``cells`` {(label, tau): [(steps, losses) per seed]}:
    how many seeds stall / diverge by :func:`curve_course`, the mean first and final recorded
    loss, and the largest rise of any seed."""
    out = []
    for (name, tau), curves in cells.items():
        curves = [c for c in curves if c and c[1]]
        if not curves:
            continue
        kinds = [curve_course(c[1], margin) for c in curves]
        first, last = mean([c[1][0] for c in curves]), mean([c[1][-1] for c in curves])
        steps = (curves[0][0][0], curves[0][0][-1])
        verdict = (DIVERGES if all(k == DIVERGES for k in kinds) else STALL if all(k == STALL for k in kinds)
                   else "mixed")
        out.append(f"{name}, tau = {tau}: **{verdict}** ({kinds.count(STALL)} of {len(kinds)} seeds stall, "
                   f"{kinds.count(DIVERGES)} diverge; validation loss {first:.2f} -> {last:.2f} nats/byte from step "
                   f"{steps[0]} to {steps[1]}, mean of seeds; largest rise above the running minimum "
                   f"{max(largest_rise(c[1]) for c in curves):.2f})")
    return out


def course_summary(cells: dict, margin: float = RISE_MARGIN) -> str:
    """One sentence over ``cells`` (as :func:`course_lines`): per optimizer, at which tau its seeds
    all stall, all diverge, or mix."""
    by: dict = {}
    for (name, tau), curves in cells.items():
        kinds = {curve_course(c[1], margin) for c in curves if c and c[1]}
        if kinds:
            by.setdefault(name, {}).setdefault(kinds.pop() if len(kinds) == 1 else "mixed", []).append(tau)
    verb = {STALL: "stalls", DIVERGES: "diverges", "mixed": "mixes"}
    parts = [f"{name} " + " and ".join(f"{verb[k]} at tau = {', '.join(map(str, ts))}" for k, ts in ks.items())
             for name, ks in by.items()]
    head = f"By the validation curve (a rise over {margin} nats/byte, or ending above the start, diverges): "
    return head + "; ".join(parts) + "." if parts else ""


# --- the recovered share's interval and the model against the measurement

def _aligned(*cols: Sequence[float]) -> list[list[float]]:
    rows = [r for r in zip(*cols) if all(v is not None and math.isfinite(v) for v in r)]
    return [[r[i] for r in rows] for i in range(len(cols))]


def share_interval(sync: Sequence[float], plain: Sequence[float], corr: Sequence[float],
                   noise=None) -> tuple[float, float]:
    """95 % interval of the recovered share R = 1 - mean(h) / mean(g) (g_s, h_s: the plain delay's
    and the corrector's gaps to sync per seed): 1 minus Fieller's interval for mean(h) / mean(g),
    with the two means' covariance cov_s(g, h) / n and z the t quantile of the paired difference
    g - h, as ``verdicts.ef_recovers`` prints it; (-inf, inf) where the gap is not resolved."""
    s, p, c = _aligned(sync, plain, corr)
    kw = {} if noise is None else {"noise": noise}
    gs, hs = paired(s, p), paired(s, c)
    g, h = estimate(gs, **kw), estimate(hs, **kw)
    d = estimate([joined(x - y, x, y) for x, y in zip(gs, hs)], **kw)   # g - h, tagged with every run it rests on
    if not (g.stat.usable and d.stat.usable):
        return -math.inf, math.inf
    cov = (statistics.covariance(list(map(float, gs)), list(map(float, hs))) / len(gs)
           if len(gs) >= 3 and not g.borrowed else 0.0)
    lo, hi = fieller(h.mean, g.mean, h.se ** 2, g.se ** 2, cov, z=d.stat.t_crit())
    return 1 - hi, 1 - lo


def pct_interval(lo: float, hi: float) -> str:
    f = lambda x: "-inf" if x == -math.inf else "+inf" if x == math.inf else f"{x:.0%}"  # noqa: E731
    return f"[{f(lo)}, {f(hi)}]"


def model_lines(shares: dict, intervals: dict, predicted: Callable[[str, str, int], float],
                label: Callable[[str], str]) -> list[str]:
    """The model's predicted shares (§4) against the measured ones over every cell (tau, o, c) of
    ``shares`` where both are finite: Spearman's rank correlation over all of them and within the
    extrapolating correctors (:data:`EXTRAPOLATING`), and each cell where the prediction lies
    outside the measured share's 95 % interval (``intervals``): the model's level refuted there;
    the last line says it in one sentence."""
    cells = [(k, predicted(k[1], k[2], k[0]), v) for k, v in shares.items()
             if math.isfinite(v) and math.isfinite(predicted(k[1], k[2], k[0]))]
    if len(cells) < 3:
        return []
    ext = [x for x in cells if x[0][2] in EXTRAPOLATING]
    rho = spearman([p for _, p, _ in cells], [m for _, _, m in cells])
    rho_ext = spearman([p for _, p, _ in ext], [m for _, _, m in ext])
    out = [f"The model of docs/correctors.md §4 against the measured shares: Spearman rank correlation {rho:.2f} "
           f"over {len(cells)} cells (every corrector with a model value at tau = 1 and 4), {rho_ext:.2f} within the "
           f"extrapolating correctors (EF, weight prediction, damped weight prediction; n = {len(ext)})."]
    refuted = []
    for (tau, o, c), p, m in cells:
        lo, hi = intervals.get((tau, o, c), (-math.inf, math.inf))
        if not lo <= p <= hi:
            refuted.append(f"{label(o)} tau = {tau}, {corrector_label(c)}: predicted {p:.0%}, measured {m:.0%} "
                           f"{pct_interval(lo, hi)}")
    out.append("The model's level is refuted (its prediction outside the measured share's 95 % interval) at: "
               + "; ".join(refuted) + "." if refuted else
               "The model's level is not refuted at any cell (every prediction inside its share's 95 % interval).")
    groups: dict = {}
    for (tau, o, c), p, m in cells:
        lo, hi = intervals.get((tau, o, c), (-math.inf, math.inf))
        if not lo <= p <= hi:
            groups.setdefault((label(o), tau, round(p, 2)), []).append(m)
    where = "; ".join(f"{name} tau = {tau} (predicted {p:.0%}, measured "
                      + (f"{min(ms):.0%}-{max(ms):.0%}" if len(ms) > 1 else f"{ms[0]:.0%}") + ")"
                      for (name, tau, p), ms in groups.items())
    out.append(f"Model vs measured shares: Spearman {rho:.2f} over {len(cells)} cells, {rho_ext:.2f} within the "
               f"extrapolating correctors (n = {len(ext)}); " + (f"its level refuted at {where}." if where else
                                                                 "its level refuted nowhere."))
    return out


# --- what §8's lines understate or cannot say

def beats_plain_lines(res: dict, recovers: dict, noise_of: Callable[[str], object],
                      label: Callable[[str], str]) -> list[str]:
    """Cells (tau, o, c) whose §8 line "recovers part of the gap" is not decided because the plain
    delay's own gap g = L(plain) - L(sync) is not resolved (its 95 % interval reaches 0), while the
    corrector's loss is decidedly below the plain delay's (paired, :func:`verdicts.lower_is_better`):
    there the line understates the corrector. ``res``: {(tau, o): {kind: losses}}; ``recovers``:
    {(tau, o, c): that line's Verdict}. The last line, when there is any, says it in one sentence."""
    out, short = [], {}
    for (tau, o, c), v in recovers.items():
        r = res.get((tau, o)) or {}
        if v.status == HOLDS or not {c, "none", SYNC} <= set(r):
            continue
        g = estimate(paired(r[SYNC], r["none"]), noise_of(o))
        if g.stat.usable and g.interval()[0] > 0:
            continue    # the gap is resolved: the line is undecided for another reason
        b = lower_is_better(r[c], r["none"], f"{c} below the plain delay", noise_of(o))
        if b.status == HOLDS and b.test is not None:
            out.append(f"tau = {tau}, {label(o)}: {corrector_label(c)} is decidedly below the plain delay, "
                       f"L(corrector) - L(plain) = {-b.test.est:+.3f} [{-b.test.hi:+.3f}, {-b.test.lo:+.3f}] nats/byte "
                       f"(paired, n = {b.test.n}), although its 'recovers' line is {v.status}: the plain delay's own "
                       "gap is not resolved at these seeds, so that line understates it")
            short.setdefault((tau, label(o)), []).append(f"{SHORT_LABEL.get(c, corrector_label(c))} "
                                                         f"{-b.test.est:+.3f}")
    if short:
        out.append("Understated: " + "; ".join(f"at tau = {tau}, {name}, " + ", ".join(xs) for (tau, name), xs
                                                in short.items())
                   + " nats/byte against the plain delay, each decided (paired), while the 'recovers' lines stay "
                   "open because the plain delay's own gap is not resolved.")
    return out


def near_zero_lines(res: dict, noise_of: Callable[[str], object], label: Callable[[str], str],
                    margin: float) -> list[str]:
    """DC-ASGD-a / -EMA against the plain delay, L(corrector) - L(plain) with its 95 % interval,
    worded as the data allow: 'differs from 0' when the interval excludes 0; 'equivalent within
    +-margin' only when the equivalence test holds; else 'not distinguishable from 0', and when the
    interval's half-width exceeds the margin, that equivalence cannot be shown at this spread. The
    last line, when there is any, counts the cells by wording."""
    out, words = [], []
    for (tau, o), r in res.items():
        for c in NEAR_ZERO:
            if c not in r or "none" not in r:
                continue
            e = estimate(paired(r["none"], r[c]), noise_of(o))
            if not e.stat.usable:
                continue
            lo, hi = e.interval()
            if lo > 0 or hi < 0:
                word = "differs from 0"
            elif equivalent(paired(r["none"], r[c]), margin, c, noise_of(o)).status == HOLDS:
                word = f"equivalent to the plain delay within +-{margin} nats/byte"
            else:
                word = "not distinguishable from 0" + (
                    f"; equivalence within +-{margin} cannot be shown at this spread (half-width "
                    f"{(hi - lo) / 2:.3f} > {margin})" if (hi - lo) / 2 > margin else ", equivalence not decided")
            out.append(f"tau = {tau}, {label(o)}, {corrector_label(c)}: L(corrector) - L(plain) = {e.mean:+.3f} "
                       f"[{lo:+.3f}, {hi:+.3f}] nats/byte (n = {e.n}): {word}")
            words.append(word.split(";")[0].split(",")[0])
    if words:
        nd = words.count("not distinguishable from 0")
        untestable = sum("cannot be shown" in x for x in out)
        out.append(f"DC-ASGD-a / -EMA against the plain delay: not distinguishable from 0 in {nd} of {len(words)} "
                   f"cells ({untestable} of them too wide to test equivalence within +-{margin}), equivalent in "
                   f"{sum(w.startswith('equivalent') for w in words)}, different from 0 in "
                   f"{words.count('differs from 0')}.")
    return out


def scion_head_radius() -> float:
    """``lmo.scion``'s default head radius, relative to its hidden layers' (Scion's nanoGPT setting)."""
    return float(inspect.signature(lmo.scion).parameters["head_radius"].default)


def scion_confound() -> str:
    """The confound of 'scion's gap not below Muon's', with scion's head radius read from lmo."""
    r = scion_head_radius()
    return (f"Confounded: scion's head (tied to its embedding) steps at head_radius = {r:g} x its hidden layers' "
            f"radius (`lmo.scion`'s default, Scion's nanoGPT setting), about 9 x the per-entry step of Muon's AdamW "
            "group (docs/correctors.md §5), so 'scion not below Muon' may be the head's step size rather than the "
            "all-LMO design; a scion run at an equal per-entry head step (head_radius ~ 6.4) would separate the two.")

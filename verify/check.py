"""Empirical check of a theory bound against a Monte Carlo run (docs/design.md §6, step 3).

A bound claims  E Q <= B(constants, r).  From R independent seeds, per recorded step:

* Q (momentum error, gradient norm): one-sided Student-t bounds
      LCB_Q = mean - t_{R-1, 1-a} s/sqrt(R),   UCB_Q = mean + t_{R-1, 1-a} s/sqrt(R);
* bounds affine in r (r_w(t) or r_avg, the measured perturbation; every registered trajectory
  bound is: B(r) = B(0) + c r with c = B(1) - B(0) >= 0): the paired difference per seed,
      D = Q - c r,   E Q <= B(E r)  <=>  E D <= B(0),
  one-sided Student-t bounds on D. The bound is so evaluated at the measured r of the same
  seeds: ratio = mean Q / B(mean r), exact on the sample (sigma = 0: D has no variance);
  CI bounds on Q are reported as LCB_D + c mean r, UCB_D + c mean r.
* a bound not affine in r: r_w(t), r_avg bounded in [0, cap] with cap = eta x delay, or
  2 eta for EF: empirical-Bernstein bounds (Maurer and Pontil 2009, Thm 4), which keep their
  level for any distribution on [0, cap]:
      mean +- ( sqrt(2 V log(2/a)/R) + 7 cap log(2/a) / (3 (R-1)) ),  clipped to [0, cap]
  (with R = 8 seeds the second term alone exceeds cap: r sits at the cap, so the paired form is
  preferred wherever it applies).

a = alpha / n_tests, Bonferroni over the n steps checked, and over both families (Q and r)
when a non-affine bound uses r: n_tests = n or 2n. The three verdicts:

* violated:           some step has LCB_Q > B(r)   (r at its UCB when not affine: B increases in r)
* holds confidently:  every step has UCB_Q <= B(r) (r at its LCB when not affine)
* not violated:       neither (the data cannot tell).

Coverage (verify.coverage measures it): on right-skewed samples (lognormal, exponential) the
t-LCB over-covers, so "violated" keeps its level (conservative); the t-UCB under-covers, so
"holds confidently" is approximate there (measured coverage of the one-sided 99% t-UCB:
0.60-0.98 for lognormal / exponential at R = 8-256, while the t-LCB covers >= 0.995;
``python -m verify.coverage``). The t-bound is used exactly for Q; the
empirical-Bernstein bound for r_w / r_avg.

margin = min over steps of (B - UCB_Q)/B; tightness = max over steps of mean/B (1 = tight);
worst_step = the step attaining the tightness. Averaged quantities ((1/K) sum_{t<K}) are one
sample per seed, so n = 1 there. Delta_0 = f(x_0) - f* with the certified f*.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache

import numpy as np
import sympy as sp
from scipy import stats

from lmo.variants import DELAYED, EF, PIPEDREAM, SYNC

SERIES_OF = {"momentum_error_x": "err_x", "momentum_error_y": "err_y",
             "avg_grad_norm_x": "gx", "avg_grad_norm_y": "gy"}
#: bounds stated for any perturbed-gradient run (r_t measured), not one variant only
TRAJECTORY_BOUNDS = ("derived_ef_lemma_trajectory", "derived_ef_theorem_trajectory")
#: the paper's readings C1, C2 at y_t are implied by the EF worst-case lemma too (theory.results.implications)
ALSO_EF = ("paper_c1_y", "paper_c2_y")
CI_TEXT = ("one-sided Student-t for the {what}{rb}, family-wise {conf:.0%} (Bonferroni over {n} tests), R = {R};"
           " the t level is approximate (it assumes near-normal means: python -m verify.coverage)")
VERDICTS = ("violated", "not violated", "holds confidently")


@dataclass
class CheckResult:
    bound: str
    quantity: str
    run_variant: str
    problem: str
    noise: str
    violated: bool
    holds: bool               # = not violated
    holds_confidently: bool
    verdict: str              # one of VERDICTS
    margin: float
    tightness: float
    lcb_ratio: float
    worst_step: int
    ci: str
    seeds: int

    def as_dict(self) -> dict:
        return asdict(self)


def one_sided_t(samples: np.ndarray, alpha: float = 0.01, n_tests: int = 1):
    """(mean, LCB, UCB) over the last axis, one-sided t at level 1 - alpha / n_tests."""
    samples = np.asarray(samples, dtype=float)
    R = samples.shape[-1]
    mean = samples.mean(-1)
    if R < 2:
        return mean, mean, mean
    s = samples.std(-1, ddof=1)
    q = stats.t.ppf(1 - alpha / n_tests, R - 1)
    half = q * s / np.sqrt(R)
    return mean, mean - half, mean + half


def empirical_bernstein(samples: np.ndarray, cap: float, alpha: float = 0.01, n_tests: int = 1):
    """(mean, LCB, UCB) over the last axis for samples in [0, cap] (module docstring)."""
    x = np.asarray(samples, dtype=float)
    R = x.shape[-1]
    mean = x.mean(-1)
    if R < 2:
        return mean, np.zeros_like(mean), np.full_like(mean, cap)
    lg = np.log(2 * n_tests / alpha)
    half = np.sqrt(2 * x.var(-1, ddof=1) * lg / R) + 7 * cap * lg / (3 * (R - 1))
    return mean, np.clip(mean - half, 0.0, cap), np.clip(mean + half, 0.0, cap)


def r_cap(res) -> float:
    """c with 0 <= r_t <= c: eta x delay (delayed, pipedream), 2 eta (EF), 0 (sync); never below
    the largest value measured."""
    v, eta = res.meta.get("variant", SYNC), float(res.constants["eta"])
    cap = {SYNC: 0.0, EF: 2 * eta}.get(v, eta * max(1, int(res.meta.get("delay", 1) or 1)))
    seen = max(float(np.max(res.series["r"])) if "r" in res.series else 0.0, 0.0)
    return max(cap, seen)


def _ratio(a, b):
    """a / b with x / 0 = +-inf (x != 0) and 0 / 0 = 0."""
    a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
    out = np.where(a > 0, np.inf, np.where(a < 0, -np.inf, 0.0))
    np.divide(a, b, out=out, where=b != 0)
    return out


def applicable(bound, run_variant: str, delay: int = 1) -> bool:
    """Does ``bound`` describe a run of ``run_variant``? pipedream runs (tau >= 2) are
    covered only by the trajectory bounds (they hold for any perturbation r_t)."""
    if bound.name in TRAJECTORY_BOUNDS:
        return run_variant in (DELAYED, EF, PIPEDREAM)
    if bound.name in ALSO_EF:
        return run_variant in (DELAYED, EF)
    if run_variant == PIPEDREAM:
        return False
    return bound.variant == run_variant


def r_coefficient(bound, r_name: str):
    """c = dB/dr if ``bound`` is affine in the symbol ``r_name`` (d^2B/dr^2 = 0), else None."""
    return _r_coefficient(bound.expr, r_name)


@lru_cache(maxsize=None)
def _r_coefficient(expr, r_name: str):
    sym = next((s for s in expr.free_symbols if s.name == r_name), None)
    if sym is None or sp.simplify(sp.diff(expr, sym, 2)) != 0:
        return None
    return sp.diff(expr, sym)


def _paired(q, r, B0, B1, alpha, n_tests):
    """(mean, LCB, UCB, B) of Q for a bound affine in r: t-bounds on D = Q - c r, c = B1 - B0,
    shifted by c mean r; B = B0 + c mean r (module docstring). q, r: (..., R); B0, B1: (...)."""
    c = np.asarray(B1, float) - np.asarray(B0, float)
    _, dl, du = one_sided_t(q - c[..., None] * r, alpha, n_tests)
    shift = c * r.mean(-1)
    return q.mean(-1), dl + shift, du + shift, np.asarray(B0, float) + shift


def check_bound(bound, res, alpha: float = 0.01, from_step: int = 0, rtol: float = 1e-9) -> CheckResult:
    """Compare ``bound`` with the Monte Carlo result ``res`` (module docstring)."""
    if bound.quantity not in SERIES_OF:
        raise ValueError(f"bound: unknown quantity {bound.quantity!r}")
    key = SERIES_OF[bound.quantity]
    c = dict(res.constants)
    R = res.meta.get("seeds", None) or next(iter(res.averages.values())).shape[-1]
    uses_r = bool({"r_w", "r_avg"} & set(bound.symbols))
    r_name = "r_w" if bound.quantity.startswith("momentum_error") else "r_avg"
    paired = uses_r and r_coefficient(bound, r_name) is not None
    fam = 2 if uses_r and not paired else 1
    cap = r_cap(res)
    if bound.quantity.startswith("momentum_error"):
        keep = res.steps >= from_step
        steps = res.steps[keep]
        n = int(keep.sum())
        mean, lcb, ucb = one_sided_t(res.series[key][keep], alpha, fam * n)
        _, rw_lcb, rw_ucb = empirical_bernstein(res.series["r_w"][keep], cap, alpha, fam * n)
        tt = steps.astype(float)
        if paired:
            q, r = res.series[key][keep], res.series["r_w"][keep]
            mean, lcb, ucb, B_hi = _paired(q, r, *(np.broadcast_to(np.asarray(
                bound.evaluate(**c, t=tt, r_w=v), dtype=float), tt.shape) for v in (0.0, 1.0)), alpha, n)
            B_lo = B_hi
        else:
            B_hi = np.broadcast_to(np.asarray(bound.evaluate(**c, t=tt, r_w=rw_ucb), dtype=float), mean.shape)
            B_lo = np.broadcast_to(np.asarray(bound.evaluate(**c, t=tt, r_w=rw_lcb), dtype=float), mean.shape)
    else:
        n = 1
        steps = np.asarray([c["K"] - 1])
        m, l_, u = one_sided_t(res.averages[key], alpha, fam)
        _, ra_lo, ra_hi = empirical_bernstein(res.averages["r_avg"], cap, alpha, fam)
        mean, lcb, ucb = (np.atleast_1d(v) for v in (m, l_, u))
        ev = lambda r: np.atleast_1d(np.asarray(bound.evaluate(**c, t=float(c["K"]), r_avg=float(r)), dtype=float))
        if paired:
            q, r = (np.asarray(res.averages[k], float)[None] for k in (key, "r_avg"))
            mean, lcb, ucb, B_hi = _paired(q, r, ev(0.0), ev(1.0), alpha, 1)
            B_lo = B_hi
        else:
            B_hi, B_lo = ev(ra_hi), ev(ra_lo)
    tol = rtol * np.maximum(1.0, np.abs(B_hi))
    violated = bool((lcb > B_hi + tol).any())
    confident = bool((ucb <= B_lo + rtol * np.maximum(1.0, np.abs(B_lo))).all())
    ratio = _ratio(mean, B_hi)
    w = int(np.argmax(ratio))
    return CheckResult(
        bound=bound.name, quantity=bound.quantity, run_variant=res.meta.get("variant", "?"),
        problem=res.meta.get("problem", "?"), noise=res.meta.get("noise", "?"),
        violated=violated, holds=not violated, holds_confidently=confident and not violated,
        verdict="violated" if violated else ("holds confidently" if confident else "not violated"),
        margin=float(np.min(_ratio(B_lo - ucb, B_lo))), tightness=float(ratio[w]),
        lcb_ratio=float(np.max(_ratio(lcb, B_hi))), worst_step=int(steps[w]),
        ci=CI_TEXT.format(conf=1 - alpha, n=fam * n, R=R,
                          what="paired Q - c r (bound affine in r)" if paired else "quantity",
                          rb="; empirical-Bernstein for r_w/r_avg" if uses_r and not paired else ""), seeds=int(R))


def check_run(res, bounds, alpha: float = 0.01) -> list[CheckResult]:
    """Every applicable bound of ``bounds`` checked against ``res``."""
    v = res.meta.get("variant", SYNC)
    return [check_bound(b, res, alpha) for b in bounds if applicable(b, v)]

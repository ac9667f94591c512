"""Empirical check of a theory bound against a Monte Carlo run (docs/design.md §6.3).

A bound claims  E Q <= B(constants). From R independent seeds we form, per recorded
step, the mean of Q and a one-sided Student-t confidence interval at family-wise level
1 - alpha (default alpha = 0.01, i.e. 99%), Bonferroni-corrected over the n steps checked:

    LCB = mean - t_{R-1, 1 - alpha/n} s / sqrt(R),   UCB = mean + t_{R-1, 1 - alpha/n} s / sqrt(R).

* violated:        some step has LCB > B (the expectation exceeds the bound with
                   confidence 1 - alpha); with s = 0 (deterministic runs) LCB = mean.
* holds:           not violated;  holds_confidently: UCB <= B at every step.
* margin:          min over steps of (B - UCB) / B  (negative: not confidently below).
* tightness:       max over steps of mean / B  (1 = tight, > 1 = measured above bound).
* worst_step:      the step attaining the tightness.

Trajectory inputs r_w(t), r_avg enter the bound at their UCB (bounds increase in them),
which keeps a "violated" verdict conservative. Averaged quantities ((1/K) sum_{t<K})
are one sample per seed, so n = 1 there. Delta_0 = f(x_0) - f* with the certified f*.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

SERIES_OF = {"momentum_error_x": "err_x", "momentum_error_y": "err_y",
             "avg_grad_norm_x": "gx", "avg_grad_norm_y": "gy"}
#: bounds stated for any perturbed-gradient run (r_t measured), not one variant only
TRAJECTORY_BOUNDS = ("derived_ef_lemma_trajectory", "derived_ef_theorem_trajectory")
CI_TEXT = "one-sided Student-t, family-wise {conf:.0%} (Bonferroni over {n} steps), R = {R}"


@dataclass
class CheckResult:
    bound: str
    quantity: str
    run_variant: str
    problem: str
    noise: str
    violated: bool
    holds: bool
    holds_confidently: bool
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
        return run_variant in ("delayed", "ef", "pipedream")
    if run_variant == "pipedream":
        return False
    return bound.variant == run_variant


def check_bound(bound, res, alpha: float = 0.01, from_step: int = 0, rtol: float = 1e-9) -> CheckResult:
    """Compare ``bound`` with the Monte Carlo result ``res`` (module docstring)."""
    if bound.quantity not in SERIES_OF:
        raise ValueError(f"bound: unknown quantity {bound.quantity!r}")
    key = SERIES_OF[bound.quantity]
    c = dict(res.constants)
    R = res.meta.get("seeds", None) or next(iter(res.averages.values())).shape[-1]
    if bound.quantity.startswith("momentum_error"):
        keep = res.steps >= from_step
        steps = res.steps[keep]
        n = int(keep.sum())
        mean, lcb, ucb = one_sided_t(res.series[key][keep], alpha, n)
        _, _, rw_ucb = one_sided_t(res.series["r_w"][keep], alpha, n)
        B = np.asarray(bound.evaluate(**c, t=steps.astype(float), r_w=np.maximum(rw_ucb, 0.0)), dtype=float)
        B = np.broadcast_to(B, mean.shape)
    else:
        n = 1
        steps = np.asarray([c["K"] - 1])
        m, l_, u = one_sided_t(res.averages[key], alpha, 1)
        _, _, ra = one_sided_t(res.averages["r_avg"], alpha, 1)
        mean, lcb, ucb = (np.atleast_1d(v) for v in (m, l_, u))
        B = np.atleast_1d(np.asarray(bound.evaluate(**c, t=float(c["K"]), r_avg=max(float(ra), 0.0)), dtype=float))
    tol = rtol * np.maximum(1.0, np.abs(B))
    ratio = _ratio(mean, B)
    w = int(np.argmax(ratio))
    return CheckResult(
        bound=bound.name, quantity=bound.quantity, run_variant=res.meta.get("variant", "?"),
        problem=res.meta.get("problem", "?"), noise=res.meta.get("noise", "?"),
        violated=bool((lcb > B + tol).any()), holds=not bool((lcb > B + tol).any()),
        holds_confidently=bool((ucb <= B + tol).all()),
        margin=float(np.min(_ratio(B - ucb, B))), tightness=float(ratio[w]),
        lcb_ratio=float(np.max(_ratio(lcb, B))), worst_step=int(steps[w]),
        ci=CI_TEXT.format(conf=1 - alpha, n=n, R=R), seeds=int(R))


def check_run(res, bounds, alpha: float = 0.01) -> list[CheckResult]:
    """Every applicable bound of ``bounds`` checked against ``res``."""
    v = res.meta.get("variant", "sync")
    return [check_bound(b, res, alpha) for b in bounds if applicable(b, v)]

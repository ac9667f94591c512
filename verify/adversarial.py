"""Falsification search: maximise measured / bound over instances and hyperparameters
(docs/design.md §6, step 4). The reported ratio is re-evaluated on fresh seeds, so it is not inflated
by the search's own selection (winner's curse) nor by a maximum over steps; a ratio whose
confidence bound exceeds 1 is a violation, reported with a reproducible Instance.

Search space z (box-constrained): log10 eta, logit mu, log10 scale (f -> c f),
log10 cond, log10 sigma (sigma = 0 at the box's lower end), log10 of the start's distance x0.
Objective during the search: the check's lower confidence ratio max_t LCB_t / B_t (one-sided
t, Bonferroni over steps) on ``seeds`` seeds with a fixed Monte Carlo seed (common random
numbers, so Nelder-Mead sees a deterministic function). Maximising the plain mean ratio on few
seeds rewards lucky noise (the winner's curse: search values 1.1-1.2 that re-evaluate to
0.6-0.8); the confidence bound equals the mean where sigma = 0 and penalises the noise.
Start points: the known attaining regimes (ATTAINING: sigma = 0 far from the minimiser, where
the momentum lag L eta (1-mu)/mu and the delay L eta are attained; NOISE_ATTAINING: eta small
and sigma large at mu -> 1, where ||m_t - grad f|| -> ||xi_t||_* = rho sigma for aligned noise,
and at mu = 0.1, where the stationary noise sqrt(mu/(2-mu)) rho sigma is reached) plus random
points of the box and three steps-dependent attaining starts (``start_points``), then
Nelder-Mead from the best. Screening: the ``screen`` best instances by the search value and
the ``screen`` best by the plain mean ratio (where a noisy violation shows first) are re-run on
4 x ``seeds`` other seeds and the one with the largest lower confidence ratio there wins (a noise-attained
violation is not lost to an exactly attained true term on a few seeds); confirmation then uses
seeds used by neither stage. x0 is the start's distance (the vector
kind's x_0 = x0 1, the quadratic kind's X* of entry size max(3 x0, 0.3): verify.strategies).
``search_bases`` runs the search from every base of BASES (the
quadratic 3 x 3 spectral, the 1-D sign vector, and a 25-D sign vector with aligned noise, whose
rho = 5 lets a term's rho be tested above the small-rho regime) and keeps the winner by the
screening value; BUDGETS are the quick and full budgets of ``python -m verify``. Reported:

* ``confirmed_ratio``: mean / B at the winner's step (the step the search chose), on
  ``confirm_seeds`` fresh seeds: an unbiased estimate of the ratio there;
* ``violated``: the full check (every step, Bonferroni) on the fresh seeds;
* ``search_ratio``: the search's own (lower-confidence) value (JSON only, never printed as a
  result).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.optimize import minimize

from .check import check_bound
from .montecarlo import MCResult
from .strategies import Instance

BOX = np.array([[-3.0, -0.5],   # log10 eta
                [-4.0, 4.0],    # logit mu
                [-1.0, 2.0],    # log10 scale
                [0.0, 2.0],     # log10 cond
                [-3.0, 0.5],    # log10 sigma (sigma = 0 at the lower end)
                [-1.0, 2.0]])   # log10 x0

#: start points in the regimes where the lemmas are attained: sigma = 0, x0 = 100, small eta,
#: mu in {0.1, 0.5} (logit -2.2, 0), scale 1, cond 1
ATTAINING = np.array([[-2.0, -2.2, 0.0, 0.0, -3.0, 2.0],
                      [-2.0, 0.0, 0.0, 0.0, -3.0, 2.0],
                      [-1.0, -2.2, 0.0, 0.0, -3.0, 2.0]])


#: start points where the noise terms are attained: eta = 1e-3, sigma = 10^0.5, x0 = 1, mu = 0.982
#: (logit 4) and mu = 0.1 (logit -2.2)
NOISE_ATTAINING = np.array([[-3.0, 4.0, 0.0, 0.0, 0.5, 0.0],
                            [-3.0, -2.2, 0.0, 0.0, 0.5, 0.0]])

BASES = (Instance(kind="quadratic", geometry="spectral", m=3, n=3, noise="aligned"),
         Instance(kind="vector", geometry="sign", m=1, n=1, noise="gaussian"),
         Instance(kind="vector", geometry="sign", m=1, n=25, noise="aligned"))

BUDGETS = {"quick": dict(n_random=6, n_local=10, seeds=8, steps=50, confirm_seeds=128),
           "full": dict(n_random=32, n_local=60, seeds=32, steps=150, confirm_seeds=1024)}


def decode(z, base: Instance) -> Instance:
    """The Instance at search point z (clipped to BOX)."""
    z = np.clip(np.asarray(z, float), BOX[:, 0], BOX[:, 1])
    mu = 1 / (1 + math.exp(-z[1]))
    return replace(base, lr=float(f"{10 ** z[0]:.4g}"), mu=float(f"{min(max(mu, 1e-3), 1.0):.4g}"),
                   scale=float(f"{10 ** z[2]:.4g}"), cond=float(f"{10 ** z[3]:.4g}"),
                   sigma=0.0 if z[4] <= BOX[4, 0] else float(f"{10 ** z[4]:.4g}"), x0=float(f"{10 ** z[5]:.4g}"))


def _run_variant(bound) -> str:
    return bound.variant


def ratio_at_step(bound, res, step: int) -> float:
    """mean / B of ``bound`` at one recorded step of ``res`` (no maximum over steps)."""
    i = int(np.searchsorted(res.steps, step))
    one = MCResult(res.steps[i:i + 1], {k: v[i:i + 1] for k, v in res.series.items()}, res.averages,
                   res.constants, res.meta)
    return check_bound(bound, one).tightness


#: the search value of a bound of 0 exceeded (an infinite LCB ratio): finite, so Nelder-Mead can use it
HUGE = 1e12


def _finite(v: float) -> float:
    """+inf (B = 0 < LCB: violated without measure) -> HUGE; -inf, nan -> 0."""
    return HUGE if v == math.inf else (float(v) if np.isfinite(v) else 0.0)


def start_points(steps: int) -> np.ndarray:
    """ATTAINING, NOISE_ATTAINING, and three steps-dependent attaining starts: the theorems'
    Delta_0/(eta K) (sigma = 0, mu = 0.982, x0 = eta K: the sign iterate walks straight to x* in K
    steps, so mean |grad| = L x0 (K+1)/(2K) ~ Delta_0/(eta K)); EF's r_w -> 2 eta (sigma = 0,
    eta = 0.1, mu = 0.9, x0 = 1: the sign step oscillates around x* and the stored error flips sign);
    the transient rho sigma (1-mu)^t at t = 0 (m_0 = g_0: ||xi_0||_* = rho sigma; mu = 0.018 and
    scale 0.1 make the bound's sqrt(mu) rho sigma and L eta/mu small)."""
    eta = -2.0
    extra = np.array([[eta, 4.0, 0.0, 0.0, -3.0, eta + math.log10(steps)],
                      [-1.0, 2.2, 0.0, 0.0, -3.0, 0.0],
                      [-3.0, -4.0, -1.0, 0.0, 0.5, 0.0]])
    return np.vstack([ATTAINING, NOISE_ATTAINING, np.clip(extra, BOX[:, 0], BOX[:, 1])])


def _screen(bound, cache: dict, k: int, seeds: int, mc_seed: int):
    """The ``k`` best instances of the search by its value and the ``k`` best by the mean ratio,
    re-run on ``seeds`` other seeds (``mc_seed``); the one with the largest LCB ratio there:
    (instance, its search value, its screening value, its worst step on the screening seeds).
    Independent of the confirmation seeds, so the final re-evaluation stays unselected; it saves
    a noisy winner from losing to an exactly-attained true part of the bound on few seeds."""
    top = sorted(cache, key=lambda i: cache[i][0], reverse=True)[:max(k, 1)]
    top += [i for i in sorted(cache, key=lambda i: cache[i][2], reverse=True)[:k] if i not in top]
    best = None
    for inst in top:
        try:
            c = check_bound(bound, inst.run(seeds=seeds, mc_seed=mc_seed))
            v, step = _finite(c.lcb_ratio), c.worst_step
        except FloatingPointError:
            v, step = 0.0, cache[inst][1]
        if best is None or v > best[2]:
            best = (inst, cache[inst][0], v, step)
    return best


def search(bound, base: Instance | None = None, n_random: int = 16, n_local: int = 24, seeds: int = 16,
           steps: int = 60, seed: int = 0, confirm_seeds: int = 128, screen: int = 3, starts: bool = True,
           progress=None) -> dict:
    """Worst measured/bound ratio for ``bound`` found from ``base`` (its kind, geometry,
    sizes and noise are kept; the hyperparameters of BOX are searched), re-evaluated on
    fresh seeds (module docstring). ``starts=False`` drops the attaining start points (random
    points alone: the power of the search without its knowledge of the attaining regimes)."""
    base = base or Instance(kind="quadratic", geometry="spectral", m=3, n=3, noise="aligned")
    base = replace(base, variant=_run_variant(bound), steps=steps)
    rng = np.random.default_rng(seed)
    cache = {}

    def ratio(z):
        inst = decode(z, base)
        if inst not in cache:
            try:
                c = check_bound(bound, inst.run(seeds=seeds, mc_seed=seed))
                # an LCB: noise cannot win by luck; the mean ratio only nominates for screening
                cache[inst] = (_finite(c.lcb_ratio), c.worst_step, _finite(c.tightness))
            except FloatingPointError:
                cache[inst] = (0.0, 0, 0.0)
        return cache[inst][0]

    S = start_points(steps) if starts else np.empty((0, len(BOX)))  # starts=False: random points alone
    Z = np.vstack([S, BOX[:, 0] + (BOX[:, 1] - BOX[:, 0]) * rng.random((n_random, len(BOX)))])
    vals = [ratio(z) for z in Z]
    z0 = Z[int(np.argmax(vals))]
    if n_local > 0:
        opt = minimize(lambda z: -ratio(z), z0, method="Nelder-Mead",
                       options=dict(maxfev=n_local, initial_simplex=None, xatol=1e-2, fatol=1e-4))
        zb = opt.x if -opt.fun >= max(vals) else z0
    else:
        zb = z0
    best, search_ratio, screen_ratio, step = _screen(bound, cache, screen, 4 * seeds, seed + 5_000)
    fresh = best.run(seeds=confirm_seeds, mc_seed=seed + 10_000)
    confirm = check_bound(bound, fresh)
    reeval = ratio_at_step(bound, fresh, step) if bound.quantity.startswith("momentum") else confirm.tightness
    out = dict(bound=bound.name, confirmed_ratio=float(reeval), confirmed_step=int(step),
               confirm_seeds=confirm_seeds, search_ratio=float(search_ratio), screen_ratio=float(screen_ratio),
               evaluations=len(cache),
               confirmed_max_over_steps=confirm.tightness, confirmed_lcb_ratio=confirm.lcb_ratio,
               violated=confirm.violated, instance=repr(best), ci=confirm.ci)
    if progress:
        progress(f"  adversarial {bound.name:32s} re-evaluated ratio {out['confirmed_ratio']:.3f}"
                 f" ({confirm_seeds} fresh seeds, step {step}; violated={out['violated']})")
    return out


def search_bases(bound, budget: str | dict = "quick", bases=None, seed: int = 0) -> dict:
    """``search`` from every base of ``bases`` (None: BASES) at ``budget`` (a BUDGETS key or
    keyword dict); the result whose screening value (not its re-evaluation) is largest, so the reported ratio stays an
    unselected re-evaluation."""
    kw = BUDGETS[budget] if isinstance(budget, str) else dict(budget)
    return max((search(bound, b, seed=seed, **kw) for b in bases or BASES), key=lambda r: r["screen_ratio"])

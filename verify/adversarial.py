"""Falsification search: maximise measured / bound over instances and hyperparameters
(docs/design.md §6, step 4). The worst ratio found is a tightness figure (1 = attained); a ratio whose
confidence bound exceeds 1 is a violation, reported with a reproducible Instance.

Search space z (box-constrained): log10 eta, logit mu, log10 scale (f -> c f),
log10 cond, log10 sigma, log10 of the start's distance x0. Objective: the check's
tightness max_t mean_t / B_t with a fixed Monte Carlo seed (common random numbers, so
Nelder-Mead sees a deterministic function). Random search over the box, then scipy's
Nelder-Mead from the best point; the winner is re-checked with fresh seeds.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from scipy.optimize import minimize

from .check import check_bound
from .strategies import Instance

BOX = np.array([[-3.0, -0.5],   # log10 eta
                [-4.0, 4.0],    # logit mu
                [-1.0, 2.0],    # log10 scale
                [0.0, 2.0],     # log10 cond
                [-3.0, 0.5],    # log10 sigma
                [-1.0, 2.0]])   # log10 x0


def decode(z, base: Instance) -> Instance:
    """The Instance at search point z (clipped to BOX)."""
    z = np.clip(np.asarray(z, float), BOX[:, 0], BOX[:, 1])
    mu = 1 / (1 + math.exp(-z[1]))
    return replace(base, lr=float(f"{10 ** z[0]:.4g}"), mu=float(f"{min(max(mu, 1e-3), 1.0):.4g}"),
                   scale=float(f"{10 ** z[2]:.4g}"), cond=float(f"{10 ** z[3]:.4g}"),
                   sigma=float(f"{10 ** z[4]:.4g}"), x0=float(f"{10 ** z[5]:.4g}"))


def _run_variant(bound) -> str:
    return bound.variant


def search(bound, base: Instance | None = None, n_random: int = 16, n_local: int = 24, seeds: int = 16,
           steps: int = 60, seed: int = 0, confirm_seeds: int = 64, progress=None) -> dict:
    """Worst measured/bound ratio for ``bound`` found from ``base`` (its kind, geometry,
    sizes and noise are kept; the hyperparameters of BOX are searched)."""
    base = base or Instance(kind="quadratic", geometry="spectral", m=3, n=3, noise="aligned")
    base = replace(base, variant=_run_variant(bound), steps=steps)
    rng = np.random.default_rng(seed)
    cache = {}

    def ratio(z):
        inst = decode(z, base)
        if inst not in cache:
            try:
                c = check_bound(bound, inst.run(seeds=seeds, mc_seed=seed))
                cache[inst] = c.tightness if np.isfinite(c.tightness) else 0.0
            except FloatingPointError:
                cache[inst] = 0.0
        return cache[inst]

    Z = BOX[:, 0] + (BOX[:, 1] - BOX[:, 0]) * rng.random((n_random, len(BOX)))
    vals = [ratio(z) for z in Z]
    z0 = Z[int(np.argmax(vals))]
    if n_local > 0:
        opt = minimize(lambda z: -ratio(z), z0, method="Nelder-Mead",
                       options=dict(maxfev=n_local, initial_simplex=None, xatol=1e-2, fatol=1e-4))
        zb = opt.x if -opt.fun >= max(vals) else z0
    else:
        zb = z0
    best = decode(zb, base)
    confirm = check_bound(bound, best.run(seeds=confirm_seeds, mc_seed=seed + 1))
    out = dict(bound=bound.name, worst_ratio=float(max(cache.values())), evaluations=len(cache),
               confirmed_ratio=confirm.tightness, confirmed_lcb_ratio=confirm.lcb_ratio,
               violated=confirm.violated, worst_step=confirm.worst_step, instance=repr(best),
               ci=confirm.ci)
    if progress:
        progress(f"  adversarial {bound.name:32s} worst ratio {out['worst_ratio']:.3f}"
                 f" (confirmed {out['confirmed_ratio']:.3f}, violated={out['violated']})")
    return out

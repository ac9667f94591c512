"""Batched Monte Carlo of a momentum-LMO run: R seeds as one tensor computation.

Every tensor carries a leading seed dim R. Step t (t = 0 .. K-1) of a run:

    y_t = opt.virtual_iterate(x_t)          (= x_t for sync)
    g_t = grad f(x_t) + xi_t                 (xi_t from the noise model, explicit generator)
    d, state = opt.update(g_t, state, x_t);  x_{t+1} = x_t + d;  m_t = momentum after the update

and records, per seed (dual norm ||.||_*, norm ||.|| of the geometry):

    err_x  = ||m_t - grad f(x_t)||_*          err_y = ||m_t - grad f(y_t)||_*
    noise  = ||e_t||_*,  e_0 = xi_0, e_t = (1-mu) e_{t-1} + mu xi_t   (the noise part of m_t)
    bias_x = ||m_t - e_t - grad f(x_t)||_*    bias_y = ||m_t - e_t - grad f(y_t)||_*
    gx = ||grad f(x_t)||_*,  gy = ||grad f(y_t)||_*,  f = f(x_t),  r = ||x_t - y_t||
    r_w    = (1-mu) r_w(t-1) + mu r_t, r_w(0) = r_0  (docs/interfaces.md)

(m_t = e_t + sum_j w_{t,j} grad f(x_j) exactly, since both are the same EMA.) Series are
kept every ``stride`` steps; the theorems' averages (1/K) sum_{t<K} of gx, gy and r_w
(= r_avg) are running sums over every step, so memory is O(K/stride * R).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from lmo.base import apply_updates, find_field
from lmo.variants import SYNC

from .variants import build_optimizer, default_delay

SERIES = ("err_x", "err_y", "noise", "bias_x", "bias_y", "gx", "gy", "f", "r", "r_w")
AVERAGES = ("gx", "gy", "r_avg", "err_x", "err_y")


@dataclass
class MCResult:
    """steps: (n,) recorded step indices; series[name]: (n, R); averages[name]: (R,)
    means over all K steps; constants: the certified L, sigma, rho and eta, mu, Delta_0, K."""

    steps: np.ndarray
    series: dict
    averages: dict
    constants: dict
    meta: dict = field(default_factory=dict)


def _check_int(x, name, lo):
    if isinstance(x, bool) or not isinstance(x, int) or x < lo:
        raise ValueError(f"{name} must be an int >= {lo}, got {x!r}")


def simulate(problem, noise, opt, mu: float, lr: float, steps: int, seeds: int, seed: int = 0,
             stride: int = 1, select=None, meta: dict | None = None) -> MCResult:
    """Run ``opt`` on ``problem`` with ``noise`` for ``seeds`` seeds at once (module docstring).

    All noise is drawn from one torch.Generator seeded with ``seed``, shape (seeds, m, n)
    per step; ``select`` (a slice or index tensor) keeps only those seeds *after* drawing,
    so a selected run sees exactly the noise its seeds see in the full run.
    """
    _check_int(steps, "steps", 1)
    _check_int(seeds, "seeds", 1)
    _check_int(stride, "stride", 1)
    gen = torch.Generator().manual_seed(int(seed))
    geo = problem.geometry
    full = (seeds,) + tuple(problem.shape)
    idx = torch.arange(seeds)[select] if select is not None else torch.arange(seeds)
    R = int(idx.numel())
    X = problem.x0().to(torch.float64).expand((R,) + tuple(problem.shape)).clone()
    params = {"X": X}
    state = opt.init(params)
    e = r_w = None
    m_prev = None
    n_rec = (steps - 1) // stride + 1
    series = {k: torch.empty((n_rec, R), dtype=torch.float64) for k in SERIES}
    sums = {k: torch.zeros(R, dtype=torch.float64) for k in AVERAGES}
    rec_steps = []
    for t in range(steps):
        X = params["X"]
        Y = opt.virtual_iterate(params, state)["X"]
        gX = problem.grad(X)
        gY = gX if Y is X else problem.grad(Y)
        dfull = None
        if getattr(noise, "needs_direction", False):  # only the aligned model: skip an LMO otherwise
            dfull = torch.zeros(full, dtype=torch.float64)
            dfull[idx] = geo.lmo(gX if m_prev is None else m_prev)
        xi = noise.sample(full, gen, direction=dfull)[idx]
        updates, state = opt.update({"X": gX + xi}, state, params)
        m = find_field(state, "momentum")["X"]
        e = xi if e is None else (1 - mu) * e + mu * xi
        same = Y is X  # sync: y_t = x_t, reuse the x-side norms
        r = torch.zeros(R, dtype=torch.float64) if same else geo.norm(X - Y)
        r_w = r if r_w is None else (1 - mu) * r_w + mu * r
        err_x, gx = geo.dual_norm(m - gX), geo.dual_norm(gX)
        vals = {"err_x": err_x, "err_y": err_x if same else geo.dual_norm(m - gY),
                "gx": gx, "gy": gx if same else geo.dual_norm(gY), "r_w": r_w}
        for k in ("gx", "gy", "err_x", "err_y"):
            sums[k] += vals[k]
        sums["r_avg"] += r_w
        if t % stride == 0:
            i = t // stride
            bias_x = geo.dual_norm(m - e - gX)
            vals.update(noise=geo.dual_norm(e), bias_x=bias_x,
                        bias_y=bias_x if same else geo.dual_norm(m - e - gY), f=problem.f(X), r=r)
            for k in SERIES:
                series[k][i] = vals[k]
            rec_steps.append(t)
        m_prev = m
        params = apply_updates(params, updates)
    constants = dict(L=problem.L, sigma=float(noise.sigma), rho=problem.rho, eta=float(lr),
                     mu=float(mu), Delta_0=problem.delta0(), K=steps)
    return MCResult(np.asarray(rec_steps), {k: v.numpy() for k, v in series.items()},
                    {k: (v / steps).numpy() for k, v in sums.items()}, constants,
                    dict(meta or {}, seeds=R, seed=seed, stride=stride, optimizer=opt.name))


def run(problem, noise, variant: str, lr: float, mu: float, steps: int, seeds: int,
        seed: int = 0, delay: int | None = None, stride: int = 1, backend: str = "auto",
        select=None) -> MCResult:
    """Build the variant's optimizer (verify.variants) and :func:`simulate` it."""
    opt = build_optimizer(variant, lr, problem.geometry, mu, delay, backend)
    meta = dict(problem=problem.name, geometry=problem.geometry.name, noise=noise.name,
                variant=variant, delay=default_delay(variant, delay) if variant != SYNC else 0)
    return simulate(problem, noise, opt, mu, lr, steps, seeds, seed, stride, select, meta)


def per_seed_loop(problem, noise, variant, lr, mu, steps, seeds, seed=0, backend="auto"):
    """The naive baseline: one unbatched run per seed, each with its own generator
    (seed + r); used by verify.bench to measure the batching speed-up."""
    return [run(problem, noise, variant, lr, mu, steps, 1, seed + r, backend=backend, stride=steps)
            for r in range(seeds)]


def nan_guard(res: MCResult) -> None:
    """Refuse a run whose records are not finite (e.g. a diverging lr)."""
    for k, v in res.series.items():
        if not np.isfinite(v).all():
            raise FloatingPointError(f"series['{k}'] of the Monte Carlo run is not finite")

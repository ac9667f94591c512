"""Runs on exact finite instances, on which theory.checks.witnesses checks the derivations' *premise* steps.

Premises (descent lemma, Hölder, A4, martingale orthogonality, virtual-iterate
facts) are cited, not proved by sympy. Each is exercised here on a finite
instance whose constants are exact, to catch a mis-stated premise:

* sign geometry: ||.|| = l_inf, ||.||_* = l_1, lmo(m) = -sign(m), rho = sqrt(d);
  f(x) = (1/2) sum_i a_i x_i^2 with L = sum_i a_i (l_inf -> l_1 Lipschitz constant).
* spectral geometry: ||.|| = spectral, ||.||_* = nuclear, lmo(M) = -U V^T,
  rho = sqrt(min(m, n)); f(X) = (1/2) ||A X||_F^2 with L = ||A||_F^2
  (||A^T A D||_nuc <= ||A^T A||_nuc ||D||_op).
* g_t = grad f(x_t) + xi_t with E||xi_t||_2^2 = sigma^2: "gaussian" (isotropic), "anisotropic"
  (Gaussian, coordinate scales from 1 down to 0.05) or "aligned" (constant modulus: +-sigma/sqrt(d)
  entries, or sigma/sqrt(r) U V^T of a random matrix; A4 holds with equality, so the noise
  premise is attained at t = 0 and an understated noise premise is caught).

Runs are batched over seeds (leading axis) with an explicit numpy Generator.
theory.checks.witnesses evaluates each premise step's own sympy expressions on these runs.
This module imports numpy only; it is independent of the lmo package.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..records.bound import DELAYED, EF, INIT_MOMENTA, INIT_MOMENTUM, SYNC, VARIANTS


@dataclasses.dataclass(frozen=True)
class Geometry:
    name: str

    def dual_norm(self, g):
        if self.name == "sign":
            return np.abs(g).sum(axis=-1)
        return np.linalg.svd(g, compute_uv=False).sum(axis=-1)

    def norm(self, x):
        if self.name == "sign":
            return np.abs(x).max(axis=-1)
        return np.linalg.svd(x, compute_uv=False).max(axis=-1)

    def lmo(self, m):
        if self.name == "sign":
            return -np.sign(m)
        u, _, vt = np.linalg.svd(m, full_matrices=False)
        return -(u @ vt)


def _problem(geometry, shape, rng):
    if geometry.name == "sign":
        a = rng.uniform(0.1, 1.0, shape[-1])
        return (lambda x: 0.5 * (a * x * x).sum(-1), lambda x: a * x, float(a.sum()))
    A = rng.standard_normal((shape[-2] + 1, shape[-2])) / np.sqrt(shape[-2])
    AtA = A.T @ A
    return (lambda X: 0.5 * ((A @ X) ** 2).sum((-1, -2)), lambda X: AtA @ X, float((A * A).sum()))


def _inner(a, b, geometry):
    return (a * b).sum(-1) if geometry.name == "sign" else (a * b).sum((-1, -2))


NOISES = ("gaussian", "anisotropic", "aligned")


def _noise(kind, geo, shape, sigma, rng, seeds):
    """One noise draw (seeds, *shape) with E||xi||_2^2 = sigma^2 (see the module docstring)."""
    n = int(np.prod(shape))
    if kind == "gaussian":
        return rng.standard_normal((seeds, *shape)) * sigma / np.sqrt(n)
    if kind == "anisotropic":
        s = np.geomspace(1.0, 0.05, n).reshape(shape)
        return rng.standard_normal((seeds, *shape)) * s * sigma / np.sqrt((s**2).sum())
    if kind == "aligned":  # constant modulus: ||xi||_* = rho ||xi||_2 exactly (A4 is tight)
        if geo.name == "sign":
            return rng.choice([-1.0, 1.0], (seeds, *shape)) * sigma / np.sqrt(n)
        u, _, vt = np.linalg.svd(rng.standard_normal((seeds, *shape)), full_matrices=False)
        return (u @ vt) * sigma / np.sqrt(min(shape))
    raise ValueError(f"noise must be one of {NOISES}, got {kind!r}")


def simulate(variant=DELAYED, geometry="sign", T=40, seeds=64, mu=0.2, eta=0.05, sigma=0.5,
             shape=(6,), seed=0, noise="gaussian", x0_scale=3.0, ef_sign=1.0, start="normal",
             init_momentum=INIT_MOMENTUM):
    """Run sync / delayed / EF LMO momentum on the instance; return histories (dict of arrays).

    d_t = eta lmo(m_t); sync x_{t+1} = x_t + d_t; delayed x_{t+1} = x_t + d_{t-1};
    EF x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}; y_t = x_t (sync), x_t + d_{t-1} (delayed),
    x_t + d_{t-1} - d_{t-2} (EF); m_0 = g_0 (``init_momentum="grad"``, the bounds' start,
    theory.records.bound.INIT_MOMENTUM) or m_0 = mu g_0 (``"zero"``, lmo's default); x_0 = x0_scale z with z standard normal (a large
    x0_scale with sigma = 0 is the regime where the lemma's drift is attained), or with
    ``start="fixed"`` x_0 = x0_scale in every entry (x_0 = eta/2 on one coordinate with mu = 1 and
    sigma = 0 oscillates between +-eta/2: the telescope is attained). ``ef_sign`` = -1
    flips the sign of d_{t-2} in EF's x-update: a planted simulator error (theory.checks.mutation).
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be {'|'.join(VARIANTS)}, got {variant!r}")
    geo = Geometry(geometry)
    if geometry == "spectral" and len(shape) != 2:
        shape = (4, 3)
    rng = np.random.default_rng(seed)
    f, grad, L = _problem(geo, shape, rng)
    n = int(np.prod(shape))
    rho = np.sqrt(n) if geometry == "sign" else np.sqrt(min(shape))
    if init_momentum not in INIT_MOMENTA:
        raise ValueError(f"init_momentum must be one of {INIT_MOMENTA}, got {init_momentum!r}")
    if start not in ("normal", "fixed"):
        raise ValueError(f"start must be normal|fixed, got {start!r}")
    z = rng.standard_normal(shape) if start == "normal" else np.ones(shape)
    x = np.broadcast_to(z * x0_scale, (seeds, *shape)).copy()
    zero = np.zeros_like(x)
    d1, d2, m = zero, zero, None
    H = {k: [] for k in ("x", "y", "m", "g", "xi", "gx", "gy", "d")}
    for _ in range(T):
        xi = _noise(noise, geo, shape, sigma, rng, seeds)
        gx = grad(x)
        g = gx + xi
        m = (g if init_momentum == "grad" else mu * g) if m is None else (1 - mu) * m + mu * g
        y = {SYNC: x, DELAYED: x + d1, EF: x + d1 - d2}[variant]
        d = eta * geo.lmo(m)
        for k_, v_ in (("x", x), ("y", y), ("m", m), ("g", g), ("xi", xi), ("gx", gx), ("gy", grad(y)), ("d", d)):
            H[k_].append(v_)
        x = {SYNC: x + d, DELAYED: x + d1, EF: x + 2 * d1 - ef_sign * d2}[variant]
        d2, d1 = d1, d
    H = {k_: np.stack(v_, axis=1) for k_, v_ in H.items()}  # (seeds, T, *shape)
    H.update(f=f, grad=grad, L=L, rho=rho, mu=mu, eta=eta, sigma=sigma, geometry=geo, variant=variant, noise=noise,
             Delta_0=float(f(H["x"][0, 0])), T=T)
    return H


def _weights(t, mu):
    w = mu * (1 - mu) ** (t - np.arange(t + 1))
    w[0] = (1 - mu) ** t
    return w


def _wsum(w, arr):  # arr: (seeds, t+1, *shape)
    return np.tensordot(w, np.moveaxis(arr, 1, 0), axes=(0, 0))

"""Numeric witnesses for the *premise* steps of theory.derivation.

Premises (descent lemma, Hölder, A4, martingale orthogonality, virtual-iterate
facts) are cited, not proved by sympy. Each is exercised here on a finite
instance whose constants are exact, to catch a mis-stated premise:

* sign geometry: ||.|| = l_inf, ||.||_* = l_1, lmo(m) = -sign(m), rho = sqrt(d);
  f(x) = (1/2) sum_i a_i x_i^2 with L = sum_i a_i (l_inf -> l_1 Lipschitz constant).
* spectral geometry: ||.|| = spectral, ||.||_* = nuclear, lmo(M) = -U V^T,
  rho = sqrt(min(m, n)); f(X) = (1/2) ||A X||_F^2 with L = ||A||_F^2
  (||A^T A D||_nuc <= ||A^T A||_nuc ||D||_op).
* g_t = grad f(x_t) + xi_t, xi_t Gaussian with E||xi_t||_2^2 = sigma^2.

Runs are batched over seeds (leading axis) with an explicit numpy Generator.
Pathwise premises are checked on every seed and step; the two expectation
premises (noise, averaged lemma) by the Monte Carlo mean plus 3 standard errors.
This module imports numpy only; it is independent of the lmo package.
"""
from __future__ import annotations

import dataclasses

import numpy as np


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
    return (lambda X: 0.5 * (np.einsum("ij,...jk->...ik", A, X) ** 2).sum((-1, -2)),
            lambda X: np.einsum("ij,...jk->...ik", AtA, X), float((A * A).sum()))


def _inner(a, b, geometry):
    return (a * b).sum(-1) if geometry.name == "sign" else (a * b).sum((-1, -2))


def simulate(variant="delayed", geometry="sign", T=40, seeds=64, mu=0.2, eta=0.05, sigma=0.5,
             shape=(6,), seed=0):
    """Run sync / delayed / EF LMO momentum on the instance; return histories (dict of arrays).

    d_t = eta lmo(m_t); sync x_{t+1} = x_t + d_t; delayed x_{t+1} = x_t + d_{t-1};
    EF x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}; y_t = x_t (sync), x_t + d_{t-1} (delayed),
    x_t + d_{t-1} - d_{t-2} (EF); m_0 = g_0.
    """
    if variant not in ("sync", "delayed", "ef"):
        raise ValueError(f"variant must be sync|delayed|ef, got {variant!r}")
    geo = Geometry(geometry)
    if geometry == "spectral" and len(shape) != 2:
        shape = (4, 3)
    rng = np.random.default_rng(seed)
    f, grad, L = _problem(geo, shape, rng)
    n = int(np.prod(shape))
    rho = np.sqrt(n) if geometry == "sign" else np.sqrt(min(shape))
    x = np.broadcast_to(rng.standard_normal(shape) * 3, (seeds, *shape)).copy()
    zero = np.zeros_like(x)
    d1, d2, m = zero, zero, None
    H = {k: [] for k in ("x", "y", "m", "g", "xi", "gx", "gy", "d")}
    for _ in range(T):
        xi = rng.standard_normal(x.shape) * sigma / np.sqrt(n)
        gx = grad(x)
        g = gx + xi
        m = g if m is None else (1 - mu) * m + mu * g
        y = {"sync": x, "delayed": x + d1, "ef": x + d1 - d2}[variant]
        d = eta * geo.lmo(m)
        for k_, v_ in (("x", x), ("y", y), ("m", m), ("g", g), ("xi", xi), ("gx", gx), ("gy", grad(y)), ("d", d)):
            H[k_].append(v_)
        x = {"sync": x + d, "delayed": x + d1, "ef": x + 2 * d1 - d2}[variant]
        d2, d1 = d1, d
    H = {k_: np.stack(v_, axis=1) for k_, v_ in H.items()}  # (seeds, T, *shape)
    H.update(f=f, grad=grad, L=L, rho=rho, mu=mu, eta=eta, sigma=sigma, geometry=geo, variant=variant,
             Delta_0=float(f(H["x"][0, 0])), T=T)
    return H


def _weights(t, mu):
    w = mu * (1 - mu) ** (t - np.arange(t + 1))
    w[0] = (1 - mu) ** t
    return w


def _wsum(w, arr):  # arr: (seeds, t+1, *shape)
    return np.tensordot(w, np.moveaxis(arr, 1, 0), axes=(0, 0))


def witnesses(H) -> dict[str, float]:
    """Worst margin (rhs - lhs, >= 0 when the premise holds) of each premise on the run H."""
    geo, L, mu, eta, rho, sigma = H["geometry"], H["L"], H["mu"], H["eta"], H["rho"], H["sigma"]
    T = H["T"]
    dn, nm = geo.dual_norm, geo.norm
    r = nm(H["x"] - H["y"])                          # (seeds, T)
    out = {k: np.inf for k in ("split", "noise", "drift", "descent", "lmo_inner", "telescope",
                               "average_lemma", "r_sync", "r_delayed", "r_ef", "x_steps", "grad_x_from_y")}
    E = dn(H["m"] - H["gy"])                         # (seeds, T)
    for t in range(T):
        w = _weights(t, mu)
        noise = dn(_wsum(w, H["xi"][:, : t + 1]))
        drift_vec = _wsum(w, H["gx"][:, : t + 1]) - H["gy"][:, t]
        drift = dn(drift_vec)
        out["split"] = min(out["split"], float(np.min(noise + drift - E[:, t])))
        mc, se = noise.mean(), noise.std(ddof=1) / np.sqrt(len(noise))
        out["noise"] = min(out["noise"], float(rho * sigma * np.sqrt((w**2).sum()) - (mc + 3 * se)))
        lag = (w * (t - np.arange(t + 1))).sum()
        out["drift"] = min(out["drift"], float(np.min(L * (r[:, : t + 1] @ w) + L * eta * lag - drift)))
        if t + 1 < T:
            lhs = H["f"](H["y"][:, t + 1])
            rhs = H["f"](H["y"][:, t]) + _inner(H["gy"][:, t], H["d"][:, t], geo) + L * eta**2 / 2
            out["descent"] = min(out["descent"], float(np.min(rhs - lhs)))
            out["virtual"] = min(out.get("virtual", np.inf),
                                 -float(np.max(np.abs(H["y"][:, t + 1] - H["y"][:, t] - H["d"][:, t]))))
        lm = geo.lmo(H["m"][:, t])
        inner = _inner(H["gy"][:, t], lm, geo)
        out["lmo_inner"] = min(out["lmo_inner"], float(np.min(-dn(H["gy"][:, t]) + 2 * E[:, t] - inner)))
        out["grad_x_from_y"] = min(out["grad_x_from_y"], float(np.min(dn(H["gy"][:, t]) + L * r[:, t] - dn(H["gx"][:, t]))))
        if t + 1 < T:
            out["x_steps"] = min(out["x_steps"], float(np.min(eta - nm(H["x"][:, t + 1] - H["x"][:, t])))
                                 if H["variant"] != "ef" else np.inf)
    K = T - 1
    G = dn(H["gy"][:, :K]).mean(1)  # f* = 0 for these quadratics, y_0 = x_0
    out["telescope"] = float(np.min(H["Delta_0"] / (eta * K) + 2 * E[:, :K].mean(1) + L * eta / 2 - G))
    lem = (rho * sigma * ((1 - mu) ** np.arange(K)).mean() + np.sqrt(mu) * rho * sigma
           + L * eta * (1 - mu) / mu + L * np.mean([_weights(t, mu) @ r[:, : t + 1].mean(0) for t in range(K)]))
    avg = E[:, :K].mean(1)
    out["average_lemma"] = float(lem - (avg.mean() + 3 * avg.std(ddof=1) / np.sqrt(len(avg))))
    key = {"sync": "r_sync", "delayed": "r_delayed", "ef": "r_ef"}[H["variant"]]
    cap = {"sync": 0.0, "delayed": eta, "ef": 2 * eta}[H["variant"]]
    out[key] = float(cap * (1 + 1e-12) - np.max(r))
    return out


#: which witness backs each premise step of theory.derivation (by step name)
PREMISE_WITNESS = {
    "split noise and drift": "split",
    "noise: A4 + Jensen + martingale orthogonality + A3": "noise",
    "drift: A2 + triangle inequality + y-steps <= eta": "drift",
    "descent lemma at the virtual iterate": "descent",
    "LMO inner product": "lmo_inner",
    "telescope over t < K": "telescope",
    "average the lemma": "average_lemma",
    "sync has y_t = x_t": "r_sync",
    "delayed: r_t = ||d_{t-1}|| <= eta": "r_delayed",
    "EF: r_t = eta ||lmo(m_{t-1}) - lmo(m_{t-2})|| <= 2 eta": "r_ef",
    "x-steps of delayed training are <= eta": "x_steps",
    "gradient at x from gradient at y": "grad_x_from_y",
}

"""The joint EF constant (theory.records.ef_joint) on witnesses in the sign and spectral geometries,
which the PEP certificates cannot express (docs/proof.md, 'The joint EF lemma').

The lemma's drift claim is D_t = ||sum_j w_{t,j} grad f(x_j) - grad f(y_t)||_* <= L eta C(mu, t) for
EF steps of norm <= eta. Three kinds of witness, ratio = D_t / (L eta C(mu, t)):

* ``sign_worst``: the sign geometry's explicit worst instance among separable f. On the line (and
  coordinate-wise in l_inf^d) the best steps are +-eta; for a sign pattern the function
  f(x) = (L/2)(x - y_t)|x - y_t| (f' = L|x - y_t|, L-Lipschitz) makes every term of D_t equal to
  L |x_j - y_t|, so the pattern maximising sum_j w_{t,j}|x_j - y_t| (all 2^t, t <= 12) is attained.
  d = 6 coordinates with the same pattern and f_i = a_i-weighted copies (sum a_i = L) give the same ratio.
* ``spectral_worst``: the Euclidean worst case (the PEP's solution, pep.solve; needs PEPit) placed in the
  first column of 4 x 3 matrices: ||X e_1^T||_op = ||X||_2, and F(X) = f(X e_1) is L-smooth for the
  spectral norm (||grad F(X) - grad F(Y)||_nuc = ||grad f(X e_1) - grad f(Y e_1)||_2 <= L ||(X - Y) e_1||_2
  <= L ||X - Y||_op), with f's data certified interpolable (pep.interpolation_gap). D_t is recomputed in
  the nuclear norm from the matrices.
* ``runs``: EF LMO runs (theory.checks.witness_runs.simulate, d_t = eta lmo(m_t)) at sigma = 0 on the
  sign (d = 6) and spectral (4 x 3) quadratics, far from the minimiser, max over t >= 2 and seeds
  (a violation check: aligned LMO steps far from the minimiser are far from the worst case); on the
  same runs the first premise D_t <= L J_t, J_t = sum_j w_{t,j} ||y_t - x_j|| (``premise_ratio`` <= 1).

In l_inf the proof's star bound sum_j w_j ||y_t - x_j|| reaches the old constant (each j on its own
coordinate), so these witnesses test the joint constant there; they do not prove it.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..records.bound import EF
from ..records.ef_joint import c_step
from .certificates.relations import points, weights


def _star_coeffs(t: int):
    X, target = points(EF, t)
    return (target - X)[:, 1:], X, target


def sign_worst(mu: float, t: int, L: float = 1.0, eta: float = 1.0, d: int = 6) -> dict:
    """The separable sign-geometry worst instance (module docstring); D_t recomputed from gradients
    of f_i(x) = (a_i/2)(x - y_i)|x - y_i| on every coordinate (sum a_i = L), dual norm l_1."""
    if t > 12:
        raise ValueError("sign_worst enumerates 2^t patterns: t <= 12")
    C, X, target = _star_coeffs(t)
    w = weights(mu, t)
    best, pat = -1.0, None
    for s in itertools.product((-1.0, 1.0), repeat=t):
        val = w @ np.abs(C @ np.array(s))
        if val > best:
            best, pat = val, np.array(s)
    a = np.linspace(1.0, 2.0, d)
    a = L * a / a.sum()
    basis = np.vstack([np.zeros((1, d)), eta * np.outer(pat, np.ones(d))]) if t else np.zeros((1, d))
    xs, y = X @ basis, target @ basis                 # (t+1, d), (d,)
    grad = lambda z: a * np.abs(z - y)                # noqa: E731  f_i' = a_i |z_i - y_i|
    Dt = float(np.abs(w @ np.array([grad(x) for x in xs]) - grad(y)).sum())
    steps = np.abs(np.diff(np.vstack([basis[0], basis[1:]]), axis=0)) if t else np.zeros((0, d))
    bound = L * eta * c_step(mu, t)
    return {"geometry": "sign", "mu": mu, "t": t, "D_t": Dt, "bound": bound,
            "ratio": Dt / bound if bound > 0 else math.nan, "max_step": float(np.abs(basis[1:]).max()) if t else 0.0,
            "pattern": pat.tolist() if t else []}


def spectral_worst(mu: float, t: int, L: float = 1.0, eta: float = 1.0, shape=(4, 3)) -> dict:
    """The PEP's Euclidean worst case in the first column of ``shape`` matrices (module docstring)."""
    from .certificates.pep import interpolation_gap, solve
    wc = solve(EF, mu, t, L, eta)
    n = wc.xs.shape[1]
    if n > shape[0]:
        shape = (n, shape[1])

    def mat(v):
        M = np.zeros(shape)
        M[:n, 0] = v
        return M

    nuc = lambda M: float(np.linalg.svd(M, compute_uv=False).sum())   # noqa: E731
    op = lambda M: float(np.linalg.svd(M, compute_uv=False).max())    # noqa: E731
    w = weights(mu, t)
    G = sum(wj * mat(g) for wj, g in zip(w, wc.grads)) - mat(wc.target_grad)
    Dt = nuc(G)
    steps = [op(mat(d)) for d in wc.d] if t else [0.0]
    all_x = np.vstack([wc.xs, wc.target[None, :]])
    all_g = np.vstack([wc.grads, wc.target_grad[None, :]])
    gap = interpolation_gap(all_x, all_g, np.concatenate([wc.fvals, [wc.target_f]]), L) / (L * eta) ** 2
    bound = L * eta * c_step(mu, t)
    return {"geometry": "spectral", "mu": mu, "t": t, "D_t": Dt, "bound": bound,
            "ratio": Dt / bound if bound > 0 else math.nan, "max_step": max(steps) / eta,
            "interpolation_gap": gap, "shape": shape}


def runs(mu: float, geometry: str = "sign", T: int = 40, seeds: int = 16, eta: float = 0.01, seed: int = 0) -> dict:
    """EF LMO runs at sigma = 0 far from the minimiser: max over t >= 2 and seeds of D_t / (L eta C(mu, t))
    (t = 1 is attained trivially: D_1 = L ||d_0|| = L eta C(mu, 1) far from the minimiser)."""
    from .witness_runs import simulate
    from .witnesses import measure
    H = simulate(EF, geometry, T=T, seeds=seeds, mu=mu, eta=eta, sigma=0.0, seed=seed, x0_scale=100.0,
                 shape=(6,) if geometry == "sign" else (4, 3))
    D = measure(H)["D_t"]
    bound = np.array([H["L"] * eta * c_step(mu, tt) for tt in range(T)])
    r = D[:, 2:] / bound[None, 2:]
    i = np.unravel_index(int(np.nanargmax(r)), r.shape)
    # the first premise, D_t <= L J_t with J_t = sum_j w_{t,j} ||y_t - x_j||, on the same run
    nm = H["geometry"].norm
    Jt = np.stack([nm(H["y"][:, tt][:, None] - H["x"][:, : tt + 1]) @ weights(mu, tt) for tt in range(T)], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        prem = np.where(Jt > 0, D / (H["L"] * Jt), 0.0)
    return {"geometry": geometry, "mu": mu, "ratio": float(r[i]), "t": int(i[1]) + 2, "T": T,
            "premise_ratio": float(np.nanmax(prem))}


def table(mus=(0.05, 0.1, 0.3, 0.5, 0.9, 1.0), t: int = 8, with_pep: bool = True) -> list[dict]:
    """Every witness at step t per mu: sign_worst, spectral_worst (with_pep), runs in both geometries."""
    out = []
    for m in mus:
        out.append(sign_worst(m, t))
        if with_pep:
            out.append(spectral_worst(m, t))
        out.append(runs(m, "sign"))
        out.append(runs(m, "spectral"))
    return out


if __name__ == "__main__":   # pragma: no cover
    for r in table():
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "pattern"})

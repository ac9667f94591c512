"""Premise witnesses: each premise step's OWN sympy expressions evaluated on exact instances.

A premise step of theory.derivation states ``lhs <= rhs`` in abstract symbols (E_t, N_t, D_t,
r_w, G, "f(y_t)", ...). `measure` turns a run of theory.premises.simulate into values for
those symbols; `step_margin` lambdifies ``rhs - lhs`` of the step itself (Sums expanded at each
numeric t) and evaluates it. So a mis-stated premise (say D_t <= L r_w) is evaluated as
written and fails where it is false; nothing re-implements the premise by hand.

Two modes (docs/design.md §5):

* pathwise: rhs - lhs >= 0 on every seed and step (the premise holds for every sample path,
  hence in expectation), worst margin reported;
* mean: the premise is about expectations; its margin is the Monte Carlo mean of rhs - lhs
  plus Z = 5 standard errors (negative only when the premise is violated with confidence).

Instances: sync / delayed / EF x sign (l_inf, d = 6) / spectral (4 x 3) x noise gaussian /
anisotropic / aligned (theory.premises), 48 seeds x 30 steps each.
"""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from .premises import NOISES, _inner, _weights, _wsum, simulate
from .symbols import mu as MU
from .symbols import t as T_SYM

Z = 5.0
MEAN_PREMISES = ("noise: A4 + Jensen + martingale orthogonality + A3", "average the lemma")
#: variants on which a premise is a claim (others: a premise about another variant)
ONLY = {"sync has y_t = x_t": ("sync",), "delayed: r_t = ||d_{t-1}|| <= eta": ("delayed",),
        "EF: r_t = eta ||lmo(m_{t-1}) - lmo(m_{t-2})|| <= 2 eta": ("ef",),
        "x-steps of delayed training are <= eta": ("sync", "delayed"),
        "gradient at x from gradient at y": ("sync", "delayed"),
        "at y := x the perturbation is zero": ("sync",),
        "a perturbation of two steps": ("sync", "delayed", "ef")}
INSTANCES = tuple((v, g, nz) for v in ("sync", "delayed", "ef") for g in ("sign", "spectral") for nz in NOISES)


def measure(H) -> dict:
    """Values of the premises' abstract symbols on run H: arrays (seeds, T) per step, NaN where
    undefined (t + 1 quantities at the last step), or (seeds,) for averages over t < K = T - 1."""
    geo, mu, T = H["geometry"], H["mu"], H["T"]
    dn, nm = geo.dual_norm, geo.norm
    S = H["x"].shape[0]
    r = nm(H["x"] - H["y"])
    E = dn(H["m"] - H["gy"])
    N, D, RW = (np.empty((S, T)) for _ in range(3))
    for tt in range(T):
        w = _weights(tt, mu)
        N[:, tt] = dn(_wsum(w, H["xi"][:, : tt + 1]))
        D[:, tt] = dn(_wsum(w, H["gx"][:, : tt + 1]) - H["gy"][:, tt])
        RW[:, tt] = r[:, : tt + 1] @ w
    nan = np.full((S, 1), np.nan)
    fy = H["f"](H["y"])
    inner = np.stack([_inner(H["gy"][:, tt], geo.lmo(H["m"][:, tt]), geo) for tt in range(T)], 1)
    K = T - 1
    return {"E_t": E, "N_t": N, "D_t": D, "r_w": RW, "r_avg": RW[:, :K].mean(1),
            "f(y_t)": fy, "f(y_{t+1})": np.concatenate([fy[:, 1:], nan], 1),
            "<grad f(y_t), lmo(m_t)>": inner, "||grad f(y_t)||_*": dn(H["gy"]),
            "||m_t - grad f(y_t)||_*": E, "G": dn(H["gy"][:, :K]).mean(1), "G_x": dn(H["gx"][:, :K]).mean(1),
            "(1/K) sum_t E_t": E[:, :K].mean(1),
            "||x_{t+1} - x_t||": np.concatenate([nm(H["x"][:, 1:] - H["x"][:, :-1]), nan], 1),
            "L": H["L"], "eta": H["eta"], "mu": mu, "rho": H["rho"], "sigma": H["sigma"],
            "Delta_0": H["Delta_0"], "K": float(K)}


@functools.lru_cache(maxsize=4096)
def _compiled(expr: sp.Expr, tv, mu_value: float):
    """lambdify of expr at t = tv, mu = mu_value (numbers first: sums then expand cheaply)."""
    e = expr.subs(MU, sp.Float(mu_value))
    e = e if tv is None else e.subs(T_SYM, tv)
    e = e.doit()
    syms = sorted(e.free_symbols, key=lambda s: s.name)
    return syms, sp.lambdify(syms, e, "numpy")


def step_margin(step, values: dict) -> np.ndarray:
    """rhs - lhs of ``step`` evaluated on ``values`` (measure): (seeds, T) or (seeds,)."""
    expr = sp.sympify(step.rhs) - sp.sympify(step.lhs)
    per_t = T_SYM in expr.free_symbols or any(
        np.ndim(values.get(s.name, 0)) == 2 for s in expr.free_symbols)
    if not per_t:
        syms, fn = _compiled(expr, None, float(values["mu"]))
        return np.asarray(fn(*[values[s.name] for s in syms]), float) * np.ones(np.shape(values["G"]))
    T = values["E_t"].shape[1]
    cols = []
    for tv in range(T):
        syms, fn = _compiled(expr, tv, float(values["mu"]))
        args = [values[s.name][:, tv] if np.ndim(values[s.name]) == 2 else values[s.name] for s in syms]
        cols.append(np.asarray(fn(*args), float) * np.ones(values["E_t"].shape[0]))
    return np.stack(cols, 1)


def margin_of(step, values: dict) -> tuple[float, int]:
    """(worst margin, number of samples) of ``step`` on one instance (module docstring)."""
    m = step_margin(step, values)
    m = m[np.isfinite(m)] if step.name not in MEAN_PREMISES else m
    if step.name in MEAN_PREMISES:
        cols = m.reshape(m.shape[0], -1)
        ok = np.all(np.isfinite(cols), 0)
        cols = cols[:, ok]
        worst = np.min(cols.mean(0) + Z * cols.std(0, ddof=1) / np.sqrt(cols.shape[0]))
        return float(worst), int(cols.size)
    return float(np.min(m)), int(m.size)


def premise_steps(derivations=None) -> list:
    """The distinct premise steps (not citations) of every derivation."""
    if derivations is None:
        from .proofs import all_derivations
        derivations = all_derivations()
    seen, out = set(), []
    for d in derivations:
        for s in d.steps:
            if s.kind == "premise" and not s.cites and s.name not in seen:
                seen.add(s.name)
                out.append(s)
    return out


@functools.lru_cache(maxsize=None)
def instance_values(variant: str, geometry: str, noise: str, T: int = 30, seeds: int = 48) -> dict:
    H = simulate(variant, geometry, T=T, seeds=seeds, mu=0.25, eta=0.05, sigma=0.5, seed=1, noise=noise)
    return measure(H)


def witness(step, instances=INSTANCES, T: int = 30, seeds: int = 48) -> dict:
    """Worst margin of ``step`` over the instances it applies to, with instances and sample counts."""
    worst, n, used = np.inf, 0, []
    for v, g, nz in instances:
        if v not in ONLY.get(step.name, ("sync", "delayed", "ef")):
            continue
        vals = instance_values(v, g, nz, T, seeds)
        m, k = margin_of(step, vals)
        scale = 1e-9 * max(1.0, float(vals["L"]))
        worst, n = min(worst, m / 1.0), n + k
        used.append(f"{v}/{g}/{nz}")
        if m < -scale:
            return {"ok": False, "worst_margin": m, "failed_on": f"{v}/{g}/{nz}", "instances": used,
                    "samples": n, "mode": "mean" if step.name in MEAN_PREMISES else "pathwise"}
    return {"ok": True, "worst_margin": float(worst), "instances": used, "samples": n,
            "mode": f"mean + {Z:g} s.e." if step.name in MEAN_PREMISES else "pathwise"}


def all_witnesses(T: int = 30, seeds: int = 48) -> dict:
    """{premise step name: witness(step)} for every premise of every derivation."""
    return {s.name: witness(s, T=T, seeds=seeds) for s in premise_steps()}

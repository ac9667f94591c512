"""Premise witnesses: each premise step's OWN sympy expressions evaluated on exact instances.

A premise step of a derivation (theory.proofs.derivation) states ``lhs <= rhs`` in abstract symbols (E_t, N_t, D_t,
r_w, G, F_{t+1}, ...). `measure` turns a run of theory.checks.witness_runs.simulate into values for
those symbols; `step_margin` lambdifies ``rhs - lhs`` of the step itself (once per step: t and
mu stay arguments, sums become loops) and evaluates it. So a mis-stated premise (say
D_t <= L r_w) is evaluated as written and fails where it is false; nothing re-implements the
premise by hand.

Instances: theory.checks.witness_grid.GRID, the base grid (mu in (0, 1] with 0.9 and 1, several
horizons, sign and spectral geometries with rho up to 4, sigma = 0 far from the minimiser, where
the lemmas are attained) and its corners (mu = 0.005, mu = 1 with sigma = 0 at the near-minimiser
start x_0 = eta/2 and at x_0 = K eta, T = 700, rho = 1 and 32). Results are keyed by premise id
('<derivation>: <step>', theory.proofs.derivation.premise_id). Two modes (docs/design.md §5):

* pathwise: rhs - lhs >= -tol on every seed and step (the premise holds for every sample path,
  hence in expectation), worst margin reported;
* mean: the premise is about expectations. For each instance and step the seeds give
  samples M_1..M_R of rhs - lhs; the premise E M >= 0 is rejected when the one-sided Student-t
  upper confidence bound  mean + t_{R-1, 1-alpha/n} s/sqrt(R)  is below 0, alpha = 0.01
  family-wise, Bonferroni over the n (instance, step) tests of that premise. With s = 0
  (sigma = 0 runs) the bound is the mean itself. The t bound is exact for normal margins and
  approximate otherwise (docs/design.md §6, step 3; python -m verify.coverage measures t bounds).
"""
from __future__ import annotations

import functools

import numpy as np
import sympy as sp
from scipy import stats

from ..records.bound import DELAYED, EF, SYNC, VARIANTS
from ..proofs.derivation import premise_id
from ..records.symbols import K as K_SYM
from ..records.symbols import t as T_SYM
from .witness_grid import GRID, Instance
from .witness_runs import _inner, _weights, _wsum, simulate

ALPHA = 0.01
MEAN_PREMISES = ("noise: A4 + Jensen + martingale orthogonality + A3", "average the lemma")
#: variants on which a premise is a claim (others: a premise about another variant)
ONLY = {"sync has y_t = x_t": (SYNC,), "delayed: r_t = ||d_{t-1}|| <= eta": (DELAYED,),
        "EF: r_t = eta ||lmo(m_{t-1}) - lmo(m_{t-2})|| <= 2 eta": (EF,),
        "x-steps of delayed training are <= eta": (SYNC, DELAYED),
        "gradient at x from gradient at y": (SYNC, DELAYED),
        "at y := x the perturbation is zero": (SYNC,),
        "a perturbation of two steps": VARIANTS}


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
    return {"E_t": E, "E_x": dn(H["m"] - H["gx"]), "N_t": N, "D_t": D, "r_w": RW, "r_avg": RW[:, :K].mean(1),
            "f(y_t)": fy, "f(y_{t+1})": np.concatenate([fy[:, 1:], nan], 1),
            "<grad f(y_t), lmo(m_t)>": inner, "||grad f(y_t)||_*": dn(H["gy"]),
            "||m_t - grad f(y_t)||_*": E, "G": dn(H["gy"][:, :K]).mean(1), "G_x": dn(H["gx"][:, :K]).mean(1),
            "(1/K) sum_t E_t": E[:, :K].mean(1),
            "||x_{t+1} - x_t||": np.concatenate([nm(H["x"][:, 1:] - H["x"][:, :-1]), nan], 1),
            "L": H["L"], "eta": H["eta"], "mu": mu, "rho": H["rho"], "sigma": H["sigma"],
            "Delta_0": H["Delta_0"], "K": K}


@functools.lru_cache(maxsize=None)
def _compiled(expr: sp.Expr):
    """lambdify of expr once; t and K stay integer arguments (sums become Python loops)."""
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    return syms, sp.lambdify(syms, expr, "numpy")


def _arg(values, s, tv):
    if s == T_SYM:
        return tv
    if s == K_SYM:
        return int(values["K"])
    v = values[s.name]
    return v[:, tv] if np.ndim(v) == 2 else v


def step_margin(step, values: dict) -> np.ndarray:
    """rhs - lhs of ``step`` evaluated on ``values`` (measure): (seeds, T) or (seeds,)."""
    expr = sp.sympify(step.rhs) - sp.sympify(step.lhs)
    syms, fn = _compiled(expr)
    per_t = T_SYM in syms or any(np.ndim(values.get(s.name, 0)) == 2 for s in syms)
    S = values["E_t"].shape[0]
    if not per_t:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[_arg(values, s, None) for s in syms]), float) * np.ones(np.shape(values["G"]))
    T = values["E_t"].shape[1]
    with np.errstate(all="ignore"):
        cols = [np.asarray(fn(*[_arg(values, s, tv) for s in syms]), float) * np.ones(S) for tv in range(T)]
    return np.stack(cols, 1)


def mean_ucb(samples: np.ndarray, n_tests: int, alpha: float = ALPHA) -> np.ndarray:
    """Upper confidence bound of E M per column: mean + t_{R-1, 1-alpha/n_tests} s/sqrt(R)."""
    R = samples.shape[0]
    mean = samples.mean(0)
    if R < 2:
        return mean
    q = stats.t.ppf(1 - alpha / n_tests, R - 1)
    return mean + q * samples.std(0, ddof=1) / np.sqrt(R)


def margin_of(step, values: dict, n_tests: int = 1) -> tuple[float, int]:
    """(worst margin, number of samples) of ``step`` on one instance (module docstring): the
    smallest rhs - lhs (pathwise) or the smallest upper confidence bound of E[rhs - lhs] (mean)."""
    m = step_margin(step, values)
    if step.name in MEAN_PREMISES:
        cols = m.reshape(m.shape[0], -1)
        cols = cols[:, np.all(np.isfinite(cols), 0)]
        return float(np.min(mean_ucb(cols, n_tests))), int(cols.size)
    m = m[np.isfinite(m)]
    return float(np.min(m)), int(m.size)


def premise_steps(derivations=None) -> list:
    """[(premise_id, step)] for every premise step (not a citation) of every derivation."""
    if derivations is None:
        from ..proofs.registry import all_derivations
        derivations = all_derivations()
    seen, out = set(), []
    for d in derivations:
        for s in d.steps:
            i = premise_id(d, s)
            if s.kind == "premise" and not s.cites and i not in seen:
                seen.add(i)
                out.append((i, s))
    return out


@functools.lru_cache(maxsize=None)
def instance_values(inst: Instance, sim=None) -> dict:
    """measure() of the run of ``inst`` (simulated by ``sim``, default theory.checks.witness_runs.simulate)."""
    H = (sim or simulate)(inst.variant, inst.geometry, T=inst.T, seeds=inst.seeds, mu=inst.mu, eta=inst.eta,
                          sigma=inst.sigma, shape=inst.shape, seed=1, noise=inst.noise, x0_scale=inst.x0_scale,
                          start=inst.start)
    return measure(H)


def applies(step, inst: Instance) -> bool:
    return inst.variant in ONLY.get(step.name, VARIANTS)


@functools.lru_cache(maxsize=None)
def witness(step, instances=GRID, sim=None) -> dict:
    """Worst margin of ``step`` over the instances it applies to (module docstring); stops at
    the first instance where the premise fails."""
    used = [i for i in instances if applies(step, i)]
    mean = step.name in MEAN_PREMISES
    n_tests = sum(i.T for i in used) if mean else 1
    mode = (f"mean: one-sided Student-t, family-wise {1 - ALPHA:.0%}, Bonferroni over {n_tests} tests"
            if mean else "pathwise")
    worst, n = np.inf, 0
    for k, inst in enumerate(used):
        vals = instance_values(inst, sim)
        m, c = margin_of(step, vals, n_tests)
        worst, n = min(worst, m), n + c
        if m < -1e-9 * max(1.0, float(vals["L"])):
            return {"ok": False, "worst_margin": m, "failed_on": inst.label, "instances": k + 1,
                    "samples": n, "mode": mode}
    return {"ok": True, "worst_margin": float(worst), "instances": len(used), "samples": n, "mode": mode}


def all_witnesses(derivations=None, sim=None) -> dict:
    """{premise_id: witness(step)} for every premise of every derivation (premise_steps)."""
    return {i: witness(s, sim=sim) for i, s in premise_steps(derivations)}

"""One performance-estimation problem (PEPit): the exact worst case of ||m_t - grad f(target)||_2
for one (variant, mu, t), and that worst case turned back into points and gradients.

The PEP (docs/proof.md, 'Certified worst cases (PEPit)'): f in PEPit's SmoothFunction class
(L-smooth, not necessarily convex; its interpolation conditions are exact, Taylor, Hendrickx and
Glineur 2017, Thm 3.10), leaf points y_0 and d_0..d_{t-1} free in any dimension, the constraints
||d_s||^2 <= eta^2, gradients at the points x_j of theory.checks.certificates.relations.points
(one gradient per distinct point), and the performance metric
||sum_j w_{t,j} grad f(x_j) - grad f(target)||^2, maximised. Its value is the dual value of the
SDP (an upper bound, equal to the primal one up to the solver's tolerance); the certificate is
its square root. PEPit is imported here, inside the functions, never at import time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .relations import points, weights

SOLVER = "CLARABEL"
#: extra solver options: none, Clarabel's defaults (1e-8). Tighter ones (1e-10) lower the floor of
#: the squared value at a true 0 (sync at mu = 1) from ~1e-8 to ~1e-11, but Clarabel then stops at
#: its reduced tolerances ("inaccurate") on about 25 of the 90 cells; table.ATOL covers the floor
SOLVER_OPTIONS: dict = {}


def require_pepit():
    """PEPit's PEP and SmoothFunction, or an ImportError that says how to install them."""
    try:
        from PEPit import PEP
        from PEPit.functions import SmoothFunction
    except ImportError as e:   # pragma: no cover - the message is the point
        raise ImportError("theory.checks.certificates needs PEPit and cvxpy: pip install -e '.[pep]' "
                          "(the dev extra includes them; make test installs it)") from e
    return PEP, SmoothFunction


@dataclass(frozen=True)
class WorstCase:
    """value: the PEP's optimum (squared norm, dual); accurate: False when the solver said its
    solution may be inaccurate (cvxpy's status is not 'optimal'); the worst case as
    vectors: y0, d (t, n), xs (t+1, n), grads (t+1, n), fvals (t+1,), target and its gradient."""

    value: float
    accurate: bool
    y0: np.ndarray
    d: np.ndarray
    xs: np.ndarray
    grads: np.ndarray
    fvals: np.ndarray
    target: np.ndarray
    target_grad: np.ndarray
    target_f: float

    @property
    def certified(self) -> float:
        """sqrt(max(value, 0)): the worst case of ||m_t - grad f(target)||_2."""
        return float(np.sqrt(max(self.value, 0.0)))


def _combine(coeffs, basis):
    out = None
    for c, b in zip(coeffs, basis):
        if c:
            out = c * b if out is None else out + c * b
    return out


def solve_problem(problem, solver: str = SOLVER) -> tuple[float, bool]:
    """(value, accurate) of a posed PEPit problem, solved the one way every certificate of the package
    is (cvxpy wrapper, ``solver`` with SOLVER_OPTIONS); accurate: cvxpy's status is 'optimal'."""
    options = SOLVER_OPTIONS if solver == SOLVER else {}
    value = problem.solve(wrapper="cvxpy", solver=solver, verbose=0, **options)
    return float(value), problem.wrapper.prob.status == "optimal"


def solve(variant: str, mu: float, t: int, L: float = 1.0, eta: float = 1.0, solver: str = SOLVER) -> WorstCase:
    """The PEP of the module docstring for one cell, solved."""
    X, target = points(variant, t)
    return solve_points(X, target, mu, t, L, eta, solver)


def solve_points(X, target, mu: float, t: int, L: float = 1.0, eta: float = 1.0, solver: str = SOLVER) -> WorstCase:
    """The PEP for gradient points X (rows over (y_0, d_0, ..., d_{t-1})) and ``target``: any
    delay's relations (theory.checks.certificates.tau_step poses the tau-step ones through it)."""
    PEP, SmoothFunction = require_pepit()
    problem = PEP()
    f = problem.declare_function(SmoothFunction, L=L)
    basis = [problem.set_initial_point() for _ in range(t + 1)]   # y_0, d_0, ..., d_{t-1}
    for d in basis[1:]:
        problem.add_constraint(d ** 2 <= eta ** 2)
    cache: dict = {}

    def oracle(c):
        key = tuple(np.round(c, 12))
        if key not in cache:
            point = _combine(c, basis)
            g, fv = f.oracle(point)
            cache[key] = (point, g, fv)
        return cache[key]

    w = weights(mu, t)
    m = _combine(w, [oracle(c)[1] for c in X])
    problem.set_performance_metric((m - oracle(target)[1]) ** 2)
    value, accurate = solve_problem(problem, solver)
    ev = lambda p: np.atleast_1d(np.asarray(p.eval(), dtype=float))   # noqa: E731
    xs = [oracle(c) for c in X]
    tp = oracle(target)
    return WorstCase(value=float(value), accurate=accurate, y0=ev(basis[0]), d=np.array([ev(b) for b in basis[1:]]),
                     xs=np.array([ev(p) for p, _, _ in xs]), grads=np.array([ev(g) for _, g, _ in xs]),
                     fvals=np.array([float(fv.eval()) for _, _, fv in xs]),
                     target=ev(tp[0]), target_grad=ev(tp[1]), target_f=float(tp[2].eval()))


def interpolation_gap(xs, gs, fs, L: float) -> float:
    """The most negative slack of the L-smooth interpolation conditions over every ordered pair:
    f_i - f_j + L/4 ||x_i - x_j||^2 - <g_i + g_j, x_i - x_j>/2 - ||g_i - g_j||^2/(4L) >= 0
    (Taylor, Hendrickx and Glineur 2017, Thm 3.10: data (x, g, f) satisfying these for all pairs
    are those of some L-smooth function). 0 when every condition holds."""
    worst = 0.0
    for i in range(len(xs)):
        for j in range(len(xs)):
            dx, dg = xs[i] - xs[j], gs[i] - gs[j]
            s = fs[i] - fs[j] + L / 4 * dx @ dx - (gs[i] + gs[j]) @ dx / 2 - dg @ dg / (4 * L)
            worst = min(worst, float(s))
    return worst


def recheck(wc: WorstCase, variant: str, mu: float, t: int, L: float = 1.0, eta: float = 1.0) -> dict:
    """The worst case as points, re-checked in numpy without PEPit: the steps' norms (max ||d_s|| / eta),
    the points rebuilt from y_0 and the d_s by the relations (max deviation), the interpolation
    conditions (:func:`interpolation_gap`, relative to (L eta)^2) and the quantity recomputed
    from the vectors, ||sum_j w_{t,j} g_j - g(target)||, against the certificate."""
    X, target = points(variant, t)
    basis = np.vstack([wc.y0[None, :], wc.d.reshape(t, -1)]) if t else wc.y0[None, :]
    rebuilt = X @ basis
    all_x = np.vstack([wc.xs, wc.target[None, :]])
    all_g = np.vstack([wc.grads, wc.target_grad[None, :]])
    all_f = np.concatenate([wc.fvals, [wc.target_f]])
    err = weights(mu, t) @ wc.grads - wc.target_grad
    return {"step_ratio": float(np.max(np.linalg.norm(wc.d, axis=1)) / eta) if t else 0.0,
            "point_error": float(max(np.max(np.abs(rebuilt - wc.xs)), np.max(np.abs(target @ basis - wc.target)))),
            "interpolation_gap": interpolation_gap(all_x, all_g, all_f, L) / (L * eta) ** 2,
            "value_from_points": float(np.linalg.norm(err)),
            "certified": wc.certified}

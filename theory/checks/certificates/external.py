"""An external check of the certificate route: three worst cases whose values are published, posed
with PEPit's classes and solved through the package's own solve path (pep.solve_problem: the cvxpy
wrapper, the solver and options every certificate of the package uses). tests/theory/test_external_peps.py
compares them with the published closed forms, written there independently.

* ``gd_nonconvex(L, n)``: gradient descent x_{i+1} = x_i - grad f(x_i)/L on an L-smooth (not
  necessarily convex) f, the worst case of min_{i<=n} ||grad f(x_i)||^2 given f(x_0) - f(x_n) <= 1;
  published: 4 L / (3 n) (Taylor's thesis, 2017, p. 190; Abbaszadehpeivasti, de Klerk and Zamani 2021).
* ``gd_convex(L, n)``: the same steps on an L-smooth convex f, the worst case of f(x_n) - f* given
  ||x_0 - x*||^2 <= 1; published: L / (4 n + 2) (Drori and Teboulle 2014).
* ``gd_strongly_convex(L, m, gamma, n)``: steps gamma on an L-smooth m-strongly convex f, the worst
  case of ||x_n - x*||^2 given ||x_0 - x*||^2 <= 1; published: max(|1 - gamma m|, |1 - gamma L|)^(2n).

PEPit is imported inside the functions (pep.require_pepit), as everywhere in this package.
"""
from __future__ import annotations

from .pep import require_pepit, solve_problem


def gd_nonconvex(L: float = 1.0, n: int = 5) -> float:
    """min_{i<=n} ||grad f(x_i)||^2 worst case, gradient descent with step 1/L, f(x_0) - f(x_n) <= 1."""
    PEP, SmoothFunction = require_pepit()
    problem = PEP()
    f = problem.declare_function(SmoothFunction, L=L)
    x = problem.set_initial_point()
    g, f0 = f.oracle(x)
    problem.set_performance_metric(g ** 2)
    for _ in range(n):
        x = x - g / L
        g, fx = f.oracle(x)
        problem.set_performance_metric(g ** 2)
    problem.set_initial_condition(f0 - fx <= 1)
    return solve_problem(problem)[0]


def _convex_problem(L: float, m: float):
    require_pepit()
    from PEPit import PEP
    from PEPit.functions import SmoothStronglyConvexFunction
    problem = PEP()
    f = problem.declare_function(SmoothStronglyConvexFunction, L=L, mu=m)
    xs = f.stationary_point()
    x0 = problem.set_initial_point()
    problem.set_initial_condition((x0 - xs) ** 2 <= 1)
    return problem, f, xs, x0


def gd_convex(L: float = 1.0, n: int = 4) -> float:
    """f(x_n) - f* worst case, gradient descent with step 1/L, ||x_0 - x*||^2 <= 1, f convex."""
    problem, f, xs, x = _convex_problem(L, 0.0)
    for _ in range(n):
        x = x - f.gradient(x) / L
    problem.set_performance_metric(f(x) - f(xs))
    return solve_problem(problem)[0]


def gd_strongly_convex(L: float = 1.0, m: float = 0.1, gamma: float = 1.0, n: int = 3) -> float:
    """||x_n - x*||^2 worst case, gradient descent with step gamma, ||x_0 - x*||^2 <= 1."""
    problem, f, xs, x = _convex_problem(L, m)
    for _ in range(n):
        x = x - gamma * f.gradient(x)
    problem.set_performance_metric((x - xs) ** 2)
    return solve_problem(problem)[0]

"""Sympy symbols of the theory, with assumptions and physical dimensions.

Notation follows docs/design.md §3. Every symbol carries a dimension tag
``(a, b)`` meaning units ``[F]^a [X]^b`` (F: units of f, X: units of x), so
any expression can be checked for dimensional consistency (see
:func:`dimension_of`):

=========  ==========  =================================================
name       dimension   meaning
=========  ==========  =================================================
L          [F/X^2]     smoothness constant (A2)
sigma      [F/X]       gradient-noise level (A3), same units as grad f
rho        1           norm-equivalence constant ||v||_* <= rho ||v||_2 (A4)
eta        [X]         step size (the LMO step has norm <= eta)
mu         1           momentum weight of the new gradient, in (0, 1]
Delta_0    [F]         f(x_0) - f*
K          1           number of steps (horizon)
t          1           step index, t >= 0
r_w        [X]         momentum-weighted perturbation sum_j w_{t,j} E r_j
r_avg      [X]         (1/K) sum_{t<K} r_w(t)
=========  ==========  =================================================

``mu`` is declared positive; its upper bound mu <= 1 is not expressible as a
sympy assumption and is recorded in :data:`CONSTRAINTS` (checks substitute
mu = 1/(1+s), s >= 0, or sample mu in (0, 1]).
"""
from __future__ import annotations

import sympy as sp

L = sp.Symbol("L", positive=True)
sigma = sp.Symbol("sigma", positive=True)
rho = sp.Symbol("rho", positive=True)
eta = sp.Symbol("eta", positive=True)
mu = sp.Symbol("mu", positive=True)
Delta_0 = sp.Symbol("Delta_0", positive=True)
K = sp.Symbol("K", positive=True, integer=True)
t = sp.Symbol("t", nonnegative=True, integer=True)
r_w = sp.Symbol("r_w", nonnegative=True)
r_avg = sp.Symbol("r_avg", nonnegative=True)

#: all public constants by their code name (docs/interfaces.md)
SYMBOLS: dict[str, sp.Symbol] = {
    "L": L, "sigma": sigma, "rho": rho, "eta": eta, "mu": mu,
    "Delta_0": Delta_0, "K": K, "t": t, "r_w": r_w, "r_avg": r_avg,
}

#: dimension (exponent of [F], exponent of [X]) of each symbol
DIMENSIONS: dict[str, tuple[int, int]] = {
    "L": (1, -2), "sigma": (1, -1), "rho": (0, 0), "eta": (0, 1),
    "mu": (0, 0), "Delta_0": (1, 0), "K": (0, 0), "t": (0, 0),
    "r_w": (0, 1), "r_avg": (0, 1),
}

#: dimension of a gradient-norm quantity (grad f, momentum error): [F/X]
GRADIENT_DIM = (1, -1)

#: constraints that sympy assumptions cannot carry
CONSTRAINTS: dict[str, str] = {
    "mu": "0 < mu <= 1",
    "t": "integer t >= 0",
    "K": "integer K >= 1",
    "rho": "rho >= 1 for the norms of interest (not needed by the proofs)",
}


class DimensionError(ValueError):
    """An expression adds terms of different physical dimensions."""


def dimension_of(expr: sp.Expr) -> tuple[sp.Rational, sp.Rational]:
    """Dimension ``(a, b)`` ([F]^a [X]^b) of ``expr``; raises DimensionError.

    Rules: numbers are dimensionless; a sum needs equal dimensions in all
    terms; a product adds exponents; ``base**p`` with numeric ``p`` scales them
    by ``p``; a symbolic exponent (as in (1-mu)^t) needs a dimensionless base
    and exponent; functions (exp, log, ...) need dimensionless arguments.
    """
    expr = sp.sympify(expr)
    if expr.is_Number or expr.is_NumberSymbol:
        return (sp.Integer(0), sp.Integer(0))
    if expr.is_Symbol:
        if expr.name not in DIMENSIONS:
            raise DimensionError(f"symbol {expr.name!r} has no dimension tag")
        a, b = DIMENSIONS[expr.name]
        return (sp.Integer(a), sp.Integer(b))
    if expr.is_Add:
        dims = {dimension_of(a) for a in expr.args}
        if len(dims) != 1:
            raise DimensionError(
                f"terms of {expr} have different dimensions {sorted(dims)}")
        return dims.pop()
    if expr.is_Mul:
        a = b = sp.Integer(0)
        for arg in expr.args:
            da, db = dimension_of(arg)
            a, b = a + da, b + db
        return (a, b)
    if expr.is_Pow:
        base, p = expr.args
        if p.is_Number:
            da, db = dimension_of(base)
            return (da * p, db * p)
        if dimension_of(base) != (0, 0) or dimension_of(p) != (0, 0):
            raise DimensionError(f"symbolic power {expr} of a dimensional base")
        return (sp.Integer(0), sp.Integer(0))
    if isinstance(expr, (sp.Min, sp.Max)):
        return dimension_of(sp.Add(*expr.args)) if len(expr.args) > 1 else dimension_of(expr.args[0])
    if isinstance(expr, sp.Function):
        for arg in expr.args:
            if dimension_of(arg) != (0, 0):
                raise DimensionError(f"{expr.func} of a dimensional argument {arg}")
        return (sp.Integer(0), sp.Integer(0))
    raise DimensionError(f"cannot find the dimension of {expr!r}")


def is_consistent(expr: sp.Expr, dim: tuple[int, int] = GRADIENT_DIM) -> bool:
    """True when ``expr`` is dimensionally consistent and has dimension ``dim``."""
    try:
        return tuple(dimension_of(expr)) == tuple(sp.Integer(d) for d in dim)
    except DimensionError:
        return False

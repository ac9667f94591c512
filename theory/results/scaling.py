"""Scaling (units) checks: a bound on a gradient-norm quantity must scale like [F/X].

Rescale the problem f -> c f and x -> s x (c, s > 0). Then
grad f, sigma -> (c/s) ., L -> (c/s^2) L, Delta_0 -> c Delta_0, eta, r -> s .,
while mu, rho, K, t are unchanged. A quantity such as E||m_t - grad f(y_t)||_*
becomes (c/s) times itself, so a valid bound B must satisfy
B(scaled constants) == (c/s) B(constants) identically; otherwise choosing c or s
makes B smaller than the quantity on some instance where B was tight (or
meaningless). ``scaling_check`` tests this symbolically and, independently,
``theory.records.symbols.dimension_of`` checks that every sum adds like units.
"""
from __future__ import annotations

import dataclasses

import sympy as sp

from ..records.bound import Bound
from ..records.symbols import GRADIENT_DIM, SYMBOLS, DimensionError, dimension_of

c_f = sp.Symbol("c", positive=True)   # f -> c f
s_x = sp.Symbol("s", positive=True)   # x -> s x


def scale_map(c=c_f, s=s_x) -> dict:
    """Substitution of each constant by its rescaled value (f -> c f, x -> s x)."""
    out = {}
    for name, (a, b) in _dims().items():
        out[SYMBOLS[name]] = SYMBOLS[name] * c**a * s**b
    return out


def _dims():
    from ..records.symbols import DIMENSIONS
    return DIMENSIONS


@dataclasses.dataclass(frozen=True)
class ScalingResult:
    """ok: B(scaled) == (c/s) B; ratio: simplified B(scaled)/B; dimension: text or error."""

    name: str
    ok: bool
    ratio: sp.Expr
    dimension: str


def scaling_check(bound: Bound | sp.Expr, name: str | None = None) -> ScalingResult:
    """Check B(c, s rescaled) == (c/s) B(.) symbolically, and B's units are [F/X]."""
    expr = bound.expr if isinstance(bound, Bound) else sp.sympify(bound)
    name = name or getattr(bound, "name", str(expr))
    scaled = expr.subs(scale_map(), simultaneous=True)
    ratio = sp.simplify(scaled / expr)
    ok = sp.simplify(scaled - c_f / s_x * expr) == 0
    try:
        dim = dimension_of(expr)
        dim_text = f"[F]^{dim[0]} [X]^{dim[1]}" + ("" if tuple(dim) == GRADIENT_DIM else " (not [F/X])")
    except DimensionError as err:
        dim_text = f"inconsistent: {err}"
    return ScalingResult(name, bool(ok), ratio, dim_text)


def check_all(bounds) -> list[ScalingResult]:
    """scaling_check for each bound."""
    return [scaling_check(b) for b in bounds]

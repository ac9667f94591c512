"""A grammar of errors and a seeded generator of planted bounds drawn from it: the set on which the
power of check()'s confrontation (theory.checks.confront) is measured (theory.checks.search_power).

A planted bound is a registered valid bound with one error, drawn by numpy's Generator(seed):

* ``scaled``:   one term of the bound times c, c uniform in [0.3, 0.85];
* ``dropped``:  one term removed;
* ``rho cap``:  rho -> min(rho, c) in the whole bound, c log-uniform in [1.5, 30];
* ``exponent``: in one term, a constant s (mu, eta, L, sigma or rho) -> s^p, p in {1/2, 3/2, 2};
* ``variant``:  the expression of a bound of the same kind (lemma / theorem) registered for another
  variant, claimed for this bound's variant and quantity (when that expression differs).

"Terms" are the summands of the registered expression as written (sympy's Add arguments). Nothing is
hand-placed: the bound, the term, the constant and the factor are all drawn; a draw that changes
nothing (``differs``) is drawn again. Whether a planted bound is false is not assumed: search_power decides it
with a reference confrontation on a larger instance set than check()'s, and reports the count.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import sympy as sp

from ..records.registry import all_bounds
from ..records.symbols import L, eta, mu, rho, sigma

KINDS = ("scaled", "dropped", "rho cap", "exponent", "variant")
CONSTANTS = (mu, eta, L, sigma, rho)


class Planted(NamedTuple):
    """One planted bound: ``quantity <= expr`` on ``variant``, made from ``base`` by ``kind``."""
    name: str
    kind: str
    base: str
    expr: sp.Expr
    quantity: str
    variant: str
    what: str


def _bases():
    return [b for b in all_bounds() if b.valid]


def _terms(e) -> list:
    return list(sp.Add.make_args(sp.sympify(e)))


#: points where two expressions are compared (every symbol a bound may use, generic values)
_POINTS = ({"L": 1.3, "eta": 0.07, "mu": 0.31, "rho": 2.2, "sigma": 0.9, "t": 3, "K": 11, "Delta_0": 2.9,
            "r_w": 0.04, "r_avg": 0.05},
           {"L": 0.4, "eta": 0.6, "mu": 0.83, "rho": 7.0, "sigma": 3.1, "t": 0, "K": 2, "Delta_0": 0.5,
            "r_w": 0.3, "r_avg": 0.2})


def differs(a, b) -> bool:
    """a and b take different values at one of two generic points (a cheap, sound test that a change
    changed something: equal expressions agree everywhere)."""
    for pt in _POINTS:
        d = sp.sympify(a) - sp.sympify(b)
        v = complex(d.subs({s: pt[s.name] for s in d.free_symbols}).evalf())
        if abs(v) > 1e-12:
            return True
    return False


def _family(b) -> str:
    return "lemma" if b.quantity.startswith("momentum") else "theorem"


def draw(kind: str, rng) -> Planted | None:
    """One planted bound of ``kind`` (None when the drawn base admits no change of that kind)."""
    bases = _bases()
    b = bases[int(rng.integers(len(bases)))]
    terms = _terms(b.expr)
    i = int(rng.integers(len(terms)))
    if kind == "scaled":
        c = float(np.round(rng.uniform(0.3, 0.85), 3))
        new, what = b.expr - terms[i] + sp.Float(c) * terms[i], f"term {terms[i]} times {c}"
    elif kind == "dropped":
        if len(terms) < 2:
            return None
        new, what = b.expr - terms[i], f"term {terms[i]} dropped"
    elif kind == "rho cap":
        c = float(np.round(np.exp(rng.uniform(np.log(1.5), np.log(30.0))), 3))
        new, what = b.expr.xreplace({rho: sp.Min(rho, sp.Float(c))}), f"rho capped at {c}"
    elif kind == "exponent":
        syms = [s for s in CONSTANTS if terms[i].has(s)]
        if not syms:
            return None
        s = syms[int(rng.integers(len(syms)))]
        p = [sp.Rational(1, 2), sp.Rational(3, 2), sp.Integer(2)][int(rng.integers(3))]
        new, what = b.expr - terms[i] + terms[i].xreplace({s: s ** p}), f"{s} -> {s}^{p} in term {terms[i]}"
    elif kind == "variant":
        donors = [d for d in all_bounds() if d.valid and d.variant != b.variant and _family(d) == _family(b)
                  and differs(d.expr, b.expr)]
        if not donors:
            return None
        d = donors[int(rng.integers(len(donors)))]
        new, what = d.expr, f"the expression of {d.name} ({d.variant}) claimed for {b.variant}"
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not differs(new, b.expr):
        return None
    return Planted("", kind, b.name, new, b.quantity, b.variant, what)


def planted_set(n: int = 60, seed: int = 48) -> list[Planted]:
    """``n`` planted bounds, kinds in turn (KINDS), each drawn by Generator(seed) (module docstring)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        kind = KINDS[len(out) % len(KINDS)]
        p = draw(kind, rng)
        if p is not None:
            out.append(p._replace(name=f"P{len(out) + 1} {kind}: {p.base}, {p.what}"))
    return out

"""Chain check: the conclusion assembled from a derivation's steps must be its registered bound.

Each step is checked alone by theory.check; that cannot see a consistent error (the same
wrong constant in a bound and in the step that quotes it). The chain check assembles the
conclusion instead (docs/design.md §5):

    current := d.start  (the quantity, e.g. E_t = E||m_t - grad f(y_t)||_*)
    for each chain step "lhs REL rhs":
        if current == lhs (symbolically):        current := rhs
        elif lhs occurs in current:              current := current[lhs -> rhs]
             (for REL "<=" only where current increases in that occurrence: d current/d lhs >= 0)
        else: the chain is broken at this step
    finally current must equal the registered bound's expr (or be shown <= it).

A step citing a registered bound (Step.cites) is accepted only when that bound's own
derivation passes the chain check (no cycles). Steps with ``chain=False`` are side facts
(checked alone, not part of the chain).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import sympy as sp

from .check import _nonneg_mu, _symbolic_identity, check_step
from .registry import get


@dataclasses.dataclass(frozen=True)
class ChainResult:
    derivation: str
    bound: str
    ok: bool
    detail: str
    conclusion: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _probe(e: sp.Expr, seed: int = 0):
    """e at a random admissible point (numbers substituted first, then sums expanded)."""
    rng = np.random.default_rng(seed)
    pt = {}
    for s in e.free_symbols:
        if s.name in ("mu", "s_mu"):
            pt[s] = sp.Float(rng.uniform(0.1, 0.9))
        elif s.is_integer:
            pt[s] = sp.Integer(int(rng.integers(1, 7)))
        else:
            pt[s] = sp.Float(rng.uniform(0.5, 2.0))
    return complex(sp.N(e.subs(pt).doit()))


def _same(a_, b_) -> bool:
    """a_ == b_ as functions: a cheap numeric rejection at 3 random points, then sympy."""
    d = sp.sympify(a_) - sp.sympify(b_)
    if d == 0 or sp.expand(d) == 0:
        return True
    scale = 1e-9 * (1 + abs(_probe(sp.sympify(a_), 0)))
    if any(abs(_probe(d, k)) > scale for k in range(3)):
        return False
    return _symbolic_identity(d)


def apply_step(current: sp.Expr, step) -> tuple[sp.Expr | None, str]:
    """current after the step, or (None, why not)."""
    lhs, rhs = sp.sympify(step.lhs), sp.sympify(step.rhs)
    if _same(current, lhs):
        return rhs, ""
    z = sp.Dummy("z")
    cz = current.subs(lhs, z)
    if z not in cz.free_symbols:
        return None, f"step {step.name!r}: its lhs {lhs} does not occur in the current bound {current}"
    if step.rel == "<=" and not _nonneg_mu(sp.diff(cz, z)):
        return None, f"step {step.name!r}: the current bound is not increasing in {lhs}"
    return cz.subs(z, rhs), ""


_CACHE: dict[str, ChainResult] = {}  # results for the registered (unmodified) derivations


def chain_check(d, bound_expr=None, steps=None, _seen=()) -> ChainResult:
    """Assemble ``d``'s conclusion (see the module docstring); ``bound_expr``/``steps`` override
    the registered expression / the derivation's steps (used by theory.mutation)."""
    if bound_expr is None and steps is None:
        if d.name not in _CACHE or _CACHE[d.name].derivation is not d.name:
            _CACHE[d.name] = _chain(d, None, None, _seen)
        return _CACHE[d.name]
    return _chain(d, bound_expr, steps, _seen)


def _chain(d, bound_expr, steps, _seen) -> ChainResult:
    from .proofs import all_derivations
    target = get(d.bound).expr if bound_expr is None else bound_expr
    if not d.proves:
        return ChainResult(d.name, d.bound, True, "explanation, not a proof: no chain required")
    if d.start is None:
        return ChainResult(d.name, d.bound, False, "no start quantity")
    current = sp.sympify(d.start)
    for s in (d.steps if steps is None else steps):
        if not s.chain:
            continue
        if s.cites:
            if s.cites in _seen:
                return ChainResult(d.name, d.bound, False, f"circular citation of {s.cites}")
            dep = next((x for x in all_derivations() if x.bound == s.cites and x.proves), None)
            if dep is None or not chain_check(dep, _seen=_seen + (d.bound,)).ok:
                return ChainResult(d.name, d.bound, False, f"cites {s.cites}, whose chain does not check")
            if not _same(s.rhs, get(s.cites).expr):
                return ChainResult(d.name, d.bound, False, f"cites {s.cites} with a different expression")
        nxt, why = apply_step(current, s)
        if nxt is None:
            return ChainResult(d.name, d.bound, False, why, sp.sstr(current))
        current = nxt
    if _same(current, target):
        return ChainResult(d.name, d.bound, True, "the assembled conclusion equals the bound", sp.sstr(current))
    res = check_step(current, "<=", target)
    if res.ok:
        return ChainResult(d.name, d.bound, True, f"the assembled conclusion implies the bound ({res.status})",
                           sp.sstr(current))
    return ChainResult(d.name, d.bound, False, f"the assembled conclusion {current} is not the bound {target}",
                       sp.sstr(current))


def chain_all() -> list[ChainResult]:
    from .proofs import all_derivations
    return [chain_check(d) for d in all_derivations()]

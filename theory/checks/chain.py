"""Chain check: the conclusion assembled from a derivation's steps must imply its registered bound.

Each step is checked alone by theory.checks.step; that cannot see a consistent error (the same
wrong constant in a bound and in the step that quotes it). The chain check assembles the
conclusion instead (docs/design.md §5), comparing expressions by mathematical equivalence or
implication, never by their syntax:

    current := d.start  (the quantity, e.g. E_t = E||m_t - grad f(y_t)||_*)
    for each chain step "lhs REL rhs":
        if current == lhs as functions (sympy: simplify(current - lhs) == 0):  current := rhs
        elif a subexpression u of current equals lhs as a function:  current := current[u -> rhs]
             (for REL "<=" only where current increases in u: d current/d u >= 0, proved)
        elif REL is "<=" and current <= lhs is proved (sign of lhs - current): current := rhs
        else: the chain is broken at this step
    finally current == the bound, or current <= the bound proved in sympy (no numeric sampling).

A step citing a registered bound (Step.cites) is accepted only when that bound's own
derivation passes the chain check (no cycles) and the step quotes the bound (averaged over
t < K for Step.average). ``derivations`` and ``bounds`` (name -> expr overrides) let
theory.check run the chain on a planted set. Steps with ``chain=False`` are side facts
(checked alone, not part of the chain).
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import sympy as sp

from .step import _nonneg_mu, _symbolic_identity, _symbolic_inequality
from ..proofs.derivation import cited_expr
from ..records.registry import get


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


def _subexpressions(e: sp.Expr):
    """Every node of e (preorder), and every partial sum / product of an Add / Mul's arguments."""
    from itertools import combinations
    seen = []
    for node in sp.preorder_traversal(e):
        if node.is_Atom:
            continue
        seen.append(node)
        if (node.is_Add or node.is_Mul) and 2 < len(node.args) <= 6:
            for r in range(2, len(node.args)):
                seen += [node.func(*c) for c in combinations(node.args, r)]
    return seen


def _replace_equivalent(current: sp.Expr, lhs: sp.Expr, z: sp.Dummy):
    """current with one subexpression that equals lhs as a function replaced by z, or None."""
    cz = current.subs(lhs, z)
    if z in cz.free_symbols:
        return cz
    if lhs.is_Atom:
        return None
    for u in _subexpressions(current):
        if u.free_symbols >= lhs.free_symbols and _same(u, lhs):
            cz = current.subs(u, z)
            if z in cz.free_symbols:
                return cz
    return None


def apply_step(current: sp.Expr, step) -> tuple[sp.Expr | None, str]:
    """current after the step, or (None, why not) (module docstring)."""
    lhs, rhs = sp.sympify(step.lhs), sp.sympify(step.rhs)
    if _same(current, lhs):
        return rhs, ""
    z = sp.Dummy("z")
    cz = _replace_equivalent(current, lhs, z)
    if cz is None:
        if step.rel == "<=" and not lhs.is_Atom and _symbolic_inequality(current, lhs):
            return rhs, ""
        return None, f"step {step.name!r}: its lhs {lhs} is neither the current bound {current} nor part of it"
    if step.rel == "<=" and not _nonneg_mu(sp.diff(cz, z)):
        return None, f"step {step.name!r}: the current bound is not increasing in {lhs}"
    return cz.subs(z, rhs), ""


def _bound_of(name, bounds):
    e = (bounds or {}).get(name)
    return get(name).expr if e is None else e


def chain_check(d, bound_expr=None, steps=None, _seen=(), derivations=None, bounds=None) -> ChainResult:
    """Assemble ``d``'s conclusion (see the module docstring); ``bound_expr``/``steps`` override
    the registered expression / the derivation's steps; ``derivations`` / ``bounds`` are the
    set the citations resolve in (default: the package's, the registry)."""
    if steps is not None:
        d = dataclasses.replace(d, steps=tuple(steps))
    if derivations is None:
        from ..proofs.registry import all_derivations
        derivations = all_derivations()
    bounds = dict(bounds or {})
    if bound_expr is not None:
        bounds[d.bound] = bound_expr
    return _chain(d, tuple(derivations), tuple(sorted(bounds.items(), key=lambda kv: kv[0])), _seen)


def _chain(d, derivations, bounds, _seen) -> ChainResult:
    bmap = dict(bounds)
    target = _bound_of(d.bound, bmap)
    if not d.proves:
        return ChainResult(d.name, d.bound, True, "explanation, not a proof: no chain required")
    if d.start is None:
        return ChainResult(d.name, d.bound, False, "no start quantity")
    deps = []
    for s in d.steps:
        if s.chain and s.cites:
            if s.cites in _seen + (d.bound,):
                return ChainResult(d.name, d.bound, False, f"circular citation of {s.cites}")
            dep = next((x for x in derivations if x.bound == s.cites and x.proves), None)
            ok = dep is not None and _chain(dep, derivations, bounds, _seen + (d.bound,)).ok
            deps.append((s.cites, ok, cited_expr(s, bmap)))
    return _chain_core(d, target, tuple(deps))


@functools.lru_cache(maxsize=None)
def _chain_core(d, target, deps) -> ChainResult:
    """The chain of d given its target and, per citation, (cited name, its chain ok, the
    expression the step must quote)."""
    dep = {name: (ok, e) for name, ok, e in deps}
    current = sp.sympify(d.start)
    for s in d.steps:
        if not s.chain:
            continue
        if s.cites:
            ok, quoted = dep[s.cites]
            if not ok:
                return ChainResult(d.name, d.bound, False, f"cites {s.cites}, whose chain does not check")
            if not _same(s.rhs, quoted):
                return ChainResult(d.name, d.bound, False, f"cites {s.cites} with a different expression")
        nxt, why = apply_step(current, s)
        if nxt is None:
            return ChainResult(d.name, d.bound, False, why, sp.sstr(current))
        current = nxt
    if _same(current, target):
        return ChainResult(d.name, d.bound, True, "the assembled conclusion equals the bound", sp.sstr(current))
    if _symbolic_inequality(current, target):
        return ChainResult(d.name, d.bound, True, "the assembled conclusion implies the bound (proved in sympy)",
                           sp.sstr(current))
    return ChainResult(d.name, d.bound, False, f"the assembled conclusion {current} is not shown to imply"
                       f" the bound {target}", sp.sstr(current))


def chain_all(derivations=None, bounds=None) -> list[ChainResult]:
    from ..proofs.registry import all_derivations
    ders = all_derivations() if derivations is None else derivations
    return [chain_check(d, derivations=ders, bounds=bounds) for d in ders]

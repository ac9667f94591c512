"""Machine checks of single derivation steps.

A step states ``lhs REL rhs`` with REL in {"==", "<="} over the positive
constants of theory.records.symbols (plus auxiliary positive symbols), under extra
``where`` substitutions that encode side conditions (e.g. r_w <= eta as
r_w = eta/(1+v), v >= 0). ``check_step`` returns a `CheckResult`:

* identities: ``simplify(lhs - rhs) == 0``; if sympy needs help, again after
  mu = 1/(1+s) (s > 0, i.e. 0 < mu < 1) plus the point mu = 1; identities with
  a sum over k = a .. n + c (summand free of n) by induction on n (base case
  and step S(n+1) = S(n) + f(n+c+1)) -> "symbolic";
* inequalities: the sign of rhs - lhs under the assumptions (sympy's
  ``is_nonnegative``), directly, after mu = 1/(1+s), after combining over a
  common denominator (numerator and denominator with only positive
  coefficients in positive symbols), and, when both sides are nonnegative,
  for the squares -> "symbolic";
* otherwise dense random sampling (mu in (0, 1] with mu = 1 included, t and K
  integers, other constants log-uniform over [1e-3, 1e3], nonnegative ones
  sometimes 0) -> "numeric (N samples, worst margin m)" where the margin is
  (rhs - lhs)/max(|lhs|, |rhs|); a negative margin beyond round-off rejects.

A rejected step has ``ok=False`` and a counterexample.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import sympy as sp

from ..proofs.derivation import cited_expr, closed_form
from ..records.symbols import mu

_S = sp.Symbol("s_mu", positive=True)  # mu = 1/(1+s_mu)
TOL = 1e-9


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: ok, method ("symbolic"|"numeric"), detail text."""

    ok: bool
    method: str
    detail: str
    counterexample: dict | None = None

    @property
    def status(self) -> str:
        """Short status line, e.g. 'symbolic' or 'numeric (4000 samples, worst margin 2e-3)'."""
        if not self.ok:
            return f"REJECTED ({self.detail})"
        if self.method == "premise":
            return "premise (cited; checked numerically by theory.checks.witnesses)"
        if self.method == "cite":
            return f"cites {self.detail} (whose own chain is checked)"
        return self.method if self.method == "symbolic" else f"numeric ({self.detail})"


def _zero(e: sp.Expr) -> bool:
    e = sp.sympify(e)
    try:
        for cand in (sp.piecewise_fold(e.doit()), sp.piecewise_fold(sp.simplify(e).doit())):
            if sp.simplify(cand) == 0:
                return True
    except Exception:  # sympy can fail on odd inputs; fall through to other tactics
        return False
    return False


def _nonneg(e: sp.Expr) -> bool:
    e = sp.sympify(e).doit()
    if e.is_nonnegative:
        return True
    se = sp.simplify(e)
    if se.is_nonnegative or sp.factor(se).is_nonnegative:
        return True
    num, den = sp.fraction(sp.together(se))
    if _positive_poly(num) and _positive_poly(den):
        return True
    return _two_term(sp.factor_terms(se))


def _two_term(e: sp.Expr, depth: int = 0) -> bool:
    """c * (P - N) >= 0 with c, P, N >= 0 because P^2 - N^2 >= 0."""
    if depth > 1:
        return False
    factors = e.args if e.is_Mul else (e,)
    adds = [f for f in factors if f.is_Add]
    rest = [f for f in factors if not f.is_Add]
    if len(adds) != 1 or not all(f.is_nonnegative for f in rest) or len(adds[0].args) != 2:
        return False
    p_, q_ = adds[0].args
    pos, neg = (p_, -q_) if (-q_).is_nonnegative else (q_, -p_)
    if not (pos.is_nonnegative and neg.is_nonnegative):
        return False
    d2 = sp.simplify(sp.expand(pos**2 - neg**2))
    return bool(d2.is_nonnegative) or _two_term(sp.factor_terms(d2), depth + 1) or (
        (lambda nd: _positive_poly(nd[0]) and _positive_poly(nd[1]))(sp.fraction(sp.together(d2))))


def _positive_poly(e: sp.Expr) -> bool:
    """True if e, expanded, is a sum of terms each nonnegative under the assumptions."""
    e = sp.expand(e)
    terms = e.args if e.is_Add else (e,)
    return all(term.is_nonnegative or sp.simplify(term).is_nonnegative for term in terms)


def _nonneg_mu(e: sp.Expr) -> bool:
    """e >= 0 for all admissible values, using 0 < mu <= 1 via mu = 1/(1+s) and mu = 1."""
    if _nonneg(e):
        return True
    if mu in sp.sympify(e).free_symbols:
        return _nonneg(e.subs(mu, 1 / (1 + _S))) and _nonneg(e.subs(mu, 1))
    return False


def _by_induction(d: sp.Expr) -> bool:
    """d(n) == 0 for all integers n >= n0 by induction, when every Sum in d runs
    k = a .. n + c with a summand free of n: base case d(n0) == 0 and d(n+1) - d(n) == 0
    where each Sum S(n) is a free symbol and S(n+1) = S(n) + f(n + c + 1)."""
    sums = list(d.atoms(sp.Sum))
    if not sums:
        return False
    ns = set()
    for S in sums:
        if len(S.limits) != 1:
            return False
        kk, lo, hi = S.limits[0]
        top = [s_ for s_ in hi.free_symbols if s_.is_integer]
        if len(top) != 1 or not (hi - top[0]).is_Integer or top[0] in S.function.free_symbols \
                or lo.free_symbols:
            return False
        ns.add(top[0])
    if len(ns) != 1:
        return False
    n = ns.pop()
    placeholders = {S: sp.Dummy(f"S{i}") for i, S in enumerate(sums)}
    dS = d.xreplace(placeholders)
    step_map = {}
    for S, P in placeholders.items():
        kk, lo, hi = S.limits[0]
        step_map[P] = P + S.function.subs(kk, hi + 1)
    nxt = dS.subs(n, n + 1).xreplace(step_map)
    diff = sp.expand(sp.powsimp(sp.expand(nxt - dS, power_exp=True), combine="exp"), power_exp=True)
    if sp.simplify(diff) != 0:
        return False
    n0 = 1 if n.is_positive else 0
    return sp.simplify(d.subs(n, n0).doit()) == 0


def _symbolic_identity(d: sp.Expr) -> bool:
    if d.has(sp.Sum) and _by_induction(d):
        return True
    if _zero(d):
        return True
    if mu in d.free_symbols:
        return _zero(d.subs(mu, 1 / (1 + _S))) and _zero(d.subs(mu, 1))
    return False


def quadratic_nonneg(e: sp.Expr, var: sp.Symbol) -> bool:
    """e >= 0 for all real var: a quadratic in var with leading coefficient >= 0 and
    discriminant <= 0 (both proved under the assumptions)."""
    try:
        p = sp.Poly(sp.expand(e), var)
    except sp.PolynomialError:
        return False
    if p.degree() != 2:
        return False
    c2, c1, c0 = p.all_coeffs()
    return _nonneg_mu(c2) and _nonneg_mu(sp.expand(4 * c2 * c0 - c1**2))


def _sqrt_tactic(e: sp.Expr) -> bool:
    """e = sqrt(X) - R >= 0 because R <= 0 or X - R^2 >= 0 (a sum of nonnegative terms, or a
    quadratic in one symbol with discriminant <= 0)."""
    e = sp.expand(e)
    roots = [term for term in sp.Add.make_args(e)
             if isinstance(term, sp.Pow) and term.exp == sp.Rational(1, 2) and term.base.is_Add]
    if len(roots) != 1:
        return False
    X, R = roots[0].base, sp.expand(roots[0] - e)
    if _nonneg_mu(-R):
        return True
    q = sp.expand(X - R**2)
    return _nonneg_mu(q) or any(quadratic_nonneg(q, v) for v in sorted(q.free_symbols, key=str))


def _symbolic_inequality(lhs: sp.Expr, rhs: sp.Expr) -> bool:
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    if _nonneg_mu(rhs - lhs) or _sqrt_tactic(rhs - lhs):
        return True
    if lhs.has(sp.Pow) or rhs.has(sp.Pow):  # compare squares of nonnegative sides
        if _nonneg_mu(lhs) and _nonneg_mu(rhs):
            return _nonneg_mu(sp.expand(rhs**2 - lhs**2))
    return False


def _sample(sym: sp.Symbol, n: int, rng: np.random.Generator) -> np.ndarray:
    name = sym.name
    if sym == mu or name == "mu":
        x = np.where(rng.random(n) < 0.5, rng.random(n), 10 ** rng.uniform(-4, 0, n))
        x[: max(1, n // 20)] = 1.0
        return np.clip(x, 1e-12, 1.0)
    if sym.is_integer:
        lo = 1 if sym.is_positive else 0
        return np.where(rng.random(n) < 0.5, rng.integers(lo, 30, n),
                        rng.integers(lo, 5000, n)).astype(float)
    x = 10 ** rng.uniform(-3, 3, n)
    if not sym.is_positive:  # nonnegative: include zero
        x[rng.random(n) < 0.1] = 0.0
    return x


def numeric_margin(lhs, rhs, n: int = 4000, seed: int = 0):
    """Worst relative margin (rhs - lhs)/max(|lhs|, |rhs|) over n random points, and that point."""
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    syms = sorted((lhs.free_symbols | rhs.free_symbols), key=lambda s: s.name)
    rng = np.random.default_rng(seed)
    has_sum = lhs.has(sp.Sum) or rhs.has(sp.Sum)
    if has_sum:  # closed forms of sums cancel catastrophically: sum term by term, small t
        n = min(n, 600)
    vals = [_sample(s, n, rng) for s in syms]
    if has_sum:
        vals = [np.minimum(v, 60.0) if s.is_integer else v for s, v in zip(syms, vals)]
    with np.errstate(all="ignore"):
        if has_sum:
            fl_fn, fr_fn = sp.lambdify(syms, lhs, "math"), sp.lambdify(syms, rhs, "math")
            pts = [tuple(int(x) if s.is_integer else x for s, x in zip(syms, col)) for col in zip(*vals)]
            fl = np.array([float(fl_fn(*p)) for p in pts])
            fr = np.array([float(fr_fn(*p)) for p in pts])
        else:
            fl = np.broadcast_to(np.asarray(sp.lambdify(syms, lhs, "numpy")(*vals), float), (n,))
            fr = np.broadcast_to(np.asarray(sp.lambdify(syms, rhs, "numpy")(*vals), float), (n,))
        size = np.maximum(np.abs(fl), np.abs(fr))
        floor = 1e-8 * np.nanmedian(np.where(np.isfinite(size), size, np.nan))
        scale = np.maximum(size, max(floor, 1e-300))
        margin = (fr - fl) / scale
    ok = np.isfinite(margin)
    if not ok.any():
        raise ValueError(f"no finite sample for {lhs} vs {rhs}")
    margin = np.where(ok, margin, np.inf)
    i = int(np.argmin(margin))
    return float(margin[i]), {s.name: float(v[i]) for s, v in zip(syms, vals)}, int(ok.sum())


def check_step(lhs, rel: str, rhs, where: dict | None = None, n: int = 4000, seed: int = 0) -> CheckResult:
    """Check ``lhs REL rhs`` (REL "==" or "<=") after the substitutions ``where``."""
    if rel not in ("==", "<="):
        raise ValueError(f"rel must be '==' or '<=', got {rel!r}")
    lhs, rhs = sp.sympify(lhs), sp.sympify(rhs)
    if where:
        lhs, rhs = lhs.subs(where), rhs.subs(where)
    if rel == "==":
        if _symbolic_identity(lhs - rhs):
            return CheckResult(True, "symbolic", "simplify(lhs - rhs) == 0")
        m1, pt1, k = numeric_margin(lhs, rhs, n, seed)
        m2, pt2, _ = numeric_margin(rhs, lhs, n, seed)
        worst = min(m1, m2)
        if worst < -TOL:
            return CheckResult(False, "numeric", f"identity fails, relative gap {-worst:.3g}",
                               pt1 if m1 <= m2 else pt2)
        return CheckResult(True, "numeric", f"{k} samples, worst |gap| {-worst:.2g}")
    if _symbolic_inequality(lhs, rhs):
        return CheckResult(True, "symbolic", "rhs - lhs >= 0 under the assumptions")
    m, pt, k = numeric_margin(lhs, rhs, n, seed)
    if m < -TOL:
        return CheckResult(False, "numeric", f"inequality fails, worst margin {m:.3g}", pt)
    return CheckResult(True, "numeric", f"{k} samples, worst margin {m:.2g}")


def check_proof_step(step, n: int = 4000, seed: int = 0, bounds=None) -> CheckResult:
    """One step of a derivation (theory.proofs.derivation.Step) checked alone: an algebra step by
    `check_step`; a premise is cited, unless both its sides are closed forms, when it is algebra
    and must be proved symbolically; a citation's rhs must be the registered bound it cites
    (``bounds``: {name: expr} overrides of the registry, as theory.check plants them), averaged
    over t < K when the step says so."""
    if step.cites:
        target = cited_expr(step, bounds)
        ok = sp.simplify(sp.sympify(step.rhs) - target) == 0
        what = f"the registered bound {step.cites}" + (" averaged over t < K" if step.average else "")
        return CheckResult(ok, "cite", what if ok else f"rhs is not {what}")
    if step.kind == "premise":
        if closed_form(step.lhs) and closed_form(step.rhs):
            res = check_step(step.lhs, step.rel, step.rhs, dict(step.where) or None, n=n, seed=seed)
            if res.ok and res.method == "symbolic":
                return CheckResult(True, "symbolic", "a premise between closed forms, proved as algebra")
            return CheckResult(False, "premise", "a premise between closed forms is algebra and must be"
                               f" proved, not cited ({res.status})", res.counterexample)
        return CheckResult(True, "premise", f"cited: {step.reason}")
    return check_step(step.lhs, step.rel, step.rhs, dict(step.where) or None, n=n, seed=seed)


def check_derivation(d, n: int = 4000, bounds=None) -> list:
    """[(step, CheckResult)] for every step of derivation ``d``, step i checked with seed i."""
    return [(s, check_proof_step(s, n=n, seed=i, bounds=bounds)) for i, s in enumerate(d.steps)]

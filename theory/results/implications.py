"""Which readings of the paper's bound does each derived lemma imply? (docs/design.md §5)

For a reading R (theory.records.paper_readings) and a derived lemma D of the same quantity, D implies R
for all admissible constants iff  diff = R - D >= 0  for every mu in (0, 1] and all positive
L, eta, rho, sigma (r_w >= 0, t >= 0). With a = sqrt(mu) rho sigma substituted for sigma, every
diff here has the form

    diff = sqrt(X) - Rest          (X: the radicand of the reading's noise term)

so diff >= 0 iff Rest <= 0 or X - Rest^2 >= 0. `implication` proves that in sympy (signs of
polynomials under the assumptions, mu = 1/(1+s); a quadratic in one variable by its
discriminant) or returns the exact counterexample region {Rest > 0 and X - Rest^2 < 0}, solved
for the region variable (r_w when it appears, else a), and an exact rational point of it at
which diff < 0 is confirmed by exact arithmetic. `confirm_region` samples the region and its
complement numerically, so a wrong region is caught.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
import sympy as sp

from ..checks.step import _nonneg_mu
from ..records.registry import get
from ..records.symbols import eta, mu, r_w, rho, sigma, t

a = sp.Symbol("a", positive=True)   # a = sqrt(mu) rho sigma

#: variant label -> derived lemma (the package's own bound for that variant)
VARIANTS = {"delayed at y": "derived_delayed_lemma", "delayed at x": "derived_delayed_lemma_x",
            "EF worst case": "derived_ef_lemma_worst", "EF trajectory": "derived_ef_lemma_trajectory"}
READING_BOUNDS = ("paper_c1_y", "paper_c2_y", "paper_c3_y", "paper_c4_y",
                  "paper_c1_x", "paper_c2_x", "paper_c3_x", "paper_c4_x",
                  "paper_delayed_noise_consistent", "paper_delayed_noise_literal")


@dataclasses.dataclass(frozen=True)
class Implication:
    """reading x variant: implied (proved), not implied (region + exact point), or n/a."""

    reading: str
    variant: str
    lemma: str
    status: str                  # "implied" | "not implied" | "n/a (other quantity)"
    diff: str = ""               # reading - lemma, in a = sqrt(mu) rho sigma
    proof: str = ""
    region: str = ""
    point: dict | None = None
    note: str = ""               # e.g. the region is unreachable by the variant's own runs

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def in_a(expr: sp.Expr) -> sp.Expr:
    """expr with sigma = a / (sqrt(mu) rho), simplified."""
    return sp.simplify(sp.expand(expr.subs(sigma, a / (sp.sqrt(mu) * rho))))


def split_root(diff: sp.Expr):
    """(X, Rest) with diff = sqrt(X) - Rest, X the radicand of the term containing eta."""
    roots = [term for term in sp.Add.make_args(sp.expand(diff))
             if isinstance(term, sp.Pow) and term.exp == sp.Rational(1, 2) and term.base.has(eta)]
    if len(roots) != 1:
        raise ValueError(f"diff: expected one square root with eta, got {roots} in {diff}")
    return roots[0].base, sp.expand(roots[0] - diff)


def _quadratic_nonneg(e: sp.Expr, var: sp.Symbol) -> bool:
    """e >= 0 for all real var, when e is a quadratic in var with a >= 0 leading coefficient
    and a <= 0 discriminant (both proved under the assumptions)."""
    p = sp.Poly(sp.expand(e), var)
    if p.degree() != 2:
        return False
    c2, c1, c0 = p.all_coeffs()
    return _nonneg_mu(c2) and _nonneg_mu(sp.expand(4 * c2 * c0 - c1**2))


def prove_nonneg(X: sp.Expr, rest: sp.Expr) -> str:
    """A proof sentence that sqrt(X) - rest >= 0, or '' when none is found."""
    if _nonneg_mu(-rest):
        return "Rest <= 0 under the assumptions"
    q = sp.expand(X - rest**2)
    if _nonneg_mu(q):
        return f"X - Rest^2 = {sp.factor(q)} >= 0 (sum of nonnegative terms)"
    for var in (a, r_w):
        if var in q.free_symbols and _quadratic_nonneg(q, var):
            return f"X - Rest^2 = {sp.factor(q)}: quadratic in {var} with discriminant <= 0"
    if not rest.has(t) and sp.degree(rest, a) == 1 and _nonneg_mu(sp.diff(rest, a)):  # Rest > 0 iff a > a0
        sols = sp.solve(rest, a)
        a0 = sols[0] if sols else None
        u = sp.Symbol("u", positive=True)
        if a0 is not None and _nonneg_mu(sp.expand(q.subs(a, a0 + u))):
            return (f"Rest > 0 only for a > {a0}; there, with a = {a0} + u (u > 0),"
                    f" X - Rest^2 = {sp.expand(q.subs(a, a0 + u))} >= 0")
    return ""


def region_text(X: sp.Expr, rest: sp.Expr) -> str:
    """The counterexample region {Rest > 0, X < Rest^2}, solved for r_w (linear) or a (quadratic)."""
    diff = sp.sqrt(X) - rest
    if r_w in diff.free_symbols and sp.degree(sp.expand(diff), r_w) == 1:
        root = sp.solve(sp.Eq(diff, 0), r_w)[0]
        return f"r_w > {sp.simplify(root)}  (diff is linear in r_w with coefficient {sp.diff(diff, r_w)})"
    q = sp.expand(X - rest**2)
    if sp.degree(q, a) == 2:
        c2, c1, c0 = sp.Poly(q, a).all_coeffs()
        disc = sp.factor(sp.expand(c1**2 - 4 * c2 * c0))
        lo, hi = sorted(sp.solve(q, a), key=lambda e: sp.default_sort_key(e))
        return (f"Rest > 0 and {sp.factor(q)} < 0, i.e. a strictly between the roots {sp.simplify(lo)}"
                f" and {sp.simplify(hi)} (with a > 0), which are real iff {disc} > 0;"
                f" a = sqrt(mu) rho sigma, Rest = {sp.factor(rest)}")
    return f"Rest > 0 and {sp.factor(q)} < 0 with Rest = {sp.factor(rest)}"


_GRID = [sp.Rational(p, q) for p in (1, 2, 3, 5, 9, 17, 33, 65, 200) for q in (1, 2, 7, 16)]


def exact_point(diff: sp.Expr) -> dict | None:
    """A rational point (mu in (0, 1], t = 0 and t = 5 tried) with diff < 0 in exact arithmetic."""
    syms = sorted(diff.free_symbols, key=lambda s: s.name)
    rng = np.random.default_rng(0)
    for _ in range(400):
        pt = {}
        for s in syms:
            if s == mu:
                pt[s] = sp.Rational(int(rng.integers(1, 17)), 16)
            elif s == t:
                pt[s] = sp.Integer(int(rng.choice([0, 5])))
            else:
                pt[s] = _GRID[int(rng.integers(len(_GRID)))]
        val = diff.subs(pt)
        if sp.N(val, 50) < 0:
            return {s.name: str(v) for s, v in pt.items()} | {"diff": str(sp.nsimplify(val)),
                                                           "diff_numeric": float(sp.N(val, 30))}
    return None


@functools.lru_cache(maxsize=None)
def implication(reading: str, variant: str) -> Implication:
    """Prove that ``variant``'s derived lemma implies ``reading``, or give its counterexample region."""
    R, D = get(reading), get(VARIANTS[variant])
    if R.quantity != D.quantity:
        return Implication(reading, variant, D.name, "n/a (other quantity)")
    diff = in_a(R.expr - D.expr)
    X, rest = split_root(diff)
    proof = prove_nonneg(X, rest)
    if proof:
        return Implication(reading, variant, D.name, "implied", str(diff), proof)
    point = exact_point(diff)
    return Implication(reading, variant, D.name, "not implied", str(diff), "", region_text(X, rest), point,
                       reachability(diff, variant))


#: the largest perturbation each variant's own runs allow: r_t <= cap, hence r_w <= cap
R_CAP = {"EF trajectory": 2 * eta}


def reachability(diff: sp.Expr, variant: str) -> str:
    """For a region r_w > threshold of a variant with r_t <= cap (EF: 2 eta): 'unreachable ...'
    when threshold - cap >= 0 is proved in sympy, so the counterexamples need an r_w that the
    variant's runs never have; '' otherwise."""
    cap = R_CAP.get(variant)
    if cap is None or r_w not in diff.free_symbols or sp.degree(sp.expand(diff), r_w) != 1:
        return ""
    if not _nonneg_mu(-sp.diff(diff, r_w)):
        return ""
    root = sp.solve(sp.Eq(diff, 0), r_w)[0]
    # diff decreases in r_w, so root >= cap iff diff(r_w = cap) >= 0
    if prove_nonneg(*split_root(sp.expand(diff.subs(r_w, cap)))):
        return (f"unreachable: the region needs r_w > {sp.simplify(root)} >= {cap} (proved in sympy),"
                f" but every EF run has r_t <= {cap}, hence r_w <= {cap}")
    return ""


def implication_table() -> list[Implication]:
    """Every reading x every variant (theory.records.paper_readings x VARIANTS)."""
    return [implication(r, v) for r in READING_BOUNDS for v in VARIANTS]


def confirm_region(reading: str, variant: str, n: int = 4000, seed: int = 0) -> dict:
    """Numeric cross-check of an implication: sample constants, and count points where
    diff < 0; for 'implied' there must be none, for 'not implied' every such point must lie in
    the stated region {Rest > 0, X < Rest^2} and every region point must have diff < 0."""
    imp = implication(reading, variant)
    if imp.status.startswith("n/a"):
        return {"checked": 0, "negative": 0, "outside_region": 0}
    diff = in_a(get(reading).expr - get(VARIANTS[variant]).expr)
    X, rest = split_root(diff)
    syms = sorted(diff.free_symbols, key=lambda s: s.name)
    rng = np.random.default_rng(seed)
    vals = {s: (rng.uniform(1e-3, 1.0, n) if s == mu else rng.integers(0, 20, n).astype(float) if s == t
                else 10 ** rng.uniform(-2, 2, n)) for s in syms}
    f = sp.lambdify(syms, diff, "numpy")
    g = sp.lambdify(syms, sp.And(rest > 0, sp.expand(X - rest**2) < 0), "numpy")
    d = np.broadcast_to(np.asarray(f(*[vals[s] for s in syms]), float), (n,))
    inside = np.broadcast_to(np.asarray(g(*[vals[s] for s in syms]), bool), (n,))
    scale = 1e-9 * (1 + np.abs(d))
    neg = d < -scale
    return {"checked": n, "negative": int(neg.sum()), "outside_region": int((neg & ~inside).sum()),
            "region_but_nonnegative": int((inside & (d > scale)).sum())}


def c4_ranges() -> dict:
    """Reading C4 at y_t (literal 8 L eta^2, drift L eta (1-mu)/mu) against the delayed lemma, in
    fixed units of f and x:

    * not implied by derived_delayed_lemma exactly when the region {a between the roots} is
      nonempty: its discriminant 8 L eta^2 (L - 4) > 0, i.e. L > 4;
    * false (below a value a run attains) when L > 8: at sigma = 0 far from the minimiser the
      delayed momentum error at y_t tends to L eta/mu (derived_delayed_lemma is attained there;
      tests/theory/test_derivation.py), while C4 at sigma = 0, t -> oo is sqrt(8 L) eta
      + L eta (1-mu)/mu, smaller iff L eta > sqrt(8 L) eta.

    For 4 < L <= 8 C4 is only not implied; whether a run exceeds it there is not settled."""
    from ..records.symbols import L, mu, sigma
    R, D = get("paper_c4_y").expr, get("derived_delayed_lemma").expr
    diff = in_a(R - D)
    X, rest = split_root(diff)
    q = sp.expand(X - rest**2)
    c2, c1, c0 = sp.Poly(q, a).all_coeffs()
    disc = sp.factor(sp.expand(c1**2 - 4 * c2 * c0))
    not_implied = sp.solve_univariate_inequality(sp.simplify(disc / (8 * eta**2 * L)) > 0, L, relational=True)
    gap0 = sp.simplify((D - R).subs(sigma, 0))  # the transient vanishes with sigma
    false = sp.solve_univariate_inequality(sp.simplify(gap0 / eta) > 0, L, relational=True)
    return {"not_implied": not_implied, "false": false, "discriminant": disc, "gap_at_sigma_0": gap0,
            "mu_free": mu not in gap0.free_symbols}

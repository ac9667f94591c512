"""The language of the proofs: `Step`, `Derivation` and the symbols and helpers steps are made of
(docs/design.md §4-§5 notation). The package's own derivations are in theory.proofs.package_derivations,
the paper's readings derived in theory.proofs.paper_derivations, all of them by name in
theory.proofs.registry.

Each `Step` is ``lhs REL rhs`` with a reason. Two kinds:

* ``kind="algebra"``: a relation between closed-form expressions in the
  constants; theory.checks.step verifies it (`check_proof_step`, `check_derivation`: a proof is
  data here, the checks live one layer up and import it) (symbolically, or numerically with the
  worst margin recorded). A wrong algebra step is rejected.
* ``kind="premise"``: an inequality about random or abstract quantities (E_t, N_t, D_t, r_w,
  G, ...) that follows from an assumption or a textbook fact (descent lemma from A2, Hölder,
  A4, martingale orthogonality, triangle inequality). These are cited, not machine-proved,
  and each is witnessed numerically on the grid of theory.checks.witness_grid (theory.checks.witnesses).
  A premise whose two sides are closed forms in the constants is algebra in disguise: it is
  accepted only when sympy proves it (`closed_form`), never on citation.
* a citation (``cites``): ``lhs <= `` a registered bound, proved by its own derivation; with
  ``average=True`` the rhs is that bound averaged over t < K (`averaged`), which is how a
  theorem uses its lemma (never by restating it as a premise).
"""
from __future__ import annotations

import dataclasses

import sympy as sp

from ..records.symbols import K, mu, r_avg, r_w, t

j = sp.Symbol("j", integer=True, nonnegative=True)
k = sp.Symbol("k", integer=True, nonnegative=True)
v = sp.Symbol("v", nonnegative=True)  # side condition r <= c as r = c/(1+v)
a_, b_ = sp.symbols("a b", positive=True)

# abstract (random) quantities appearing in premises
E_t = sp.Symbol("E_t")        # E||m_t - grad f(y_t)||_*
N_t = sp.Symbol("N_t")        # E||sum_j w_{t,j} xi_j||_*
D_t = sp.Symbol("D_t")        # E||sum_j w_{t,j} (grad f(x_j) - grad f(y_t))||_*
G = sp.Symbol("G")            # (1/K) sum_{t<K} E||grad f(y_t)||_*
S_K = sp.Symbol("(1/K) sum_t E_t")              # (1/K) sum_{t<K} E_t
F_now, F_next = sp.Symbol("f(y_t)"), sp.Symbol("f(y_{t+1})")
INNER = sp.Symbol("<grad f(y_t), lmo(m_t)>")    # <grad f(y_t), lmo(m_t)>
GNORM = sp.Symbol("||grad f(y_t)||_*")
MERR = sp.Symbol("||m_t - grad f(y_t)||_*")

W0 = (1 - mu) ** t                        # w_{t,0}
WK = mu * (1 - mu) ** k                   # w_{t,t-k}, 0 <= k <= t-1 (k = t - j: the age of g_j)


@dataclasses.dataclass(frozen=True)
class Step:
    """One step ``lhs REL rhs`` with its reason; ``where`` encodes side conditions."""

    name: str
    lhs: sp.Expr
    rel: str
    rhs: sp.Expr
    reason: str
    kind: str = "algebra"
    where: tuple = ()
    chain: bool = True
    cites: str = ""
    average: bool = False


#: closed-form symbols: the constants and the auxiliaries of algebra steps (everything else in
#: a step, E_t, N_t, r_w, G, f(y_t), ..., is a random or abstract quantity)
CLOSED = {"L", "sigma", "rho", "eta", "mu", "Delta_0", "K", "t", "a", "b", "v", "k", "j", "s_mu"}


def trivial(lhs, rhs) -> bool:
    """lhs and rhs are the same expression (a step X = X says nothing)."""
    return sp.sympify(lhs) == sp.sympify(rhs)


def closed_form(e) -> bool:
    """True when every free symbol of e is a constant (CLOSED): e holds no random quantity."""
    return all(s.name in CLOSED for s in sp.sympify(e).free_symbols)


def averaged(expr: sp.Expr) -> sp.Expr:
    """(1/K) sum_{t<K} of a lemma affine in r_w: with expr = e(t) + c r_w(t) (c free of t),
    (1/K) sum_{k=0}^{K-1} e(k) + c r_avg, since (1/K) sum_{t<K} r_w(t) = r_avg by definition;
    each t-dependent term c' h(t) is averaged as c' (1/K) sum_k h(k)."""
    c = sp.diff(expr, r_w)
    e = expr - c * r_w
    if r_w in e.free_symbols or t in c.free_symbols:
        raise ValueError(f"averaged: {expr} is not affine in r_w with a t-free coefficient")
    out = c * r_avg
    for term in sp.Add.make_args(e):
        coeff, h = term.as_independent(t, as_Add=False)
        out += coeff * sp.Sum(h.subs(t, k), (k, 0, K - 1)) / K if h.has(t) else term
    return out


def cited_expr(step, bounds=None) -> sp.Expr:
    """The expression a citing step must quote: the cited bound (``bounds`` override the registry),
    averaged over t < K when step.average."""
    from ..records.registry import get
    e = (bounds or {}).get(step.cites, None)
    e = get(step.cites).expr if e is None else e
    return averaged(e) if step.average else e


def premise_id(derivation, step) -> str:
    """The unique id of a premise: '<derivation name>: <step name>'. Step names repeat across
    derivations (sync's r_w <= 0 and r_avg <= 0 are both 'sync has y_t = x_t'); the id does not."""
    return f"{derivation.name}: {step.name}"


def duplicate_ids(derivations) -> list[str]:
    """Ids (premise_id) that two different steps of ``derivations`` share: empty for a well-formed
    set (Derivation and theory.proofs.registry refuse one at registration; check() reports
    one in a planted world as a failure, not an exception)."""
    seen, dup = {}, []
    for d in derivations:
        for s in d.steps:
            i = premise_id(d, s)
            if i in seen and seen[i] != s and i not in dup:
                dup.append(i)
            seen.setdefault(i, s)
    return dup


@dataclasses.dataclass(frozen=True)
class Derivation:
    """A named proof of registry bound ``bound`` as a sequence of steps."""

    name: str
    bound: str
    statement: str
    steps: tuple
    start: object = None     # the quantity the chain starts from (theory.checks.chain)
    proves: bool = True      # False: an explanation, not a proof of ``bound``

    def __post_init__(self):
        bad = [s.name for s in self.steps if s.rel == "==" and trivial(s.lhs, s.rhs)]
        if bad:
            raise ValueError(f"{self.name}: steps {bad} state X = X (the same expression on both sides)")
        dup = duplicate_ids([self])
        if dup:
            raise ValueError(f"{self.name}: two different steps share the id {dup[0]!r} (step names are"
                             " unique within a derivation: they key its premise witnesses)")


def _alg(name, lhs, rel, rhs, reason, where=(), chain=True):
    return Step(name, lhs, rel, rhs, reason, "algebra", tuple(where), chain)


def _prem(name, lhs, rhs, reason, chain=True):
    return Step(name, lhs, "<=", rhs, reason, "premise", (), chain)


def _cite(lhs, bound, average=False):
    """lhs <= the registered bound ``bound`` (proved by its own derivation), or <= its average
    over t < K (``average``: a theorem using its lemma at every t < K)."""
    from ..records.registry import get
    if average:
        return Step(f"by {bound}, averaged over t < K", lhs, "<=", averaged(get(bound).expr),
                    f"{bound} (proved by its own derivation) at each t < K, averaged;"
                    " (1/K) sum_t r_w(t) = r_avg by definition", "premise", (), True, bound, True)
    return Step(f"by {bound}", lhs, "<=", get(bound).expr, f"{bound}, proved by its own derivation",
                "premise", (), True, bound)


#: the quantities the chains start from
E_x = sp.Symbol("E_x")        # E||m_t - grad f(x_t)||_*
G_x = sp.Symbol("G_x")        # (1/K) sum_{t<K} E||grad f(x_t)||_*

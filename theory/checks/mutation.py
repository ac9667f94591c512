"""Mutation table: planted errors in the proofs, each of which ``theory.check()`` itself must catch.

A mutant is a planted world (docs/design.md §5): the mutated derivation with every derivation
it cites (its dependencies, unmutated), {name: expr} overrides of the registered bounds that
make the error consistent (the same wrong term in the bound, its derivation and the premise's
own formula), and optionally a mutated premise simulator. ``run_mutant`` runs
``theory.checks.world.check_world(derivations=..., bounds=..., sim=...)`` on the world: the mutant
is caught when that check is not ok, and ``caught_by`` names the failing sections (steps,
chains, premises, structure, limits).

The mutants, each a consistent error unless said otherwise (the section that must catch it):

* the nine original ones: a false drift premise D_t <= L r_w and a noise premise understated by
  20% (premises), the drift halved and the transient dropped in bound and derivation (chains),
  the lag bound flipped and a wrong geometric sum (steps), the drift premise skipped (chains),
  C2 with the literal 8 L eta^2 (steps), delayed's cap r_t <= eta/2 (premises);
* M1, M4-M7, the errors an independent audit (issue 31) planted: M1 the small-mu noise premise
  sqrt(mu/2) (premises), M4 EF's sign flipped in the premise simulator (premises), M5 a drift
  "justified" by a premise between closed forms (steps), M6 the A4 constant capped at min(rho, 5/2)
  (premises), M7 the theorem restating its lemma as a premise with the drift halved (structure);
  before the witness grid, the closed-form-premise rule, the cited lemma and the limits in
  check(), check() stayed ok on M1, M5, M6 and M7;
* M2 (sqrt(mu) -> mu everywhere) and M3 (an algebra step true only for mu <= 1/2), planted
  alongside them (steps); they are not the audit's;
* N1-N4, the consistent errors of issue 38 that the grid's corners and the corner limits catch
  (premises): N1 the telescope's constant L eta/2 -> L eta/4 and N2 that term dropped, each in the
  step and in the shared descent() (so in every theorem, Kovalev's restated one too: the limit
  identity 'derived delayed theorem == Kovalev - L eta' cannot see them); N3 a change inside
  descent() (Delta_0/(2 eta K)); N4 the transient halved in the noise premise and every lemma,
  an error confined to the t = 0 term when mu = 1. N1 and N2 fail the telescope only at the
  near-minimiser start x_0 = eta/2 with mu = 1 and sigma = 0 (a corner), and the K = 1 limit
  (theory.checks.limit_identities.corner_checks); N4 the t = 0 limit.

A mutant that cannot be planted (the step it mutates is missing) is a row that is not caught,
with the reason: check() then fails, it does not raise.
"""
from __future__ import annotations

import dataclasses
import functools

import sympy as sp

from ..records import package_bounds as B
from ..records import paper_readings as PR
from ..proofs.derivation import W0, S_K, _prem, k
from ..proofs.registry import all_derivations, get_derivation
from ..records.registry import all_bounds
from ..records.symbols import Delta_0, K, L, eta, mu, r_avg, r_w, rho, sigma
from .witness_runs import simulate
from .world import check_world

NOISE = "noise: A4 + Jensen + martingale orthogonality + A3"
DRIFT = "drift: A2 + triangle inequality + y-steps <= eta"
NOISE_ALGEBRA = ("sum of squared weights", "square root of a sum", "mu/(2-mu) <= mu")
#: planted simulator error: EF's x-update with the sign of d_{t-2} flipped
EF_SIGN_FLIPPED = functools.partial(simulate, ef_sign=-1.0)


def _replace(d, name, **changes):
    steps = tuple(dataclasses.replace(s, **changes) if s.name == name else s for s in d.steps)
    if steps == d.steps:
        raise KeyError(f"no step {name!r} in {d.name}")
    return dataclasses.replace(d, steps=steps)


def _drop(d, *names):
    return dataclasses.replace(d, steps=tuple(s for s in d.steps if s.name not in names))


def _insert_after(d, name, step):
    i = next(i for i, s in enumerate(d.steps) if s.name == name)
    return dataclasses.replace(d, steps=d.steps[: i + 1] + (step,) + d.steps[i + 1:])


def _step(d, name):
    return next(s for s in d.steps if s.name == name)


def world(*mutated, bounds=None) -> tuple:
    """The mutated derivations plus every derivation they cite, recursively (unmutated)."""
    pkg = {d.bound: d for d in all_derivations() if d.proves}
    out, todo = {d.name: d for d in mutated}, list(mutated)
    while todo:
        d = todo.pop()
        for s in d.steps:
            dep = pkg.get(s.cites) if s.cites else None
            if dep is not None and dep.name not in out:
                out[dep.name] = dep
                todo.append(dep)
    return tuple(out.values())


def globally(d, old, new):
    """d with ``old`` replaced by ``new`` in every step, and the registry's bounds the same way
    (only the changed ones): a consistent error everywhere."""
    sub = lambda e: sp.sympify(e).xreplace({old: new})  # noqa: E731  (exact nodes: sqrt(mu), not mu)
    steps = tuple(dataclasses.replace(s, lhs=sub(s.lhs), rhs=sub(s.rhs)) for s in d.steps)
    bounds = {b.name: sub(b.expr) for b in all_bounds() if sub(b.expr) != b.expr}
    return dataclasses.replace(d, steps=steps), bounds


def _m(name, kind, intended, derivations=(), bounds=None, sim=None):
    return dict(name=name, kind=kind, intended=intended, derivations=tuple(derivations),
                bounds=dict(bounds or {}), sim=sim)


def planted(name, kind, intended, build) -> dict:
    """The mutant ``build()`` returns (derivations, bounds, sim), or, when it cannot be planted
    (the step it mutates is missing from the package's derivations: a malformed world), a
    mutant whose "error" says why; run_mutant reports it as not caught, so check() fails
    instead of raising."""
    try:
        ders, bounds, sim = build()
    except Exception as e:  # noqa: BLE001  (a mutant that cannot be planted is a failure, not a crash)
        return dict(_m(name, kind, intended), error=f"cannot be planted: {type(e).__name__}: {e}"[:300])
    return _m(name, kind, intended, ders, bounds, sim)


def _audit_mutants() -> list[dict]:
    """M1-M7 of the audit (module docstring)."""
    lem, thm = get_derivation("perturbed_lemma"), get_derivation("perturbed_theorem")
    full = B.DERIVED_EF_LEMMA_TRAJECTORY.expr
    lag = _step(lem, "lag bounded uniformly in t")
    out = []
    # M1: the noise premise with the small-mu approximation sqrt(mu/2) of sqrt(mu/(2-mu))
    m1, b1 = globally(_drop(lem, *NOISE_ALGEBRA), sp.sqrt(mu), sp.sqrt(mu / 2))
    m1 = _replace(m1, NOISE, rhs=rho * sigma * (W0 + sp.sqrt(mu / 2)))
    out.append(_m("M1 noise premise rho sigma ((1-mu)^t + sqrt(mu/2))", "false premise (small-mu approximation)",
                  "premises", world(m1), b1))
    # M2: sqrt(mu) -> mu everywhere
    m2, b2 = globally(lem, sp.sqrt(mu), mu)
    out.append(_m("M2 sqrt(mu) -> mu everywhere", "consistent constant change", "steps", world(m2), b2))
    # M3: an algebra step true only for mu <= 1/2
    m3_bound = full.subs(L * eta * (1 - mu) / mu, 2 * L * eta * (1 - mu) ** 2 / mu)
    m3 = _replace(lem, "lag bounded uniformly in t", rhs=2 * (1 - mu) ** 2 / mu)
    out.append(_m("M3 lag <= 2 (1-mu)^2/mu (true only for mu <= 1/2)", "algebra step with a hidden range",
                  "steps", world(m3), {"derived_ef_lemma_trajectory": m3_bound}))
    # M4: EF sign flip in the premise simulator
    out.append(_m("M4 EF sign flip in the simulator", "simulator error", "premises",
                  world(get_derivation("ef_lemma_worst"), thm), sim=EF_SIGN_FLIPPED))
    # M5: drift 2 L eta (1-mu)/sqrt(mu), "justified" by a premise between closed forms
    new_drift = 2 * (1 - mu) / sp.sqrt(mu)
    m5_bound = full.subs(L * eta * (1 - mu) / mu, L * eta * new_drift)
    m5 = _insert_after(lem, lag.name, _prem("drift at most 2 (1-mu)/sqrt(mu)", lag.rhs, new_drift,
                                            "the momentum forgets at rate sqrt(mu)"))
    out.append(_m("M5 drift 2 L eta (1-mu)/sqrt(mu) by a closed-form premise", "closed form cited as a premise",
                  "steps", world(m5), {"derived_ef_lemma_trajectory": m5_bound}))
    # M6: the A4 constant capped at min(rho, 5/2)
    m6, b6 = globally(lem, rho, sp.Min(rho, sp.Rational(5, 2)))
    out.append(_m("M6 A4 constant capped at min(rho, 5/2)", "false premise (outside the instances' rho)",
                  "premises", world(m6), b6))
    # M7: the theorem restates the lemma as a premise, with the drift halved
    def m7():
        half = (rho * sigma * sp.Sum((1 - mu) ** k, (k, 0, K - 1)) / K + sp.sqrt(mu) * rho * sigma
                + L * eta * (1 - mu) / (2 * mu) + L * r_avg)
        cite = next(s for s in thm.steps if s.cites)
        m7_bound = B.DERIVED_EF_THEOREM_TRAJECTORY.expr - L * eta * (1 - mu) / mu
        m7 = dataclasses.replace(thm, steps=tuple(
            _prem("average the lemma", S_K, half, "perturbed_lemma at each t < K, averaged") if s is cite else s
            for s in thm.steps))
        return world(m7), {"derived_ef_theorem_trajectory": m7_bound}, None
    out.append(planted("M7 theorem restates the lemma as a premise, drift halved", "restated lemma",
                       "structure", m7))
    return out


def mutants() -> list[dict]:
    """Every planted world: the nine original mutants, then M1-M7, then N1-N4 (module docstring)."""
    lem = get_derivation("perturbed_lemma")
    prem = {s.name: s for s in lem.steps}
    half = B.DERIVED_EF_LEMMA_TRAJECTORY.expr - L * eta * (1 - mu) / mu + L * eta * (1 - mu) / (2 * mu)
    no_tr = B.DERIVED_EF_LEMMA_TRAJECTORY.expr - PR.TRANSIENT
    sq = prem["sum of squared weights"]
    c2 = get_derivation("paper_c2")
    qm = _step(c2, "QM-AM: a + b <= sqrt(2 a^2 + 2 b^2)")
    lag = prem["lag bounded uniformly in t"]
    return [
        _m("false premise D_t <= L r_w", "false premise", "premises", world(_replace(lem, DRIFT, rhs=L * r_w))),
        _m("noise premise understated by 20%", "false premise", "premises",
           world(_replace(lem, NOISE, rhs=sp.Rational(4, 5) * prem[NOISE].rhs))),
        _m("drift halved in bound and derivation", "consistent constant change", "chains",
           world(lem), {"derived_ef_lemma_trajectory": half}),
        _m("transient dropped in bound and derivation", "dropped term", "chains",
           world(lem), {"derived_ef_lemma_trajectory": no_tr}),
        _m("lag bound flipped", "flipped inequality", "steps",
           world(_replace(lem, lag.name, lhs=lag.rhs, rhs=lag.lhs))),
        _m("sum of squared weights mu/(1-mu)", "wrong geometric sum", "steps",
           world(_replace(lem, sq.name, rhs=sq.rhs.subs(mu / (2 - mu), mu / (1 - mu))))),
        _m("drift premise skipped (D_t left unbounded)", "dropped step", "chains", world(_drop(lem, DRIFT))),
        _m("C2 chain with the literal 8 L eta^2", "consistent constant change", "steps",
           world(_replace(c2, qm.name, rhs=qm.rhs - PR.P + PR.P_LITERAL)), {"paper_c2_y": PR.PAPER_C4_Y.expr}),
        _m("delayed cap r_t <= eta/2", "false premise", "premises",
           world(_replace(get_derivation("delayed_lemma"), "delayed: r_t = ||d_{t-1}|| <= eta", rhs=eta / 2))),
    ] + _audit_mutants() + corner_mutants() + hole_mutants()


def hole_mutants() -> list[dict]:
    """The holes of issue 48, each planted by its mechanism:

    * B1 a registered reading with no derivation (paper_c3_y) given a wrong exponent, L eta/sqrt(mu)
      for L eta/mu: only the confrontation of every registered bound can see it (bounds);
    * S1 the noise premise capped at sigma <= 1, as written: only the grid's sigma sweep sees it fail
      (premises; the rest of the grid has sigma <= 1/2, theory.checks.witness_grid.SIGMA_SWEEP)."""
    def s1():
        lem = get_derivation("perturbed_lemma")
        return world(_replace(lem, NOISE, rhs=_step(lem, NOISE).rhs.xreplace({sigma: sp.Min(sigma, 1)}))), {}, None
    b1 = PR.PAPER_C3_Y.expr.xreplace({L * eta / mu: L * eta / sp.sqrt(mu)})
    return [
        planted("B1 paper_c3_y (no derivation) with L eta/sqrt(mu) for L eta/mu", "wrong exponent in an"
                " underived reading", "bounds",
                lambda: (world(get_derivation("delayed_lemma")), {"paper_c3_y": b1}, None)),
        planted("S1 noise premise capped at sigma <= 1", "false premise seen only at large sigma", "premises", s1),
    ]


TELESCOPE = "telescope over t < K"


def _with_descent(new_descent) -> dict:
    """{theorem: expr} with descent() replaced by ``new_descent`` in every registered theorem
    built on it (the derived theorems and the restated Kovalev theorem alike)."""
    old = B.descent()
    return {b.name: sp.expand(b.expr - old + new_descent) for b in all_bounds()
            if b.quantity.startswith("avg_grad_norm") and sp.expand(b.expr - old).free_symbols.isdisjoint({Delta_0})}


def _descent_mutant(name, kind, term_old, term_new):
    """A consistent change of one term of descent(): the telescope step and every theorem built on
    descent() (Kovalev's restated one included) change together, so the limit identity
    'derived delayed theorem == Kovalev - L eta' still holds."""
    def build():
        thm = get_derivation("perturbed_theorem")
        tel = _step(thm, TELESCOPE)
        m = _replace(thm, TELESCOPE, rhs=sp.expand(tel.rhs - term_old + term_new))
        return world(m), _with_descent(sp.expand(B.descent() - term_old + term_new)), None
    return planted(name, kind, "premises", build)


def corner_mutants() -> list[dict]:
    """N1-N4 (issue 38): consistent errors that passed check() before the grid's corners
    (theory.checks.witness_grid.CORNERS) and the corner limits (theory.checks.limit_identities.corner_checks)."""
    def n4():
        lem = get_derivation("perturbed_lemma")
        half = rho * sigma * (W0 / 2 + sp.sqrt(mu))
        m = _replace(_drop(lem, *NOISE_ALGEBRA), NOISE, rhs=half)
        bounds = {b.name: b.expr.xreplace({W0: W0 / 2}) for b in all_bounds()
                  if b.quantity.startswith("momentum_error") and b.expr.has(W0)}
        return world(m), bounds, None
    return [
        _descent_mutant("N1 telescope constant L eta/2 -> L eta/4 (step and descent())", "consistent constant change",
                        L * eta / 2, L * eta / 4),
        _descent_mutant("N2 telescope term L eta/2 dropped (step and descent())", "consistent dropped term",
                        L * eta / 2, 0),
        _descent_mutant("N3 descent() with Delta_0/(2 eta K) (step and every theorem on descent())",
                        "consistent change inside the shared descent()", Delta_0 / (eta * K), Delta_0 / (2 * eta * K)),
        planted("N4 transient rho sigma (1-mu)^t halved (premise and every lemma)", "error confined to the t = 0 term"
                " at mu = 1", "premises", n4),
    ]


def run_mutant(m: dict, n: int = 1500) -> dict:
    """check_world on the planted world of mutant ``m`` (what theory.check(..., mutants=False)
    returns); returns the table row."""
    if m.get("error"):
        return {"name": m["name"], "kind": m["kind"], "derivations": [], "caught": False, "caught_by": [],
                "intended": m["intended"], "why": {"planting": [m["error"]]}}
    res = check_world(n, derivations=m["derivations"], bounds=m["bounds"], sim=m["sim"], certificates=False)
    why = {"steps": [f"{d}: {s}" for d, s, ok in res["steps"] if not ok],
           "chains": [f"{c['derivation']}: {c['detail'][:120]}" for c in res["chains"] if not c["ok"]],
           "premises": [f"{k}: fails on {w.get('failed_on')}" for k, w in res["premises"].items() if not w["ok"]],
           "structure": [k for k, v in res["structure"].items() if not v],
           "limits": [k for k, v in res["limits"].items() if not v],
           "certificates": [k for sec, v in res.get("certificates", {}).items() if isinstance(v, dict)
                            for k, ok in v.items() if ok is False][:5],
           "bounds": [f"{k}: refuted on {v.get('failed_on')}" for k, v in res.get("bounds", {}).items() if not v["ok"]],
           "errors": [f"{k}: {v}" for k, v in res["errors"].items()]}
    return {"name": m["name"], "kind": m["kind"], "derivations": [d.name for d in m["derivations"]],
            "caught": not res["ok"], "caught_by": res["failed"], "intended": m["intended"],
            "why": {k: v for k, v in why.items() if v}}


@functools.lru_cache(maxsize=None)
def _table(n: int) -> tuple:
    return tuple(run_mutant(m, n) for m in mutants())


def mutation_table(n: int = 1500) -> list[dict]:
    """Every mutant's row (run once per n, then cached: the package's code does not change)."""
    return [dict(r) for r in _table(n)]

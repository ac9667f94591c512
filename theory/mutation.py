"""Mutation table: planted errors in the proofs, each of which the checks must catch.

A mutant is a modified copy of a derivation (and, for a consistent error, of the registered
bound it proves). Three checks run on it (docs/design.md §5):

* steps:     every step alone (theory.check; theory.derivation.Step.check);
* chain:     the conclusion assembled from the steps must be the (mutated) bound (theory.chain);
* witnesses: every premise step that the mutant changed, evaluated as written on the exact
             instances (theory.witnesses).

``caught`` is True when at least one check fails; ``caught_by`` names them. A consistent
error (the same wrong constant in the bound and in the step quoting it) passes every step
alone and is caught only by the chain; an understated premise yields a tighter conclusion,
so only its witness can catch it (on the "aligned" noise instance, where A4 is tight).
"""
from __future__ import annotations

import dataclasses
import functools

import sympy as sp

from . import bounds as B
from . import paper_readings as PR
from .chain import chain_check
from .proofs import get_derivation
from .symbols import L, eta, mu, r_w
from .witnesses import INSTANCES, witness


def _replace(d, name, **changes):
    steps = tuple(dataclasses.replace(s, **changes) if s.name == name else s for s in d.steps)
    if steps == d.steps:
        raise KeyError(f"no step {name!r} in {d.name}")
    return dataclasses.replace(d, steps=steps)


def _drop(d, name):
    return dataclasses.replace(d, steps=tuple(s for s in d.steps if s.name != name))


def mutants() -> list[dict]:
    """[{name, kind, derivation, bound_expr or None}] (the module docstring)."""
    lem = get_derivation("perturbed_lemma")
    prem = {s.name: s for s in lem.steps}
    half = B.DERIVED_EF_LEMMA_TRAJECTORY.expr - L * eta * (1 - mu) / mu + L * eta * (1 - mu) / (2 * mu)
    no_tr = B.DERIVED_EF_LEMMA_TRAJECTORY.expr - PR.TRANSIENT
    collect = prem["collect the terms"]
    sq = prem["sum of squared weights"]
    c2 = get_derivation("paper_c2")
    qm = {s.name: s for s in c2.steps}["QM-AM: a + b <= sqrt(2 a^2 + 2 b^2)"]
    return [
        dict(name="false premise D_t <= L r_w", kind="false premise",
             derivation=_replace(lem, "drift: A2 + triangle inequality + y-steps <= eta", rhs=L * r_w)),
        dict(name="noise premise understated by 20%", kind="false premise",
             derivation=_replace(lem, "noise: A4 + Jensen + martingale orthogonality + A3",
                                 rhs=sp.Rational(4, 5) * prem["noise: A4 + Jensen + martingale orthogonality + A3"].rhs)),
        dict(name="drift halved in bound and derivation", kind="consistent constant change",
             derivation=_replace(lem, "collect the terms", lhs=collect.lhs - L * eta * (1 - mu) / (2 * mu), rhs=half),
             bound_expr=half),
        dict(name="transient dropped in bound and derivation", kind="dropped term",
             derivation=_replace(lem, "collect the terms", lhs=collect.lhs - PR.TRANSIENT,
                                 rhs=no_tr),
             bound_expr=no_tr),
        dict(name="lag bound flipped", kind="flipped inequality",
             derivation=_replace(lem, "lag bounded uniformly in t",
                                 lhs=prem["lag bounded uniformly in t"].rhs, rhs=prem["lag bounded uniformly in t"].lhs)),
        dict(name="sum of squared weights mu/(1-mu)", kind="wrong geometric sum",
             derivation=_replace(lem, "sum of squared weights",
                                 rhs=sq.rhs.subs(mu / (2 - mu), mu / (1 - mu)))),
        dict(name="lag step skipped", kind="dropped step", derivation=_drop(lem, "lag bounded uniformly in t")),
        dict(name="C2 chain with the literal 8 L eta^2", kind="consistent constant change",
             derivation=_replace(c2, "QM-AM: a + b <= sqrt(2 a^2 + 2 b^2)",
                                 rhs=qm.rhs - PR.P + PR.P_LITERAL),
             bound_expr=PR.PAPER_C4_Y.expr),
        dict(name="delayed cap r_t <= eta/2", kind="false premise",
             derivation=_replace(get_derivation("delayed_lemma"), "delayed: r_t = ||d_{t-1}|| <= eta", rhs=eta / 2)),
    ]


@functools.lru_cache(maxsize=None)
def _step_ok(step, n: int, seed: int) -> bool:
    return step.check(n=n, seed=seed).ok


def run_mutant(m: dict, n: int = 1500) -> dict:
    """Run the three checks on mutant ``m``; returns the table row."""
    d = m["derivation"]
    orig = {s.name: s for s in get_derivation(d.name).steps}
    steps_ok = all(_step_ok(s, n, i) for i, s in enumerate(d.steps))
    chain = chain_check(d, bound_expr=m.get("bound_expr"), steps=d.steps)
    changed = [s for s in d.steps if s.kind == "premise" and not s.cites and s != orig.get(s.name)]
    wit = [witness(s) for s in changed]
    wit_gauss = [witness(s, instances=tuple(i for i in INSTANCES if i[2] == "gaussian")) for s in changed]
    caught_by = [name for name, ok in (("steps", steps_ok), ("chain", chain.ok),
                                       ("witnesses", all(w["ok"] for w in wit))) if not ok]
    return {"name": m["name"], "kind": m["kind"], "derivation": d.name, "caught": bool(caught_by),
            "caught_by": caught_by, "chain": chain.detail[:160],
            "witness_on_gaussian_only_catches": (not all(w["ok"] for w in wit_gauss)) if changed else None}


def mutation_table(n: int = 1500) -> list[dict]:
    return [run_mutant(m, n) for m in mutants()]

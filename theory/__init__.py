"""theory: bounds for sync / delayed / error-feedback LMO momentum methods, checked by sympy.

A short tour (docs/design.md §5 has the mathematics)::

    import theory
    b = theory.get("derived_delayed_lemma")          # a Bound: quantity <= expr
    b.evaluate(L=1, sigma=1, rho=1, eta=0.01, mu=0.1, t=100)
    [x.name for x in theory.all_bounds()]            # the registry, paper_* readings included
    theory.get("paper_c2_y").reading                 # which reading of the paper's bound
    theory.implication("paper_c2_y", "EF worst case").status   # 'implied' (proved in sympy)
    theory.check()["ok"]                             # every step, chain, premise and mutant
    print(theory.proof_text())                       # the numbered, checked proof

Four subpackages, one concept per module (docs/interfaces.md lists every name):

* theory.records (what is claimed): symbols (the constants and their units), bound (the
  `Bound` type), package_bounds (the package's bounds), paper_readings (the paper's delayed
  bound, one record per reading), registry (every bound by name);
* theory.proofs (why it holds): derivation (the `Step` / `Derivation` types),
  package_derivations (the package's proofs), paper_derivations (readings C1, C2 derived),
  registry (every derivation by name);
* theory.checks (whether the proofs hold): step (one step alone), limit_identities (the
  limits and exact corners every bound must pass), chain (the steps assembled
  give the bound), witness_grid + witness_runs + witnesses (premises evaluated on exact
  instances), world (every check on one world), mutation (planted errors that must be
  caught), full (``theory.check()``: the world and the mutation table);
* theory.results (what the bounds say): implications (reading x variant), slack (C2 vs the
  sharper bounds), scaling, limits, rates, render (the proof as text or markdown: proof_text,
  proof_markdown).

The parts stand in layers, lowest first: records (and dynamics), proofs, checks, results,
examples; no module imports a higher layer (docs/interfaces.md, tests/test_import_graph.py).

theory.dynamics (not a bound: what a delay does to the loss on a quadratic; docs/tau_law.md):
stability (the delayed momentum's stability edge), lmo_oscillation (the LMO step's delay
cycle), predictions (the tau sweep's predicted growth, ``python -m theory.dynamics.predictions``).

theory.examples.delayed_lemma reads one bound from statement to check
(``python -m theory.examples.delayed_lemma``); theory.examples.bounds has every registered bound's
runnable example (``theory.examples.bounds.derived_delayed_lemma()`` -> (bound, measured)).
``python -m theory --help`` lists the command line.
"""
from .checks.full import check
from .checks.step import CheckResult, check_step
from .results.render import proof_markdown, proof_text
from .records.bound import Bound
from .records.registry import all_bounds, get, names
from .results.implications import implication, implication_table

__all__ = ["Bound", "get", "all_bounds", "names", "check", "check_step", "CheckResult",
           "implication", "implication_table", "proof_text", "proof_markdown"]

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

Modules: bound / bounds / paper_readings (the records), derivation / paper_derivation (proofs as
steps), check (one step), chain (the steps assembled give the bound), witnesses + premises
(premises evaluated on exact instances), mutation (planted errors that must be caught),
implications (reading x variant), slack (C2 vs the sharper bounds), scaling, limits, rates.
``python -m theory --help`` lists the command line.
"""
from . import check as _check_module  # noqa: F401  (load the submodules whose names the
from . import proof_text as _proof_text_module  # noqa: F401  functions below reuse, first)
from .bound import Bound
from .check import CheckResult, check_step
from .implications import implication, implication_table
from .registry import all_bounds, get, names
from .overview import check, proof_markdown, proof_text

__all__ = ["Bound", "get", "all_bounds", "names", "check", "check_step", "CheckResult",
           "implication", "implication_table", "proof_text", "proof_markdown"]

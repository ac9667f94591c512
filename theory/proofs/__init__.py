"""theory.proofs: why each bound holds, as derivations of checked steps.

derivation (the `Step` / `Derivation` types), package_derivations (the package's proofs),
paper_derivations (readings C1, C2 derived), registry (every derivation by name). A proof is data: the
checks (theory.checks) read it, and its rendering with each step's check is a result
(theory.results.render); nothing here imports either. This package imports none of its
modules.
"""

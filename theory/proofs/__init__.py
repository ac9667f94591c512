"""theory.proofs: why each bound holds, as derivations of checked steps.

derivation (the `Step` / `Derivation` types), package_derivations (the package's proofs),
paper_derivations (readings C1, C2 derived), registry (every derivation by name), render (the
proof as text or markdown: proof_text, proof_markdown). This package imports none of its
modules.
"""

"""theory.checks: whether the proofs hold, each check a value (never an exception).

step (one step alone: `check_step`; a derivation's steps: `check_proof_step`,
`check_derivation`), limit_identities (the limits and exact corners every world must pass), chain (the steps assembled give the bound),
witness_grid + witness_runs + witnesses (premises evaluated on exact instances), world (every
check on one world: `check_world`), mutation (planted errors that must be caught), full
(``theory.check()``: the world and the mutation table). This package imports none of its
modules.
"""

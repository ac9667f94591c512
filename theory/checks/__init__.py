"""theory.checks: whether the proofs hold, each check a value (never an exception).

step (one step alone: `check_step`), chain (the steps assembled give the bound),
witness_grid + witness_runs + witnesses (premises evaluated on exact instances), world (every
check on one world: `check_world`), mutation (planted errors that must be caught), full
(``theory.check()``: the world and the mutation table). This package imports none of its
modules.
"""

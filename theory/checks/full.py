"""``theory.check()``: every check of the theory package in one call, the mutation table included.

It runs theory.checks.world.check_world on the package's own world (or on the world given) and,
with ``mutants=True``, the mutation table of theory.checks.mutation: every planted mutant must make
check_world fail. The result is check_world's with a "mutants" section:
{"steps", "chains", "premises", "structure", "limits", "bounds", "certificates", "mutants", "grid", "errors", "failed",
"ok"}.
It never raises on a malformed world: "errors" says what could not be computed ({section: reason}).

``check(derivations=..., bounds=..., sim=..., mutants=False)`` runs the same checks on a planted
world: a set of derivations, {name: expr} overrides of the registered bounds and a premise
simulator (theory.checks.witness_runs.simulate); theory.checks.mutation plants each mutant that way.
"""
from __future__ import annotations

from .mutation import mutation_table
from .world import check_world


def check(n: int = 1500, derivations=None, bounds=None, sim=None, mutants: bool = True) -> dict:
    """Run every check of the package, or of a planted world (see the module docstring)."""
    out = check_world(n, derivations=derivations, bounds=bounds, sim=sim)
    if not mutants:
        return out
    rows = mutation_table(n)
    failed = list(out["failed"]) + ([] if all(m["caught"] for m in rows) else ["mutants"])
    head = {k: out[k] for k in ("steps", "chains", "premises", "structure", "limits", "bounds", "certificates")}
    return {**head, "mutants": rows, "grid": out["grid"], "errors": out["errors"], "failed": failed,
            "ok": not failed and not out["errors"]}

"""The power of check()'s falsification pass (theory.checks.confront) on planted bounds drawn from a
grammar of errors (theory.checks.error_grammar), per kind of error.

``python -m theory.checks.search_power [--n 130] [--seed 48]`` prints one line per planted bound and the
power per kind.

Which planted bounds are false is not assumed: a planted bound counts as false when a reference
confrontation refutes it, on the witness grid plus REFERENCE_PER_VARIANT instances per variant drawn
with another seed (REFERENCE_SEED) than check()'s search (so the reference holds instances check()
never sees); a planted bound the reference does not refute is reported as "not shown false" and left
out of the power. The power of a kind is (refuted by check()'s instances) / (shown false), and check()'s
instances are the grid and its seeded search (confront.instances()), what ``theory.check()`` runs.
"""
from __future__ import annotations

import argparse
import sys

from .confront import confront, instances, search_instances
from .error_grammar import KINDS, planted_set
from .witness_grid import GRID

REFERENCE_PER_VARIANT = 40
REFERENCE_SEED = 4848


def reference_instances() -> tuple:
    """The grid and REFERENCE_PER_VARIANT instances per variant drawn with REFERENCE_SEED."""
    return GRID + search_instances(REFERENCE_PER_VARIANT, REFERENCE_SEED)


def refuted(p, over) -> bool:
    """Whether the confrontation on ``over`` refutes planted bound ``p``."""
    return not confront(p.name, p.expr, p.quantity, p.variant, over=over)["ok"]


def measure(n: int = 130, seed: int = 48) -> dict:
    """{"rows": [{"name", "kind", "false", "caught"}], "per_kind": {kind: (caught, false, drawn)},
    "power": caught / false over every kind}."""
    ref, mine = reference_instances(), instances()
    rows = []
    for p in planted_set(n, seed):
        false = refuted(p, ref) or refuted(p, mine)
        rows.append({"name": p.name, "kind": p.kind, "false": false, "caught": false and refuted(p, mine)})
    per = {k: (sum(r["caught"] for r in rows if r["kind"] == k), sum(r["false"] for r in rows if r["kind"] == k),
               sum(r["kind"] == k for r in rows)) for k in KINDS}
    total_false = sum(v[1] for v in per.values())
    return {"rows": rows, "per_kind": per,
            "power": sum(v[0] for v in per.values()) / total_false if total_false else float("nan")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m theory.checks.search_power", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=130, help="planted bounds to draw")
    ap.add_argument("--seed", type=int, default=48, help="the generator's seed")
    args = ap.parse_args(argv)
    out = measure(args.n, args.seed)
    for r in out["rows"]:
        print(f"{'caught' if r['caught'] else ('MISSED' if r['false'] else 'not shown false')}: {r['name']}")
    for k, (c, f, d) in out["per_kind"].items():
        print(f"{k}: {c}/{f} caught ({d} drawn, {d - f} not shown false)")
    print(f"power: {out['power']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

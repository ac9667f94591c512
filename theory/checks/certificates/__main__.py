"""python -m theory.checks.certificates [--write]: solve the PEP of every cell of the grid, print
the table (variant, mu, t, certified, derived, ratio, ...) and a one-line verdict, and say whether
the stored values (docs/proof.md's table) are current; --write stores them. Exit 1 if a derived
term is below its certificate or the stored values are stale (without --write)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .table import compute, format_table, verdict

STORED = Path(__file__).with_name("stored.py")


def stored_text(rows) -> str:
    """The source of theory/checks/certificates/stored.py for these rows."""
    body = "\n".join(f"    ({r.variant!r}, {r.mu!r}, {r.t}): {round(r.certified, 9)!r}," for r in rows)
    return ('"""The certified values of the grid (L = eta = 1), written by\n'
            "``python -m theory.checks.certificates --write``; docs/proof.md's table is rendered from them\n"
            'and tests/theory/test_certificates.py re-solves a sub-grid against them."""\n\n'
            "VALUES = {\n" + body + "\n}\n")


#: the stored values are current when within this of the fresh ones (the table's 4 decimals)
STALE_TOL = 1e-4


def stale(rows) -> list:
    """The rows whose stored value differs from the fresh one by more than STALE_TOL."""
    try:
        from .stored import VALUES
    except ImportError:
        return list(rows)
    return [r for r in rows if (r.variant, r.mu, r.t) not in VALUES
            or abs(VALUES[(r.variant, r.mu, r.t)] - r.certified) > STALE_TOL]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m theory.checks.certificates", description=__doc__)
    ap.add_argument("--write", action="store_true", help="store the certified values (stored.py)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = compute()
    print(format_table(rows))
    print(verdict(rows))
    print(f"({len(rows)} PEPs solved in {time.perf_counter() - t0:.1f} s)")
    ok = all(r.holds() for r in rows)
    if args.write:
        STORED.write_text(stored_text(rows))
        print(f"wrote {STORED}")
        return 0 if ok else 1
    old = stale(rows)
    print("stored values current" if not old else
          f"stored values STALE at {len(old)} cells: run python -m theory.checks.certificates --write")
    return 0 if ok and not old else 1


if __name__ == "__main__":
    sys.exit(main())

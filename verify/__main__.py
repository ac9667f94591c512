"""python -m verify [--quick] [--json] [--out DIR]: the empirical verification report."""
from __future__ import annotations

import argparse
import json
import sys

from .report import ensure_writable, markdown, run_report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                 description=(
        "Check every theory bound empirically: batched Monte Carlo on synthetic problems with "
        "certified L, sigma, rho (sync, delayed, EF, PipeDream-style staleness), one-sided 99%% "
        "confidence bounds vs the bound (verdicts: violated / not violated / holds confidently), "
        "planted wrong bounds, and a falsification search for the worst measured/bound ratio. Prints a markdown table (or JSON) and writes PNG figures with --out."))
    ap.add_argument("--quick", action="store_true", help="small budgets (about a minute or two)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON instead of markdown")
    ap.add_argument("--out", default=None, help="directory for report.json, report.md and the PNG figures")
    a = ap.parse_args(argv)
    if a.out:
        try:
            ensure_writable(a.out)
        except OSError as e:
            ap.exit(2, f"python -m verify: error: {e}\n")
    out = run_report(quick=a.quick, out_dir=a.out, progress=lambda s: print(s, file=sys.stderr, flush=True))
    print(json.dumps(out, indent=1, default=str) if a.json else markdown(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

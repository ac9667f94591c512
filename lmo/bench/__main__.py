"""`python -m lmo.bench [--zoo] [--quick]`: benchmarks measured side by side in one run.

Default: Newton-Schulz vs SVD polar vs torch.optim.Muon's orthogonalization (lmo.bench.ns)
and the overhead of the delay / error-feedback wrappers (lmo.bench.wrappers).
``--zoo``: step time and state memory of every optimizer, as ratios to AdamW (lmo.bench.zoo).
"""
import argparse
import importlib


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m lmo.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zoo", action="store_true", help="optimizer-zoo step time and memory vs AdamW")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (a smoke run)")
    args = p.parse_args(argv)
    sections = ["lmo.bench.zoo"] if args.zoo else ["lmo.bench.ns", "lmo.bench.wrappers"]
    for name in sections:
        importlib.import_module(name).main(quick=args.quick)


if __name__ == "__main__":
    main()

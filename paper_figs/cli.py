"""Command line: ``python -m paper_figs [--profile P] [--only NAME ...] [--out DIR] [--force] [--list]``."""
from __future__ import annotations

import argparse
import sys

from .figures import CATALOG
from .profiles import PROFILES, get_profile

EPILOG = """profiles:
""" + "\n".join(f"  {n:6s} {p.description}" for n, p in PROFILES.items()) + """

Results are cached in OUT/cache/<hash of the full run configuration>.json: re-plotting
never retrains, a changed setting reruns only the runs it touches, and an interrupted run
resumes where it stopped. The report is OUT/REPORT.md, figures OUT/figures/*.png|pdf."""


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m paper_figs",
        description="Reproduce the paper's figures and tables (one-step gradient delay in "
                    "pipeline-parallel training) at this machine's scale, and write REPORT.md "
                    "comparing each with the paper's claim.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="quick", choices=sorted(PROFILES),
                    help="scale of the experiments (default: quick)")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(CATALOG),
                    help="only these figures/tables: " + ", ".join(CATALOG))
    ap.add_argument("--out", default="figs_out", help="output directory (default: figs_out/)")
    ap.add_argument("--force", action="store_true", help="rerun even what is cached")
    ap.add_argument("--jobs", type=int, default=None,
                    help="parallel training processes (default: the profile's)")
    ap.add_argument("--list", action="store_true",
                    help="list the figures and the runs each needs in this profile, then exit")
    return ap


def list_profile(profile) -> str:
    """The figures, the runs each adds (not shared with an earlier figure) and time estimates."""
    from .estimates import EXTERNAL_S, fmt_seconds, run_seconds, total_seconds
    from .runs import describe
    lines = [f"profile {profile.name}: {profile.description}",
             f"  ({profile.jobs} training process(es); estimates from paper_figs/estimates.py)"]
    seen, all_new, ext = set(), [], []
    for name, mod in CATALOG.items():
        if not profile.runs_figure(name):
            lines.append(f"  {name}: not run in this profile")
            continue
        runs = mod.runs(profile)
        new = [s for s in runs if repr(sorted(s.items())) not in seen]
        seen.update(repr(sorted(s.items())) for s in runs)
        all_new += new
        if not runs:
            ext.append(EXTERNAL_S.get(name))
            lines.append(f"  {name}: no training (calls verify / theory / the benchmark), "
                         f"{fmt_seconds(EXTERNAL_S.get(name))}")
            continue
        lines.append(f"  {name}: {len(runs)} run(s), {len(new)} new, "
                     f"{fmt_seconds(total_seconds(new, profile.jobs))}")
        lines += [f"    {describe(s)}  [{fmt_seconds(run_seconds(s))} serial]" for s in new]
    train = total_seconds(all_new, profile.jobs)
    known_ext = sum(e for e in ext if e is not None)
    lines.append(f"  total training: {len(all_new)} run(s), {fmt_seconds(train)}; plus external "
                 f"calls {fmt_seconds(known_ext)}" + (" + unmeasured ones" if None in ext else ""))
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    changes = {} if args.jobs is None else {"jobs": args.jobs}
    profile = get_profile(args.profile, **changes)
    if args.list:
        print(list_profile(profile))
        return 0
    from .pipeline import run_profile
    result = run_profile(profile, args.out, only=args.only, force=args.force)
    print(result["report"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

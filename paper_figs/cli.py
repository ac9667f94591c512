"""Command line: ``python -m paper_figs [--profile P] [--only NAME ...] [--out DIR] [--data PATH]
[--diag-every K] [--force] [--reuse-kept] [--jobs N] [--list]``."""
from __future__ import annotations

import argparse
import shlex
import sys

from .figures import CATALOG
from .records.profiles import PROFILES, get_profile

EPILOG = """profiles:
""" + "\n".join(f"  {n:6s} {p.description}" for n, p in PROFILES.items()) + """

Where results come from: a run the profile trains live is cached in
OUT/cache/<hash of the full run configuration>.json (re-plotting never retrains, a changed
setting reruns only the runs it touches, and a killed invocation resumes where it stopped,
a run in flight from its last evaluation's checkpoint in OUT/runs/: "N of M runs cached,
resuming"); the quick profile reads every other run from the kept
records in paper_figs/kept/ (made by `python -m paper_figs.keep` from a finished full
profile's cache). The report is OUT/REPORT.md, a front page linking a page per figure
(OUT/figures/NAME.md, which says for every run which); figures are in OUT/figures/*.png|pdf;
every run used is in OUT/runs.csv, its validation curve in OUT/curves.csv."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown (except None / False, which the help text words itself), epilog as written."""

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m paper_figs",
        description="Reproduce the paper's figures and tables (one-step gradient delay in "
                    "pipeline-parallel training) at this machine's scale, and write REPORT.md "
                    "comparing each with the paper's claim.",
        epilog=EPILOG, formatter_class=HelpFormatter)
    ap.add_argument("--profile", default="quick", choices=sorted(PROFILES),
                    help="scale of the experiments and which runs train live")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(CATALOG), default=None,
                    help="only these figures/tables (default: all of them): " + ", ".join(CATALOG))
    ap.add_argument("--out", default="figs_out", help="output directory")
    ap.add_argument("--force", action="store_true",
                    help="regenerate everything: retrain every run, those otherwise read from the "
                         "cache or kept records included (hours for quick: see --list --force), "
                         "and rerun the external calls")
    ap.add_argument("--reuse-kept", action="store_true",
                    help="read every run that has a kept record from it instead of training it "
                         "(to extend a profile's grid: only the runs without a record train)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="parallel training processes (default: the profile's)")
    ap.add_argument("--data", default=None, metavar="PATH",
                    help="train on this corpus instead of the built-in 'stdlib' one: a directory of text "
                         "documents, a token shard (.bin/.npy) or a directory of shards "
                         "(gpu_runs.data.get_corpus); its tokens' sha256 joins every run's identity, so "
                         "no kept record (all trained on 'stdlib') stands in for these runs")
    ap.add_argument("--diag-every", type=int, default=None, metavar="K",
                    help="record the theory diagnostics (gpu_runs.diagnostics) every K steps in every run "
                         "(not part of the run's identity: a record with these diagnostics also answers a run "
                         "that asks for none; default: the profile's)")
    ap.add_argument("--plan-batch", type=int, default=None, metavar="K",
                    help="the full profile through batch K of the sequential plan (docs/plan.md; "
                         "`python -m paper_figs.allocate` lists the batches); default: through the last "
                         "batch whose runs are all kept")
    ap.add_argument("--plan-only", action="store_true",
                    help="with --plan-batch K: train only batch K's runs; every other run of the figures "
                         "is read from the kept records or the cache, or reported missing (the profile's "
                         "other declared runs wait until the plan's batches are trained: docs/plan.md)")
    ap.add_argument("--list", action="store_true",
                    help="list the figures, their runs (live or kept; with what OUT's cache already holds) "
                         "and the time estimate, then exit")
    return ap


def unusable_out(out: str) -> str | None:
    """Why OUT cannot hold the outputs (created if missing, then a probe file written and
    removed), or None; checked before any run starts."""
    import os
    import tempfile
    try:
        os.makedirs(out, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".write_probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return f"{e.strerror or e} ({type(e).__name__})"
    return None


def data_settings(path: str | None) -> dict:
    """{} for the built-in corpus, else {"data": resolved path, "data_sha256": sha256 of its
    train/val tokens} (gpu_runs.data.get_corpus(path).sha256), so runs on other bytes never
    share a key with these."""
    if path is None or path == "stdlib":
        return {}
    from pathlib import Path

    from gpu_runs.data import get_corpus
    return {"data": str(Path(path).resolve()), "data_sha256": get_corpus(path).sha256}


def with_plan(profile, k: int | None):
    """``profile`` through batch ``k`` of the sequential plan; ``k`` None: through the batches
    whose runs are all kept (the full profile's, for full and quick; the other profiles have no plan)."""
    from .records.plan import through
    if profile.name not in ("full", "quick"):
        if k:
            raise ValueError(f"the plan extends the full profile's grids, not {profile.name!r}'s")
        return profile
    if k is None:
        from .plan_state import completed
        from .records.kept import KeptStore
        k = completed(get_profile("full"), KeptStore())
    return through(profile, k)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser().error(f"--jobs: must be >= 1, got {args.jobs}")
    changes = {} if args.jobs is None else {"jobs": args.jobs}
    try:
        base = data_settings(args.data)
    except (OSError, ValueError) as e:
        parser().error(f"--data: {e}")
    if args.diag_every is not None:
        if args.diag_every < 0:
            parser().error(f"--diag-every: must be >= 0, got {args.diag_every}")
        base["diag_every"] = args.diag_every
    if base:
        changes["base"] = {**get_profile(args.profile).base, **base}
    profile = get_profile(args.profile, **changes)
    try:
        profile = with_plan(profile, args.plan_batch)
    except ValueError as e:
        parser().error(f"--plan-batch: {e}")
    if profile.name == "gpu" and args.data is None:
        print("paper_figs: warning: the gpu profile trains on the built-in 7.5 MB byte corpus "
              "(about 22 epochs at 135M parameters: memorization, not pretraining); give --data with "
              "token shards of a real corpus", file=sys.stderr)
    train_only = None
    if args.plan_only:
        if not args.plan_batch:
            parser().error("--plan-only: needs --plan-batch K >= 1 (the batch whose runs train)")
        from .plan_state import batch_runs
        train_only = set(batch_runs(profile.plan_base, args.plan_batch))
    from .records.kept import KeptStore
    if KeptStore().refuse_broken(lambda line: print(f"paper_figs: {line}", file=sys.stderr)):
        return 1
    if args.list:
        from pathlib import Path

        from .records.cache import Cache
        from .listing import list_profile
        print(list_profile(profile, only=args.only, force=args.force, cache=Cache(Path(args.out) / "cache"),
                           reuse_kept=args.reuse_kept, train_only=train_only))
        return 0
    bad = unusable_out(args.out)
    if bad:
        print(f"python -m paper_figs: error: --out {args.out}: {bad}; nothing was run", file=sys.stderr)
        return 2
    from .pipeline import run_profile
    from .records.runs import DiskFailed, disk_error
    try:
        result = run_profile(profile, args.out, only=args.only, force=args.force, reuse_kept=args.reuse_kept,
                             train_only=train_only)
    except DiskFailed as e:   # the first failed write stops the job (issue 50): one line, nothing after it
        print(f"python -m paper_figs: error: {e}", file=sys.stderr, flush=True)
        return 1
    except OSError as e:
        if not disk_error(e):
            raise
        print(f"python -m paper_figs: error: a write failed ({type(e).__name__}: {e}); the job stopped there, "
              "every finished run is cached: free space (or fix the disk), then run the same command",
              file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt as e:    # Ctrl-C: the workers are stopped already (paper_figs.records.stopping)
        what = str(e) if str(e) else "every run that finished is cached"
        again = shlex.join(["python", "-m", "paper_figs", *(sys.argv[1:] if argv is None else argv)])
        print(f"python -m paper_figs: interrupted: {what}; continue with: {again}", file=sys.stderr, flush=True)
        return 130
    print(result["report"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

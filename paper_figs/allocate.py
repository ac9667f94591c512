"""The sequential plan's state: ``python -m paper_figs.allocate``.

Reads the plan (``paper_figs.records.plan``, written down in docs/plan.md before any of its
runs was launched) and the kept records, and prints per batch the claims it feeds, its new
runs (those the full profile through the batch has and the profile through the batch before
lacks), how many are kept, the CPU hours the missing ones cost (the kept records' ``wall_s``,
``paper_figs.planned_runs.wall_s``), and the commands that train and keep the next batch.

The figures read the full profile through :func:`completed` batches: the last batch whose
runs, and every earlier batch's, are all kept. A batch therefore enters the verdicts whole,
as one interim look (docs/plan.md §3).
"""
from __future__ import annotations

import argparse
import sys

from .figures import CATALOG
from .figures.common import figure_runs
from .planned_runs import wall_s
from .records.deps import Deps
from .records.kept import KeptStore
from .records.plan import BATCHES, BY_ID, through
from .records.profiles import Profile, get_profile
from .records.runs import Runner


def _keys(profile: Profile, figures, runner: Runner) -> dict:
    return {runner.key_of(s): s for n in figures if profile.runs_figure(n) for s in figure_runs(CATALOG[n], profile)}


def batch_runs(base: Profile, k: int) -> dict:
    """{key: settings} of the runs batch ``k`` adds to its figures in ``base`` (the full profile):
    those its figures have through batch k and not through batch k - 1. Some may be kept already
    (another figure's runs, e.g. Figure 3's 1500-step runs in Figure 5's new seed): the batch is
    complete when all are kept."""
    runner, figs = Runner(Deps(), None), BY_ID[k].figures
    before = _keys(through(base, k - 1), figs, runner)
    return {key: s for key, s in _keys(through(base, k), figs, runner).items() if key not in before}


def completed(base: Profile, store: KeptStore) -> int:
    """The number of leading batches whose runs are all kept (0: none)."""
    for b in BATCHES:
        if any(store.get(key) is None for key in batch_runs(base, b.id)):
            return b.id - 1
    return len(BATCHES)


def commands(k: int) -> list[str]:
    """The commands that train batch ``k`` (one process, resumable) and keep its records."""
    only = " ".join(BY_ID[k].figures)
    return [f"python -m paper_figs --profile full --plan-batch {k} --reuse-kept --jobs 1 --only {only}",
            "python -m paper_figs.keep --profile full"]


def table(base: Profile, store: KeptStore) -> list[str]:
    """One row per batch: claims, runs, kept, missing CPU hours, status."""
    done = completed(base, store)
    rows = ["| batch | claims | runs | kept | missing, est. CPU h | status |", "|---|---|---|---|---|---|"]
    for b in BATCHES:
        runs = batch_runs(base, b.id)
        missing = [s for key, s in runs.items() if store.get(key) is None]
        hours = sum(wall_s(s, store) for s in missing) / 3600
        status = "in the verdicts" if b.id <= done else ("next" if b.id == done + 1 else "waiting")
        rows.append(f"| {b.id} | {', '.join(b.claims)} | {len(runs)} | {len(runs) - len(missing)} | "
                    f"{hours:.2f} | {status} |")
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.allocate", description=__doc__.split("\n\n")[0])
    ap.parse_args(argv)
    base, store = get_profile("full"), KeptStore()
    done = completed(base, store)
    print(f"The sequential plan (docs/plan.md): {done} of {len(BATCHES)} batches in the verdicts.")
    print("\n".join(table(base, store)))
    if done < len(BATCHES):
        print(f"\nNext, batch {done + 1} ({BY_ID[done + 1].why}):")
        print("\n".join(f"  {c}" for c in commands(done + 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

from .plan_state import batch_runs, completed
from .planned_runs import wall_s
from .records.kept import KeptStore
from .records.plan import BATCHES, BY_ID, through
from .records.profiles import Profile, get_profile


def commands(k: int) -> list[str]:
    """The commands that train batch ``k`` (one process, resumable; ``--plan-only``: its runs
    alone, not the figures' other declared runs, which wait: docs/plan.md §2) and keep its records."""
    only = " ".join(BY_ID[k].figures)
    return [f"python -m paper_figs --profile full --plan-batch {k} --plan-only --reuse-kept --jobs 1 --only {only}",
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


def proposal(rows: list[dict], budget_h: float) -> list[str]:
    """The claims to spend ``budget_h`` CPU hours on, cheapest decision first (the most claims
    decided per CPU hour, each at 80 % power: ``paper_figs.seeds_needed``), and those that are
    undecidable at this scale (over UNDECIDABLE_CPU_H, or no direction to power)."""
    from .report.confirmatory import UNDECIDABLE_CPU_H
    ok = sorted((r for r in rows if r.get("cpu_h") is not None and r["cpu_h"] <= UNDECIDABLE_CPU_H),
                key=lambda r: r["cpu_h"])
    out, spent = ["| claim | seeds per cell | extra runs | CPU h | cumulative | within the budget |",
                  "|---|---|---|---|---|---|"], 0.0
    for r in ok:
        spent += r["cpu_h"]
        out.append(f"| {r['claim']} | {r['n']} | {r['runs']} | {r['cpu_h']:.1f} | {spent:.1f} | "
                   f"{'yes' if spent <= budget_h else 'no'} |")
    never = [r["claim"] for r in rows if r not in ok]
    out += ["", f"Undecidable at this scale (over {UNDECIDABLE_CPU_H:.0f} CPU hours or no direction to power): "
            + (", ".join(never) or "none")]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.allocate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=None, metavar="HOURS",
                    help="also rank the undecided claims by the CPU hours their decision needs and say which "
                         "fit in HOURS (reads every kept record: a minute or two)")
    a = ap.parse_args(argv)
    if a.budget is not None and not a.budget > 0:
        ap.error(f"--budget: must be > 0 hours, got {a.budget}")
    base, store = get_profile("full"), KeptStore()
    done = completed(base, store)
    print(f"The sequential plan (docs/plan.md): {done} of {len(BATCHES)} batches in the verdicts.")
    print("\n".join(table(base, store)))
    if done < len(BATCHES):
        print(f"\nNext, batch {done + 1} ({BY_ID[done + 1].why}):")
        print("\n".join(f"  {c}" for c in commands(done + 1)))
    if a.budget is not None:
        from .error_rates import design
        from .seeds_needed import rows
        print(f"\nWhere {a.budget:g} CPU hours decide the most claims (80 % power, at the kept records' effects; "
              f"through batch {done}):")
        print("\n".join(proposal(rows(design(through(base, done))), a.budget)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

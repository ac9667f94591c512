"""The runs the verdict protocol asks for (issue 37, items 7 and 8), declared in the full
profile's grids before they are trained: ``python -m paper_figs.planned_runs`` lists them with
the CPU time the kept records' ``wall_s`` predicts.

- Figure 5 on the small model (``fig5.Spec.scale_horizons``: 1500 and 3000 steps, AdamW and
  Muon, sync and 2BW, seeds 0-2): does the tiny model's shrinking gap depend on scale?
- Grid extensions where a best lr lay at the edge of its grid (docs/protocol.md §6): Figure 4's
  lr-retuned grid (``fig4.Spec.momentum_lr_extend``: AdamW and Lion at x0.25 and x4, Muon at
  x0.25, every momentum) and lr_tuning's (``grids.Shared.tuning_lr_extend``: MARS and Muon at
  x0.25; Muon's grid ends at seeds 0-3).
- The correctors figure (issue 41, ``paper_figs.figures.correctors``): delays tau = 2, 4, 8, the
  correctors at tau = 1 and 4, and the attribution, 3 seeds each, declared with the protocol
  of docs/correctors.md §8 before they were trained.

``AS_KEPT`` is the full profile as its kept records were trained (the grid knobs it changes,
``Profile.grid_changes``); the planned runs are the full profile's runs that it did not have.
Until they are kept, `make figs` lists them as missing with the command that trains them, and
the verdicts that need them are inconclusive.
"""
from __future__ import annotations

import statistics
import sys

from .records.deps import Deps
from .figures import CATALOG
from .figures.common import figure_runs
from .records.kept import KeptStore
from .records.profiles import get_profile
from .records.runs import Runner, describe

#: the full profile's grid knobs as the kept records were trained (before the protocol's runs)
AS_KEPT = {"fig5": {"scale_horizons": (), "scale_seeds": ()}, "fig4": {"momentum_lr_extend": ()},
           "grids": {"tuning_lr_extend": (("adan", (16.0,)), ("mars", (16.0,)))},
           "correctors": {"tau_optimizers": (), "corrector_optimizers": (), "attribution_optimizer": ""}}


def planned(profile: str = "full") -> list[tuple[str, dict, str]]:
    """[(figure, settings, key)] of the profile's runs the kept profile did not have (each once)."""
    p = get_profile(profile)
    before = get_profile(profile, grid_changes=AS_KEPT)
    runner = Runner(Deps(), None)
    old = {runner.key_of(s) for n in CATALOG if before.runs_figure(n) for s in figure_runs(CATALOG[n], before)}
    out, seen = [], set(old)
    for n in CATALOG:
        if not p.runs_figure(n):
            continue
        for s in figure_runs(CATALOG[n], p):
            k = runner.key_of(s)
            if k not in seen:
                seen.add(k)
                out.append((n, s, k))
    return out


def wall_s(settings: dict, store: KeptStore) -> float:
    """A run's CPU time predicted from the kept records: the mean wall_s of those of the same
    optimizer and model at the same steps, else at any steps scaled by steps."""
    same, other = [], []
    for k in store.keys():
        r = store.get(k)
        s = r["settings"]
        if s.get("optimizer") == settings["optimizer"] and s.get("config") == settings.get("config") \
                and r.get("wall_s"):
            (same if s.get("steps") == settings.get("steps") else other).append(
                r["wall_s"] * (1 if s.get("steps") == settings.get("steps") else settings["steps"] / s["steps"]))
    xs = same or other
    if not xs:   # an optimizer with no record yet: any optimizer's runs of the same model and steps
        xs = [store.get(k)["wall_s"] for k in store.keys() if store.get(k).get("wall_s")
              and store.get(k)["settings"].get("config") == settings.get("config")
              and store.get(k)["settings"].get("steps") == settings.get("steps")]
    return statistics.fmean(xs) if xs else float("nan")


def table(rows, store: KeptStore) -> list[str]:
    """Grouped by figure and setting (seeds folded): count and estimated CPU hours."""
    groups: dict = {}
    for fig, s, k in rows:
        if store.get(k) is not None:
            continue
        label = describe({**s, "seed": "*"})
        g = groups.setdefault((fig, label), [])
        g.append((s["seed"], wall_s(s, store)))
    L = ["| figure | run (seed *) | seeds | runs | est. CPU hours |", "|---|---|---|---|---|"]
    total_runs, total_h = 0, 0.0
    for (fig, label), g in groups.items():
        h = sum(w for _, w in g) / 3600
        total_runs, total_h = total_runs + len(g), total_h + h
        L.append(f"| {fig} | {label} | {', '.join(str(s) for s, _ in sorted(g))} | {len(g)} | {h:.2f} |")
    L.append(f"| total | | | {total_runs} | {total_h:.1f} |")
    return L


def main(argv=None) -> int:
    store = KeptStore()
    rows = planned()
    print("Runs the protocol asks for that the kept records do not hold yet (train with `python -m paper_figs "
          "--profile full --reuse-kept`, then `python -m paper_figs.keep`; CPU hours from the kept records' wall_s):")
    print("\n".join(table(rows, store)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

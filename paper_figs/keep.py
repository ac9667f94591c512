"""Promote a finished cache into kept records: ``python -m paper_figs.keep [--out figs_out]``.

After ``make figs PROFILE=full`` (or ``python -m paper_figs --profile full``) has trained
the full profile into ``OUT/cache/``, this writes one compact record per training run the
profile needs into ``paper_figs/kept/<key>.json`` (:mod:`paper_figs.kept`), with the run's
provenance, and lists the runs the cache does not have yet. ``--check N`` then retrains the
first steps of N sampled kept records and compares them with the kept logs
(:mod:`paper_figs.replay`). Commit the new records with the code that trained them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cache import Cache, config_hash
from .cli import HelpFormatter
from .kept import KEPT_DIR, KeptError, KeptStore, compact
from .profiles import PROFILES, get_profile


def profile_runs(profile_name: str) -> list[dict]:
    """Every run of every figure of the profile (deduplicated by key), as settings."""
    from .deps import Deps
    from .figures import CATALOG
    from .figures.common import figure_runs
    from .runs import full_config
    p = get_profile(profile_name)
    TrainConfig = Deps().TrainConfig
    out = {}
    for name, mod in CATALOG.items():
        if p.runs_figure(name):
            for s in figure_runs(mod, p):
                out.setdefault(config_hash(full_config(TrainConfig, s)), s)
    return [dict(s, _key=k) for k, s in out.items()]


def promote(cache_dir: Path, store: KeptStore, keys: list[str] | None) -> dict:
    """Write kept records for the training records of ``cache_dir`` (only ``keys`` if given).

    Returns {"new": [...], "updated": [...], "unchanged": [...], "absent": [...], "dirty": [...]}."""
    cache = Cache(cache_dir)
    if keys is None:
        keys = cache.keys()
    res = {k: [] for k in ("new", "updated", "unchanged", "absent", "dirty")}
    for key in keys:
        rec = cache.get(key)
        if rec is None or rec.get("kind") != "train":
            if rec is None:
                res["absent"].append(key)
            continue
        new = compact(rec)
        try:
            old = store.get(key)
        except KeptError:
            old = None
        if old == new:
            res["unchanged"].append(key)
            continue
        store.put(new)
        res["updated" if old else "new"].append(key)
        if str((new.get("provenance") or {}).get("commit", "")).endswith("+dirty"):
            res["dirty"].append(key)
    return res


def check(store: KeptStore, n: int, steps: int, log=print) -> int:
    """Replay ``n`` sampled kept records for ``steps`` steps; the number that do not match."""
    from .replay import compare_head, replay_head, sample
    recs = [store.get(k) for k in store.keys()]
    bad = 0
    for rec in sample(recs, n):
        diffs = compare_head(rec, replay_head(rec, steps), steps)
        bad += bool(diffs)
        log(f"  {rec['key']} {rec['config'].get('optimizer')} {rec['config'].get('config')}: "
            + ("matches its kept log" if not diffs else "DIFFERS: " + "; ".join(diffs[:3])))
    return bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.keep", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=HelpFormatter)
    ap.add_argument("--out", default="figs_out", help="the output directory whose cache/ to promote")
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES),
                    help="keep the runs this profile needs (with --all: every training record)")
    ap.add_argument("--all", action="store_true", help="keep every training record of the cache")
    ap.add_argument("--kept", default=str(KEPT_DIR), help="directory of the kept records")
    ap.add_argument("--prune", action="store_true",
                    help="remove the kept records that match no run of the profile (stale ones)")
    ap.add_argument("--check", type=int, default=0, metavar="N",
                    help="then replay N sampled kept records and compare them with their kept logs")
    ap.add_argument("--check-steps", type=int, default=20, help="steps replayed per checked record")
    a = ap.parse_args(argv)
    cache_dir = Path(a.out) / "cache"
    if a.check < 0 or a.check_steps < 1:
        ap.error("--check must be >= 0 and --check-steps >= 1")
    store = KeptStore(a.kept)
    if store.refuse_broken(lambda line: print(line, file=sys.stderr)):
        return 1
    if not cache_dir.is_dir():
        if a.check:   # a fresh clone: nothing to promote, replay the kept records against their own logs
            print(f"no cache in {cache_dir}: nothing to promote; replaying {a.check} kept record(s) "
                  f"for {a.check_steps} steps:")
            return 1 if check(store, a.check, a.check_steps) else 0
        ap.error(f"--out: {cache_dir} does not exist; train first: python -m paper_figs --profile {a.profile}")
    wanted = None if a.all else profile_runs(a.profile)
    res = promote(cache_dir, store, None if wanted is None else [s["_key"] for s in wanted])
    print(f"kept records in {store.root}: {len(res['new'])} new, {len(res['updated'])} updated, "
          f"{len(res['unchanged'])} unchanged")
    if res["dirty"]:
        print(f"warning: {len(res['dirty'])} record(s) were trained from uncommitted code (+dirty): "
              "commit the code and retrain them before committing the records")
    if wanted is not None and res["absent"]:
        from .runs import describe
        absent = set(res["absent"])
        print(f"{len(absent)} of the {a.profile} profile's {len(wanted)} runs are not in {cache_dir} yet "
              f"(train them: python -m paper_figs --profile {a.profile} --out {a.out}):")
        todo = [describe(s) for s in wanted if s["_key"] in absent]
        for line in todo[:20]:
            print(f"  {line}")
        if len(todo) > 20:
            print(f"  ... and {len(todo) - 20} more")
    if wanted is not None:
        stale = store.stale(s["_key"] for s in wanted)
        if stale and a.prune:
            for k in stale:
                store.path(k).unlink()
            print(f"removed {len(stale)} kept record(s) that match no run of the {a.profile} profile")
        elif stale:
            print(f"{len(stale)} kept record(s) match no run of the {a.profile} profile (stale? --prune removes them)")
    if a.check:
        print(f"replaying {a.check} kept record(s) for {a.check_steps} steps:")
        if check(store, a.check, a.check_steps):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

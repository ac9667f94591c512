"""Promote a finished cache into kept records: ``python -m paper_figs.keep [--out figs_out]``.

After ``make figs PROFILE=full`` (or ``python -m paper_figs --profile full``) has trained
the full profile into ``OUT/cache/``, this writes one compact record per training run the
profile needs into ``paper_figs/kept/<key>.json`` (:mod:`paper_figs.records.kept`), with the run's
provenance, and lists the runs the cache does not have yet. ``--check N`` then retrains N
sampled kept records to their end (``--check-steps S``: their first S steps) and compares
them with the kept logs (:mod:`paper_figs.replay`). ``--prune`` removes the records this
profile trained that no run of any profile needs any more, after asking (``--yes``: without);
another profile's records are never removed. Commit the new records with the code that
trained them.
"""
from __future__ import annotations

import argparse
import functools
import shlex
import sys
from pathlib import Path

from .records.cache import Cache
from .records.identity import run_key
from .cli import HelpFormatter
from .records.kept import KEPT_DIR, KeptError, KeptStore, compact
from .records.profiles import PROFILES, get_profile


def profile_runs(profile_name: str) -> list[dict]:
    """Every run of every figure of the profile (deduplicated by key), as settings; for the full
    and quick profiles, through every batch of the sequential plan (docs/plan.md), so that a
    plan run is kept as soon as it is trained and its record is never stale."""
    from .records.deps import Deps
    from .figures import CATALOG
    from .figures.common import figure_runs
    from .records.runs import full_config
    from .records.plan import BATCHES, through
    p = get_profile(profile_name)
    if p.name in ("full", "quick"):
        p = through(p, len(BATCHES))
    TrainConfig = Deps().TrainConfig
    out = {}
    for name, mod in CATALOG.items():
        if p.runs_figure(name):
            for s in figure_runs(mod, p):
                out.setdefault(run_key(full_config(TrainConfig, s)), s)
    return [dict(s, _key=k) for k, s in out.items()]


@functools.lru_cache(maxsize=None)
def wanted_keys(profile_name: str) -> frozenset:
    """The keys of every run of the profile (:func:`profile_runs`)."""
    return frozenset(s["_key"] for s in profile_runs(profile_name))


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


def check(store: KeptStore, n: int, steps: int | None = None, log=print) -> int:
    """Replay ``n`` sampled kept records (to their end; for ``steps`` steps when given) and
    compare them with their kept logs (:mod:`paper_figs.replay`); the number that do not match."""
    from .replay import compare_head, compare_log, largest_difference, replay, replay_head, sample
    recs = [store.get(k) for k in store.keys()]
    bad = 0
    for rec in sample(recs, n):
        if steps is None:
            rows = replay(rec)
            diffs, upto = compare_log(rec, rows), f"to its end (step {rec['config'].get('steps')})"
        else:
            rows = replay_head(rec, steps)
            diffs, upto = compare_head(rec, rows, steps), f"for {steps} steps"
        bad += bool(diffs)
        log(f"  {rec['key']} {rec['config'].get('optimizer')} {rec['config'].get('config')} {upto}: "
            + (f"matches its kept log (largest difference {largest_difference(rec, rows):.2g})" if not diffs
               else "DIFFERS: " + "; ".join(diffs[:3])))
    return bad


def record_profile(rec: dict) -> str | None:
    """The profile whose invocation trained a kept record (the ``--profile`` of its
    provenance command), or None when the command names none."""
    cmd = str((rec.get("provenance") or {}).get("command") or "")
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w == "--profile" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--profile="):
            return w.split("=", 1)[1]
    return None


def prunable(store: KeptStore, profile: str) -> tuple[list[str], list[str]]:
    """(keys ``--prune`` may remove, stale keys it leaves): a record is removed only when no
    run of any profile needs it *and* ``profile`` trained it (its provenance command), so a
    prune never deletes another profile's records."""
    unused = store.stale(set().union(*(wanted_keys(name) for name in PROFILES)))
    mine = [k for k in unused if record_profile(store.get(k)) == profile]
    return mine, [k for k in unused if k not in mine]


def ask(question: str) -> bool:
    """Ask ``question`` on the terminal; False (no) when stdin is not a terminal."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def prune(store: KeptStore, profile: str, yes: bool) -> int:
    """Remove the stale kept records of ``profile`` (:func:`prunable`) after asking (or with
    ``yes``); 0 when done or nothing to do, 1 when refused (nothing removed)."""
    from .records.runs import describe
    mine, others = prunable(store, profile)
    if others:
        print(f"{len(others)} stale kept record(s) were trained by another profile (or name none): left in place")
    if not mine:
        print(f"no kept record of the {profile} profile is stale: nothing to remove")
        return 0
    print(f"{len(mine)} kept record(s) of the {profile} profile match no run of any profile:")
    for k in mine[:20]:
        print(f"  {store.path(k).name}  {describe(store.get(k).get('settings') or {})}")
    if len(mine) > 20:
        print(f"  ... and {len(mine) - 20} more")
    if not (yes or ask(f"remove these {len(mine)} record(s) from {store.root}? [y/N] ")):
        print("nothing removed (pass --yes to remove them without asking)")
        return 1
    for k in mine:
        store.path(k).unlink()
    print(f"removed {len(mine)} kept record(s) of the {profile} profile that match no run of any profile")
    return 0


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
                    help="remove the kept records this profile trained that match no run of any profile "
                         "(stale ones; asks first)")
    ap.add_argument("--yes", action="store_true", help="with --prune: remove without asking")
    ap.add_argument("--check", type=int, default=0, metavar="N",
                    help="then replay N sampled kept records to their end and compare them with their kept logs")
    ap.add_argument("--check-steps", type=int, default=None, metavar="S",
                    help="replay only the first S steps of each checked record (default: to its end)")
    a = ap.parse_args(argv)
    cache_dir = Path(a.out) / "cache"
    if a.check < 0 or (a.check_steps is not None and a.check_steps < 1):
        ap.error("--check must be >= 0 and --check-steps >= 1")
    if a.prune and a.all:
        ap.error("--prune removes the stale records of one --profile; it does not combine with --all")
    store = KeptStore(a.kept)
    if store.refuse_broken(lambda line: print(line, file=sys.stderr)):
        return 1
    if not cache_dir.is_dir():
        if a.check:   # a fresh clone: nothing to promote, replay the kept records against their own logs
            print(f"no cache in {cache_dir}: nothing to promote; replaying {a.check} kept record(s) "
                  f"{_how_far(a.check_steps)}:")
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
        from .records.runs import describe
        absent = {k for k in res["absent"] if store.get(k) is None}   # kept already: nothing to train
        if absent:
            print(f"{len(absent)} of the {a.profile} profile's {len(wanted)} runs are neither in {cache_dir} nor "
                  f"kept yet (train them: python -m paper_figs --profile {a.profile} --reuse-kept --out {a.out}):")
        todo = [describe(s) for s in wanted if s["_key"] in absent]
        for line in todo[:20]:
            print(f"  {line}")
        if len(todo) > 20:
            print(f"  ... and {len(todo) - 20} more")
    rc = 0
    if wanted is not None:
        stale = store.stale(s["_key"] for s in wanted)
        if a.prune:
            rc = prune(store, a.profile, a.yes)
        elif stale:
            print(f"{len(stale)} kept record(s) match no run of the {a.profile} profile (kept by another profile, "
                  f"or stale? --prune removes the stale ones this profile trained, after asking)")
    if a.check:
        print(f"replaying {a.check} kept record(s) {_how_far(a.check_steps)}:")
        if check(store, a.check, a.check_steps):
            return 1
    return rc


def _how_far(steps: int | None) -> str:
    return "to their end" if steps is None else f"for {steps} steps"


if __name__ == "__main__":
    sys.exit(main())

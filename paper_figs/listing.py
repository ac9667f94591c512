"""``python -m paper_figs --list``: each figure, its runs (live or kept, and whether the kept
record exists), and the time estimate of what would be trained (:mod:`paper_figs.records.estimates`)."""
from __future__ import annotations

from typing import Collection, Sequence

from .records.cache import Cache
from .records.identity import run_key
from .records.deps import Deps
from .records.estimates import (RENDER_S, STARTUP_S, bf16_fast, external_seconds, fmt_seconds, run_seconds,
    total_seconds)
from .figures import CATALOG
from .records.kept import KeptError, KeptStore
from .pipeline import read_instead, select, split_runs
from .records.profiles import Profile
from .records.runs import KEEP_HINT, checkpoint_step, describe, full_config


def _kept_state(store: KeptStore, TrainConfig, s: dict) -> str:
    try:
        rec = store.get(run_key(full_config(TrainConfig, s)))
    except KeptError as e:
        return f"kept record broken: {e}"
    return "kept record present" if rec else "NO kept record"


def _cache_state(cache: Cache | None, key: str, steps: int, force: bool) -> tuple[str, int]:
    """How far ``cache`` has a live run: ("", 0) for nothing (or ``force``), ("cached", steps),
    or ("checkpoint at step S of N", S) for a killed attempt's checkpoint."""
    if cache is None or force:
        return "", 0
    if key in cache:
        return "cached", steps
    at = checkpoint_step(cache, key)
    return ("", 0) if at is None else (f"checkpoint at step {at} of {steps}", min(at, steps))


def list_profile(profile: Profile, only: Sequence[str] | None = None, force: bool = False,
                 kept: KeptStore | None = None, deps: Deps | None = None,
                 cache: Cache | None = None, reuse_kept: bool = False,
                 train_only: Collection[str] | None = None) -> str:
    """The text of ``--list``: per figure its runs not shared with an earlier figure, each
    marked live (trained by this profile) or kept, and the total estimate of the live part.
    With ``cache`` (``OUT/cache``), each live run also says whether it is cached or has a
    checkpoint to resume from, and a last line estimates what is left to train:
    ``remaining = total_seconds(live runs not cached, each with steps - checkpoint step)``.
    ``reuse_kept`` (``--reuse-kept``): a live run with a kept record is listed as kept;
    ``train_only`` (``--plan-only``): run keys, every other live run is listed as kept."""
    store = kept if kept is not None else KeptStore()
    TrainConfig = (deps or Deps()).TrainConfig
    fast = bf16_fast()
    lines = [f"profile {profile.name}: {profile.description}",
             f"  ({profile.jobs} training process(es); this CPU's bf16 matmul is "
             f"{'fast (avx512_bf16/AMX)' if fast else 'slow or unknown (AVX2)'}, so the Muon family is "
             f"charged that column of paper_figs/records/estimates.py's STEP_FACTOR)"]
    names = select(only)
    has = (lambda s: _kept_state(store, TrainConfig, s) == "kept record present") if reuse_kept else None
    split = split_runs(profile, names, force, read_instead=read_instead(
        has, train_only, lambda s: run_key(full_config(TrainConfig, s))))
    seen, all_live, n_kept, n_absent, ext = set(), [], 0, 0, []
    left, n_cached, n_mid = [], 0, 0
    wanted_keys = set()
    for name in names:
        if name not in split:
            lines.append(f"  {name}: not run in this profile")
            continue
        live, kept_runs = split[name]["live"], split[name]["kept"]
        if not live and not kept_runs:
            quick_mode = getattr(CATALOG[name], "quick_mode", None)   # a training figure whose grid is empty: none
            e = external_seconds(name, quick_mode(profile)) if quick_mode else None
            ext.append(e)
            lines.append(f"  {name}: no training (calls verify / theory / the benchmark), {fmt_seconds(e)}")
            continue
        new_live = [s for s in live if repr(sorted(s.items())) not in seen]
        seen.update(repr(sorted(s.items())) for s in live)
        new_kept = [s for s in kept_runs if repr(sorted(s.items())) not in seen]
        seen.update(repr(sorted(s.items())) for s in kept_runs)
        all_live += new_live
        wanted_keys.update(run_key(full_config(TrainConfig, s)) for s in live + kept_runs)
        states = [_kept_state(store, TrainConfig, s) for s in new_kept]
        absent = sum(st != "kept record present" for st in states)
        n_kept, n_absent = n_kept + len(new_kept), n_absent + absent
        shared = len(live) + len(kept_runs) - len(new_live) - len(new_kept)
        lines.append(f"  {name}: {len(live) + len(kept_runs)} run(s): {len(new_live)} new live "
                     f"({fmt_seconds(total_seconds(new_live, profile.jobs, fast))}), {len(new_kept)} new kept "
                     f"({len(new_kept) - absent} present, {absent} missing), {shared} shared with earlier figures")
        for s in new_live:
            state, done = _cache_state(cache, run_key(full_config(TrainConfig, s)), s["steps"], force)
            n_cached, n_mid = n_cached + (state == "cached"), n_mid + state.startswith("checkpoint")
            if state != "cached":
                left.append({**s, "steps": s["steps"] - done})
            lines.append(f"    live  {describe(s)}  [{fmt_seconds(run_seconds(s, fast))} serial"
                         + (f"; {state}" if state else "") + "]")
        lines += [f"    kept  {describe(s)}  [{st}]" for s, st in zip(new_kept, states)]
    train = total_seconds(all_live, profile.jobs, fast)
    known_ext = sum(e for e in ext if e is not None)
    overhead = STARTUP_S + RENDER_S * len(split)
    total = None if train is None else train + known_ext + overhead
    plus = " + the unmeasured external calls" if None in ext else ""
    lines.append(f"  live: {len(all_live)} run(s) to train, {fmt_seconds(train)}; external calls "
                 f"{fmt_seconds(known_ext)}" + (" + unmeasured ones" if None in ext else "")
                 + f"; start-up and drawing {fmt_seconds(overhead)}")
    lines.append(f"  kept: {n_kept} run(s) read from paper_figs/kept/ (or the cache), "
                 f"{n_kept - n_absent} present, {n_absent} missing"
                 + (f" ({KEEP_HINT})" if n_absent else ""))
    stale = store.stale(wanted_keys)
    if stale and not only:
        lines.append(f"  {len(stale)} kept record(s) in {store.root} match no run of this profile (kept by "
                     "another profile, or stale: the trainer's configuration changed since they were kept)")
    lines.append(f"  total estimate (nothing cached yet): {fmt_seconds(total)}{plus}")
    if cache is not None and not force:
        rest = total_seconds(left, profile.jobs, fast)
        rest = None if rest is None else rest + known_ext + overhead
        lines.append(f"  with {cache.root}: {n_cached} of {len(all_live)} live run(s) cached, {n_mid} to "
                     f"resume from a checkpoint; left to train: {len(left)} run(s), {fmt_seconds(rest)}{plus}")
    other = total_seconds(all_live, profile.jobs, not fast)
    if other is not None and total is not None and abs(other - train) > 1:
        lines.append(f"  (on a CPU whose bf16 matmul is {'slow (AVX2 only)' if fast else 'fast (avx512_bf16)'}: "
                     f"{fmt_seconds(other + known_ext + overhead)}{plus})")
    elif other is None and total is not None:
        lines.append(f"  (on a CPU whose bf16 matmul is {'slow (AVX2 only)' if fast else 'fast (avx512_bf16)'}: "
                     "unknown, some of these runs' step costs are unmeasured there: paper_figs/records/estimates.py)")
    return "\n".join(lines)

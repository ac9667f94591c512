"""Training runs: settings -> cache key -> a result trained live, cached, or kept.

A run is the keyword arguments of ``gpu_runs.recipe.TrainConfig``. Its cache key is
``run_key`` of ``TrainConfig(**settings).as_dict()`` minus the fields that only say where and
how often to write (``NOT_IN_KEY``): the hash of the run's identity (:mod:`paper_figs.records.identity`:
a preset momentum spelled out or omitted, with or without diagnostics, is one run), so trainer
defaults are part of the key: a changed
default reruns what it touches. ``as_dict`` is ``dataclasses.asdict`` with one rule: a
section of the run spec that is at its default is left out (today the parallelism section,
``TrainConfig.parallel``, whose default is the trainer's one process), so adding a section
leaves the keys of the runs that do not use it, and the kept records stored under them,
byte-identical; a run that sets it (a pipeline layout) has it in its key. Where a result
comes from (``Outcome.source``):

- ``live``:  trained by this invocation;
- ``cache``: trained earlier on this machine, read from ``OUT/cache/<key>.json``;
- ``kept``:  a record kept in the repository (:mod:`paper_figs.records.kept`), with its provenance.

Runs to train execute in this process (``jobs=1``) or in ``jobs`` spawned processes with
``threads`` torch threads each; every finished run is written to the cache at once, and a
run in flight checkpoints at every evaluation into ``OUT/runs/<key>/``, so a killed
invocation loses at most one evaluation interval per process and the next one resumes
("N of M runs cached, resuming ..., K of them from a checkpoint a killed attempt left").
"""
from __future__ import annotations

import dataclasses
import errno
import json
import shutil
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from . import stopping
from .cache import Cache, to_jsonable, write_atomically
from .deps import Deps, Unavailable
from .identity import covers, representative, run_key
from .kept import KeptError, KeptStore
from .provenance import commit, provenance

# where to write / whether to pick up a checkpoint / how often to checkpoint: same result
NOT_IN_KEY = ("out", "resume", "ckpt_every")
KEEP_HINT = ("no kept record; produce it with `make figs PROFILE=full` (or `python -m paper_figs "
             "--profile full`), then `python -m paper_figs.keep`")


@dataclass
class Outcome:
    """What became of one run: a cache ``record`` (``record["result"]`` holds
    ``final_val_loss`` and ``log``) or an ``error`` saying why there is none."""

    key: str | None
    settings: dict
    record: dict | None = None
    error: str | None = None
    trained: bool = False
    source: str = ""  # "live", "cache" or "kept" once there is a record
    kept: dict | None = None  # the kept record of a run that was also trained live or cached
    config: dict | None = None  # the full config its record has or will have (paper_figs.records.identity.covers)

    @property
    def ok(self) -> bool:
        return self.record is not None

    @property
    def final(self) -> float:
        v = self.record["result"]["final_val_loss"]
        return float("nan") if v is None else float(v)

    def diag_log(self) -> list[dict]:
        """The log rows ``gpu_runs.predict.summarize_record`` reads: the first logged row (its
        train loss bounds Delta_0), one row per theory-diagnostics record and the evaluations;
        from a cache record's full log or a kept record's ``head`` / ``diagnostics`` / ``log``."""
        res = self.record["result"]
        if "diagnostics" not in res:
            return list(res["log"])
        return res["head"][:1] + [{"step": d["step"], "diagnostics": d} for d in res["diagnostics"]] + list(res["log"])

    def curve(self, field: str = "val_loss") -> tuple[list, list]:
        """(steps, values) of the log entries that carry ``field``."""
        xs, ys = [], []
        for row in self.record["result"]["log"]:
            v = row.get(field)
            if v is not None:
                xs.append(row["step"])
                ys.append(float(v))
        return xs, ys


def full_config(TrainConfig: type, settings: Mapping[str, Any]) -> dict:
    """TrainConfig(**settings).as_dict() (sections at their default left out, module
    docstring; plain asdict / vars for a config type without it) without the where-to-write
    fields."""
    try:
        cfg = TrainConfig(**settings)
    except TypeError as e:
        raise ValueError(f"TrainConfig rejected settings {dict(settings)}: {e}") from e
    if hasattr(cfg, "as_dict"):
        full = cfg.as_dict()
    else:
        full = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(vars(cfg))
    for k in NOT_IN_KEY:
        full.pop(k, None)
    return full


def result_record(result: Any) -> dict:
    """JSON form of a TrainResult: ``{"final_val_loss", "log"}``."""
    rec = {"final_val_loss": result.final_val_loss, "log": list(result.log)}
    for k in ("n_params", "tokens_per_s"):  # optional TrainResult fields
        if hasattr(result, k):
            rec[k] = getattr(result, k)
    return to_jsonable(rec)


def describe(settings: Mapping[str, Any]) -> str:
    """Short human label of a run, e.g. ``adamw 2bw+ef tiny s=1500 seed0``."""
    mode = settings.get("mode", "sync")
    if mode == "pipedream":
        mode = f"pipedream(P={settings.get('stages')})"
    tags = [mode + ("+ef" if settings.get("ef") else "")]
    for k in ("tau", "corrector", "delay_profile", "delayed_groups", "sync_start", "sync_cooldown", "dc_asgd",
              "momentum", "lr", "diag_every"):
        if settings.get(k) and settings[k] not in ("none", "all", "uniform"):   # a delay field's "off"
            tags.append(f"{k}={settings[k]}")
    for k, v in sorted((settings.get("opt_kwargs") or {}).items()):
        tags.append(f"{k}={v}")
    return (f"{settings.get('optimizer')} {' '.join(tags)} {settings.get('config')} "
            f"steps={settings.get('steps')} seed{settings.get('seed', 0)}")


def run_dir(cache: Cache, key: str) -> Path:
    """Where a run in flight keeps its checkpoint: ``OUT/runs/<key>/`` (removed once cached)."""
    return cache.root.parent / "runs" / key


def launch_file(cache: Cache, key: str) -> Path:
    """Where a run in flight keeps the commit it was launched from: ``OUT/runs/<key>.launch.json``
    (beside its run directory; removed once the run is cached)."""
    return run_dir(cache, key).with_name(f"{key}.launch.json")


def launched(cache: Cache, key: str, resuming: bool) -> dict:
    """{"launch_commit", "launched_at"} of a run: read back when it resumes an earlier attempt
    that recorded them, else recorded now (this checkout's commit, written atomically), so a
    record carries the commit its run *started* from, not the one it finished under."""
    f = launch_file(cache, key)
    if resuming:
        try:
            got = json.loads(f.read_text())
            if isinstance(got, dict) and {"launch_commit", "launched_at"} <= set(got):
                return {k: got[k] for k in ("launch_commit", "launched_at")}
        except (OSError, json.JSONDecodeError):   # absent or damaged
            pass
        return {"launch_commit": "unknown (resumed an attempt that did not record it)",
                "launched_at": "unknown"}
    rec = {"launch_commit": commit(), "launched_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    f.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(f, json.dumps(rec) + "\n")
    return rec


def can_resume(cache: Cache, key: str) -> bool:
    """Has an earlier, killed attempt of this run left a checkpoint to resume from? (``ckpt.pt``
    or one of the numbered ones the trainer falls back to when the newest is damaged)"""
    d = run_dir(cache, key)
    return (d / "ckpt.pt").exists() or any(d.glob("ckpt_step*.pt"))


def checkpoint_step(cache: Cache, key: str) -> int | None:
    """The step a killed attempt's checkpoint holds (the last evaluated step of its
    ``log.jsonl``: checkpoints follow evaluations), or None without a checkpoint. 0 when the
    log cannot be read: the checkpoint exists but its step is unknown."""
    if not can_resume(cache, key):
        return None
    step = 0
    try:
        with open(run_dir(cache, key) / "log.jsonl") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and "val_loss" in rec and isinstance(rec.get("step"), int):
                    step = max(step, rec["step"])
    except OSError:
        return 0
    return step


def _train_one(deps: Deps, cache: Cache, key: str, settings: dict, full: dict,
               progress: bool, command: str, fresh: bool = False) -> float:
    """Train one run, checkpointing at every evaluation into :func:`run_dir` and resuming
    from a checkpoint a killed attempt left there (unless ``fresh``); cache the result and
    remove the run directory. ``out``, ``resume`` and ``ckpt_every`` are not in the key. A run
    directory without a checkpoint (a run stopped before its first one: its log holds the
    records of a few steps) is removed first: the run starts over, as the Ctrl-C line says,
    instead of being refused as "already holds a run" at every later invocation."""
    t0 = time.time()
    d = run_dir(cache, key)
    if (fresh or not can_resume(cache, key)) and d.exists():
        shutil.rmtree(d)
    where = {"out": str(d), "resume": can_resume(cache, key),
             "ckpt_every": max(1, int(full.get("eval_every") or 0) or int(full.get("steps", 1)))}
    launch = launched(cache, key, where["resume"])
    cfg = deps.TrainConfig(**{**settings, **where})
    result = deps.train(cfg, progress=progress)
    wall = time.time() - t0
    cache.put(key, {"kind": "train", "config": full, "settings": settings,
                    "result": result_record(result), "wall_s": wall,
                    "finished_at": time.strftime("%Y-%m-%d %H:%M:%S"),
                    "provenance": {**provenance(command), **launch}, "resumed": where["resume"]})
    shutil.rmtree(d, ignore_errors=True)
    launch_file(cache, key).unlink(missing_ok=True)
    return wall


class _Prefixed:
    """A stdout that prefixes each line with a run's label (workers print side by side)."""

    def __init__(self, stream, prefix: str):
        self.stream, self.prefix, self.at_start = stream, prefix, True

    def write(self, text: str) -> int:
        for part in text.splitlines(keepends=True):
            if self.at_start:
                self.stream.write(self.prefix)
            self.stream.write(part)
            self.at_start = part.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


#: the errors of a write that no later run would escape: no space, a disk quota, a failing or
#: read-only disk. The first one stops the whole job (issue 50): nothing after it can be written.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS})
_DISK_MARK = "disk failed: "


class DiskFailed(RuntimeError):
    """A run's write failed for want of space or a failing disk: the job stops here (its
    message is the one line the command prints)."""


def disk_error(e: BaseException) -> bool:
    """Is ``e`` a write that failed for a reason no later run would escape (:data:`DISK_ERRNOS`)?"""
    return isinstance(e, OSError) and e.errno in DISK_ERRNOS


def _worker(cache_root: str, key: str, settings: dict, full: dict, threads: int, command: str,
            fresh: bool, deps_factory: Callable[[], Deps] | None = None):
    """Process-pool entry: train one run, cache it, return (key, err, wall).

    ``deps_factory`` (a picklable module-level function; tests only) builds the worker's
    Deps; by default the real ones."""
    if threads:
        import torch
        torch.set_num_threads(threads)
    try:
        deps = deps_factory() if deps_factory else Deps()
        sys.stdout = _Prefixed(sys.__stdout__, f"  [{describe(settings)}] ")
        with stopping.training():   # the parent's SIGTERM (Ctrl-C) ends the run here, cleanly
            wall = _train_one(deps, Cache(cache_root), key, settings, full, True, command, fresh)
        return key, None, wall
    except Exception as e:  # reported, not cached: it reruns next time
        return key, (_DISK_MARK if disk_error(e) else "") + f"{type(e).__name__}: {e}", 0.0


class Runner:
    """Resolve, deduplicate and execute runs through a :class:`Cache` and the kept records.

    ``force`` retrains runs even when cached. ``log`` receives progress lines. ``kept``:
    the kept records (None: none). ``command`` goes into each trained run's provenance.
    ``trained`` counts runs trained by this runner (tests use it to check the cache).
    """

    def __init__(self, deps: Deps, cache: Cache, *, jobs: int = 1, threads: int = 0,
                 force: bool = False, progress: bool = True,
                 log: Callable[[str], None] | None = None,
                 worker_deps: Callable[[], Deps] | None = None,
                 kept: KeptStore | None = None, command: str = "python -m paper_figs"):
        if jobs < 1:
            raise ValueError(f"jobs: must be >= 1, got {jobs}")
        self.deps, self.cache, self.jobs, self.threads = deps, cache, jobs, threads
        self.force, self.progress, self.worker_deps = force, progress, worker_deps
        self.kept, self.command = kept, command
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.outcomes: dict[str, Outcome] = {}
        self.trained = 0

    def key_of(self, settings: Mapping[str, Any]) -> str:
        return run_key(full_config(self.deps.TrainConfig, settings))

    def _kept(self, key: str) -> tuple[dict | None, str | None]:
        """(kept record or None, why it cannot be used or None)."""
        if self.kept is None:
            return None, "no kept records in use"
        try:
            rec = self.kept.get(key)
        except KeptError as e:
            return None, str(e)
        return rec, None if rec else KEEP_HINT

    def run_all(self, settings_list: Iterable[Mapping[str, Any]], train: bool = True) -> list[Outcome]:
        """Outcomes of ``settings_list`` in order (one per entry; settings of one identity,
        :mod:`paper_figs.records.identity`, share one run: the one that asks for diagnostics).

        ``train=True``: a run not in the cache is trained (with ``force``: every run).
        ``train=False``: never trains; a run not in the cache comes from its kept record,
        else it is missing with the command that produces it (``force`` skips the cache)."""
        settings_list = [dict(s) for s in settings_list]
        resolved: list[Outcome] = []
        todo: dict[str, tuple[dict, dict]] = {}
        keyed, wanted = [], {}
        for s in settings_list:
            try:
                full = full_config(self.deps.TrainConfig, s)
                keyed.append((s, full, run_key(full)))
            except (Unavailable, ValueError) as e:
                keyed.append((s, None, str(e)))
        groups: dict[str, list] = {}
        for s, full, key in keyed:
            if full is not None:
                groups.setdefault(key, []).append((s, full))
        for key, group in groups.items():   # one training per identity: the one asking for diagnostics
            wanted[key] = group[representative([full for _, full in group])]
        for s, full, key in keyed:
            if full is None:
                resolved.append(Outcome(None, s, error=key))
                continue
            s_rep, full = wanted[key]
            prev = self.outcomes.get(key)
            if prev is not None and covers(prev.config or {}, full):
                resolved.append(prev)
                continue
            rec = None if self.force else self.cache.get(key)
            rec = rec if rec is not None and covers(rec.get("config", {}), full) else None
            out = Outcome(key, s_rep, record=rec, source="cache" if rec else "", config=full)
            kept, why = self._kept(key)
            if kept is not None and not covers(kept.get("config", {}), full):
                kept, why = None, f"the kept record has no diagnostics; {KEEP_HINT}"
            if rec is None and not train and prev is not None and prev.source in ("live", "cache"):
                # this invocation trained (or cached) the run without what this request needs (its
                # diagnostics): the request reads its kept twin, and the live outcome stays the
                # run's, so every other figure's table and the live-vs-kept check see the live run
                resolved.append(Outcome(key, s_rep, record=kept, source="kept" if kept else "", error=why,
                                        config=full))
                continue
            if rec is None and not train:
                out.record, out.source, out.error = kept, ("kept" if kept else ""), why
            else:
                out.kept = kept
            self.outcomes[key] = out
            resolved.append(out)
            if rec is None and train:
                todo[key] = (s_rep, full)
        if todo:
            try:
                self.deps.train  # resolve once: a missing trainer fails every run with one reason
            except Unavailable as e:
                for key in todo:
                    self.outcomes[key].error = str(e)
                todo = {}
        if train and settings_list:
            n_all = len({o.key for o in resolved})
            n_cached = sum(1 for o in {o.key: o for o in resolved}.values() if o.source == "cache")
            if todo:
                n_mid = 0 if self.force else sum(can_resume(self.cache, k) for k in todo)
                state = "resuming" if n_cached or n_mid else "starting"
                self.log(f"[runs] {n_cached} of {n_all} runs cached, {state}: {len(todo)} to train "
                         f"({self.jobs} process(es))"
                         + (f", {n_mid} of them from a checkpoint a killed attempt left" if n_mid else ""))
            elif n_cached == n_all:
                self.log(f"[runs] {n_cached} of {n_all} runs cached, nothing to train")
        if self.jobs == 1 or len(todo) == 1 or not (self.deps.real or self.worker_deps):
            self._serial(todo)
        else:
            self._parallel(todo)
        return resolved

    def _finish(self, key: str, err: str | None, wall: float, i: int, n: int, t0: float) -> None:
        out = self.outcomes[key]
        if err is None:
            out.record, out.trained, out.source = self.cache.get(key), True, "live"
            self.trained += 1
            if out.record is None:
                err = "trainer finished but its cache record could not be read back"
        out.error = err
        elapsed = time.time() - t0
        eta = elapsed / i * (n - i)
        status = f"final val {out.final:.4f} in {wall:.0f} s" if out.ok else f"FAILED: {err}"
        self.log(f"[{i}/{n}] {describe(out.settings)}: {status} "
                 f"(elapsed {elapsed:.0f} s, ~{eta:.0f} s left)")

    def _verb(self, key: str) -> str:
        if not self.force and can_resume(self.cache, key):
            return f"resuming (from the checkpoint in {run_dir(self.cache, key)})"
        return "training"

    def _serial(self, todo: dict) -> None:
        t0, n = time.time(), len(todo)
        for i, (key, (s, full)) in enumerate(todo.items(), 1):
            self.log(f"[{i}/{n}] {self._verb(key)} {describe(s)} (key {key})")
            try:
                wall, err = _train_one(self.deps, self.cache, key, s, full, self.progress, self.command,
                                       self.force), None
            except KeyboardInterrupt:
                raise self._interrupted(todo, [key]) from None
            except OSError as e:
                if disk_error(e):
                    raise DiskFailed(self._disk_line(describe(s), f"{type(e).__name__}: {e}")) from None
                wall, err = 0.0, f"{type(e).__name__}: {e}"
                self.log(traceback.format_exc(limit=3))
            except Unavailable as e:
                wall, err = 0.0, str(e)
            except Exception as e:
                wall, err = 0.0, f"{type(e).__name__}: {e}"
                self.log(traceback.format_exc(limit=3))
            self._finish(key, err, wall, i, n, t0)

    def _parallel(self, todo: dict) -> None:
        """Train ``todo`` in ``jobs`` spawned workers; on Ctrl-C stop them all at once
        (:mod:`paper_figs.records.stopping`) and raise :class:`paper_figs.records.stopping.RunsInterrupted`."""
        import multiprocessing as mp
        t0, n = time.time(), len(todo)
        ex = ProcessPoolExecutor(max_workers=self.jobs, mp_context=mp.get_context("spawn"),
                                 initializer=stopping.worker_signals)
        futs = {}
        try:
            for key, (s, full) in todo.items():
                self.log(f"[queued] {self._verb(key)} {describe(s)} (key {key})")
                futs[ex.submit(_worker, str(self.cache.root), key, s, full, self.threads,
                               self.command, self.force, self.worker_deps)] = key
            for i, fut in enumerate(as_completed(futs), 1):
                try:
                    key, err, wall = fut.result()
                except Exception as e:  # the worker process died
                    key, err, wall = futs[fut], f"worker crashed: {type(e).__name__}: {e}", 0.0
                if err and err.startswith(_DISK_MARK):   # stop every worker: nothing more can be written
                    stopping.terminate(list((getattr(ex, "_processes", None) or {}).values()))
                    raise DiskFailed(self._disk_line(describe(todo[key][0]), err[len(_DISK_MARK):]))
                self._finish(key, err, wall, i, n, t0)
        except KeyboardInterrupt:
            restore = stopping.ignoring_sigint()     # a second Ctrl-C must not cut the clean-up short
            try:
                running = [k for f, k in futs.items() if f.running()]
                # the workers go first; the pool then fails what was left (cancelling futures
                # ourselves races its management thread)
                stopping.terminate(list((getattr(ex, "_processes", None) or {}).values()))
                ex.shutdown(wait=True)
            finally:
                restore()
            # a run handed to a worker that had not begun it (no run directory yet) never started
            raise self._interrupted(todo, [k for k in running if run_dir(self.cache, k).exists()]) from None
        finally:
            ex.shutdown(wait=True)

    def _disk_line(self, run: str, what: str) -> str:
        """The one line of a job stopped by a failed write."""
        return (f"a write failed while training {run} ({what}); the job stopped there, every finished run is "
                f"cached: free space (or fix the disk), then run the same command")

    def _interrupted(self, todo: dict, running: list[str]) -> stopping.RunsInterrupted:
        """What became of ``todo`` when Ctrl-C came while ``running`` trained."""
        # finished: trained and read back, or (a worker that finished as the Ctrl-C came) in the
        # cache, which held none of ``todo`` when it started unless ``force``
        done = [k for k in todo if self.outcomes[k].trained or (not self.force and self.cache.get(k) is not None)]
        started = [k for k in running if k not in done]
        return stopping.RunsInterrupted(stopping.summary(
            len(done), len(todo), [(describe(todo[k][0]), stopping.checkpoint_step(run_dir(self.cache, k)))
                                   for k in started],
            len(todo) - len(done) - len(started)))

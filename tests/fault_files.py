"""What the fault-injection tests share (issue 50): a file whose first write fails half-way,
the test for "opened for writing", an in-place writer that plants a non-atomic write, the
temporary files a run leaves, and the wholeness check of one file of a run directory.

Used by tests/gpu_runs/test_fault_injection.py (the trainer),
tests/gpu_runs/test_pipeline_fault_injection.py (a 2-rank pipeline) and
tests/paper_figs/test_main_job_faults.py (the main job)."""
from __future__ import annotations

import builtins
import errno
import json
import os
from pathlib import Path
from typing import Callable

from gpu_runs import verified_files


class FaultyFile:
    """A file object whose first write takes half of its bytes, then raises OSError(``err``)."""

    def __init__(self, f, err: int):
        self._f, self._err = f, err

    def write(self, b):
        self._f.write(b[:len(b) // 2])
        self._f.flush()
        raise OSError(self._err, os.strerror(self._err))

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)


def writing(mode, update: bool = True) -> bool:
    """Whether ``open(..., mode)`` opens for writing; ``update=False`` leaves out "r+" modes
    (the main job opens "rb+" only to fsync a file already written)."""
    return isinstance(mode, str) and any(c in mode for c in ("wax+" if update else "wax"))


def fail_writes(mp, kind: str, strike: Callable[[], bool]) -> None:
    """Patch ``open`` and ``os.fdopen`` (with the MonkeyPatch ``mp``) so that the file opened
    for writing at which ``strike()`` first says yes takes half of its first write, then the
    disk is full (``kind`` "enospc") or fails ("eio"). A process's own stdout / stderr (file
    descriptors 0-2) are never struck."""
    err = errno.ENOSPC if kind == "enospc" else errno.EIO

    def opener(real):
        def f(file, mode="r", *a, **kw):
            h = real(file, mode, *a, **kw)
            ours = writing(mode) and not (isinstance(file, int) and file < 3)
            return FaultyFile(h, err) if ours and strike() else h
        return f
    mp.setattr(builtins, "open", opener(builtins.open))
    mp.setattr(os, "fdopen", opener(os.fdopen))


def in_place(path, write) -> str:
    """A writer that is not atomic (a planted fault for ``verified_files.atomic_write``):
    ``path`` opened for writing and written where it is; returns the sha256 of what it wrote."""
    with open(path, "wb") as f:
        w = verified_files._HashingWriter(f)
        write(w)
    return w.h.hexdigest()


def temps(out: Path, deep: bool = False) -> list[str]:
    """The temporary files (``.*.tmp``) under ``out``: its own folder, or every folder below it."""
    if not out.exists():
        return []
    found = out.rglob(".*.tmp") if deep else out.glob(".*.tmp")
    return sorted(str(p.relative_to(out)) for p in found)


def log_records(path: Path, drop: tuple[str, ...] = ("step_time",)) -> list[dict]:
    """A log.jsonl's records without the fields ``drop`` (timings: the only ones that differ
    between two runs of the same command)."""
    return [{k: v for k, v in json.loads(line).items() if k not in drop}
            for line in path.read_text().splitlines() if line.strip()]


def assert_whole(out: Path, name: str, ref_log: list, ref_config: dict, killed: bool,
                 read_log: Callable[[Path], list] = log_records) -> None:
    """The file ``name`` of the run directory ``out`` is whole: it exists; config.json is the
    run's (but for "out", the one field that names the place); result.json parses; log.jsonl
    is a prefix of the uninterrupted run's log; a checkpoint passes its sha256 check. The one
    exception: a kill between the renames of a checkpoint's sidecar and of the checkpoint
    leaves the old file with the new sidecar, which its check refuses (detected; a resume
    falls back to an older checkpoint)."""
    f = out / name
    assert f.exists(), f"{name} existed before the fault and is gone"
    try:
        if name == "config.json":
            drop = lambda c: {k: v for k, v in c.items() if k != "out"}
            assert drop(json.loads(f.read_text())) == drop(ref_config)
        elif name == "result.json":
            json.loads(f.read_text())
        elif name == "log.jsonl":
            log = read_log(f)
            assert log == ref_log[:len(log)], "log.jsonl is not a whole prefix of the run's log"
    except ValueError as e:
        raise AssertionError(f"{name} is not whole: {e}") from None
    if name.endswith(".pt"):
        why = verified_files.check(f)
        assert why is None or (killed and "does not match its sha256" in why), f"{name} fails its check: {why}"

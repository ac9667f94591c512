"""A run directory that never loses work: atomic checkpoints, the log, and safe resume.

Layout of ``--out DIR``: ``config.json`` (the run's TrainConfig), ``log.jsonl`` (one line
per logged step), ``ckpt.pt`` (model, optimizer + wrapper state, step, log and the
configuration it was made with), ``result.json`` (at the end).

Rules (each refused with a message that says what to do):

- a fresh run never overwrites a directory that already holds a run (``log.jsonl`` with
  content or ``ckpt.pt``): pass ``--resume`` or another ``--out``;
- ``--resume`` needs ``ckpt.pt``; without one it refuses (it never restarts from step 0 over
  the existing log);
- ``--resume`` compares the saved configuration with this one: every field that defines
  the trajectory (``IDENTITY`` = all fields but ``RESUME_SAFE``) must be equal; the fields
  that differ are listed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

#: fields that may change between a run and its resume (none changes the trajectory):
#: where to write, logging / checkpoint / evaluation / diagnostics cadence, the size of the
#: validation set, compilation
RESUME_SAFE = ("out", "resume", "ckpt_every", "log_every", "eval_every", "eval_batches", "diag_every",
               "diag_micro", "compile")


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (the message says what to do)."""


def save_checkpoint(path: Path, blob: dict) -> None:
    """torch.save to a temporary file, then os.replace (atomic: a kill never leaves half a file)."""
    tmp = path.with_suffix(".tmp")
    torch.save(blob, tmp)
    os.replace(tmp, path)


def write_log(path: Path, log: list) -> None:
    """The whole log, atomically (temporary file, then os.replace)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in log))
    os.replace(tmp, path)


def append_log(path: Path, rec: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")


def holds_run(out: Path) -> bool:
    """True when ``out`` already has a checkpoint or a non-empty log."""
    log = out / "log.jsonl"
    return (out / "ckpt.pt").exists() or (log.exists() and log.stat().st_size > 0)

#: TrainConfig fields added after runs were kept, with the value those runs computed with
ADDED_FIELDS = {"aux_groups": 1}


def config_differences(saved: dict, now: dict, safe=RESUME_SAFE) -> list[str]:
    """``"field: saved -> now"`` for every field outside ``safe`` whose value differs
    (a field present on one side only counts as different)."""
    keys = sorted((set(saved) | set(now)) - set(safe))
    missing = object()
    out = []
    for k in keys:
        a, b = saved.get(k, missing), now.get(k, missing)
        if a != b:
            show = lambda v: "(absent)" if v is missing else repr(v)
            out.append(f"{k}: {show(a)} -> {show(b)}")
    return out


def check_fresh(out: Path) -> None:
    """Refuse to start a new run over an existing one."""
    if holds_run(out):
        raise RunDirError(f"--out {out} already holds a run (ckpt.pt or log.jsonl); pass --resume to "
                          f"continue it, or choose another --out (nothing was overwritten)")


def load_for_resume(out: Path, config_now: dict, map_location=None) -> dict:
    """The checkpoint blob of ``out``, after checking it exists and was made by the same run."""
    ck = out / "ckpt.pt"
    if not ck.exists():
        log = out / "log.jsonl"
        what = (f"{log} has {sum(1 for _ in open(log))} records but no checkpoint was written "
                f"(the run had --ckpt-every 0 or was killed before its first checkpoint)"
                if log.exists() else f"{out} holds no run")
        raise RunDirError(f"--resume: no checkpoint {ck}: {what}. Start a fresh run with another "
                          f"--out (the existing files were left untouched)")
    blob = torch.load(ck, map_location=map_location, weights_only=True)
    saved = json.loads(blob["config"]) if "config" in blob else _config_json(out)
    if saved is not None:
        saved = {**ADDED_FIELDS, **saved}
        diff = config_differences(saved, config_now)
        if diff:
            raise RunDirError(f"--resume: {ck} was made by a different run; these fields differ "
                              f"(saved -> now): {'; '.join(diff)}. Only {', '.join(RESUME_SAFE)} "
                              f"may change on resume")
    return blob


def _config_json(out: Path) -> dict | None:
    f = out / "config.json"
    return json.loads(f.read_text()) if f.exists() else None

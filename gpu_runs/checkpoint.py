"""A run directory that never loses work: atomic checkpoints, the log, and safe resume.

Layout of ``--out DIR``: ``config.json`` (the run's TrainConfig), ``log.jsonl`` (one line
per logged step), ``ckpt.pt`` (model, optimizer + wrapper state, step, log and the
configuration it was made with), ``result.json`` (at the end).

Rules (each refused with a message that says what to do):

- a fresh run never overwrites a directory that already holds a run (``log.jsonl`` with
  content or ``ckpt.pt``): pass ``--resume`` or another ``--out``;
- ``--resume`` needs ``ckpt.pt``; without one it refuses (it never restarts from step 0 over
  the log of another run); a run of the same configuration that stopped before its first
  checkpoint (:func:`restartable`) is started again from step 0 by the same command or by
  ``--resume``;
- ``--resume`` compares the saved configuration with this one: every field that defines
  the trajectory (``IDENTITY`` = all fields but ``RESUME_SAFE``) must be equal; the fields
  that differ are listed. ``ns_dtype`` counts only where it can change a number (an
  optimizer of ``lmo.registry.NS_OPTIMIZERS`` running Newton-Schulz: :func:`ns_dtype_matters`),
  and an unresolved ``auto`` takes the recorded value (``gpu_runs.recipe.resumed``);
- one writer at a time (``gpu_runs.run_lock``: ``OUT/.lock`` holds the writer's pid).

Checkpoints: every save writes ``ckpt_step{k}.pt`` with its sha256 in ``ckpt_step{k}.pt.sha256``
(:mod:`gpu_runs.verified_files`: temporary files with unique names, fsync-ed, then
``os.replace``; the directory is fsync-ed too), then points ``ckpt.pt`` at it (a hard link, or
a copy where the file system has none, replaced atomically, with its own sidecar), and
removes all but the newest ``KEEP`` ``ckpt_step{k}.pt``. ``--resume`` reads the newest
``ckpt_step{k}.pt`` (``ckpt.pt`` only when there is none); when that file fails its sha256 check
(truncated, garbage, a flipped bit) or cannot be loaded, it falls back to the newest intact
one and says which files it skipped and why. A write that fails (a full disk) raises
:class:`gpu_runs.verified_files.NotWritten` naming the file and the cause, and leaves the
older checkpoints as they were.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from lmo.registry import NS_OPTIMIZERS

from gpu_runs import verified_files

#: the one list of run-spec fields that may change between a run and its resume, for the
#: trainer and the pipeline alike (none changes the trajectory): where to write, logging /
#: checkpoint / evaluation / diagnostics cadence, the size of the validation set, compilation,
#: and the pipeline's ``dp`` (its parallelism section flat: the same global batch split over
#: other replicas). The pipeline's process knobs (--timeout, --quiet, ...) are no part of a
#: run's identity, so they need no entry.
RESUME_SAFE = ("out", "resume", "ckpt_every", "log_every", "eval_every", "eval_batches", "diag_every",
               "diag_micro", "compile", "dp")


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (the message says what to do)."""


#: how many ``ckpt_step{k}.pt`` the trainer keeps (the newest; ``ckpt.pt`` is the newest of them)
KEEP = 3
CKPT = "ckpt.pt"


def _atomic_write(path: Path, write) -> None:
    """``write(file object)`` into ``path`` atomically (:func:`gpu_runs.verified_files.atomic_write`)."""
    verified_files.atomic_write(path, write)


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically (:func:`gpu_runs.verified_files.write_text`)."""
    verified_files.write_text(path, text)


def save_checkpoint(path: Path, blob: dict) -> str:
    """torch.save to a uniquely named temporary file, fsync, then os.replace, with the sha256
    sidecar ``<path>.sha256`` (:mod:`gpu_runs.verified_files`: a kill never leaves half a file,
    a damaged file is detected, a failed write replaces nothing). Returns the sha256."""
    return verified_files.save(path, blob)


def write_log(path: Path, log: list) -> None:
    """The whole log, atomically (temporary file, fsync, then os.replace)."""
    _atomic_write(Path(path), lambda f: f.write("".join(json.dumps(r) + "\n" for r in log).encode()))


def step_file(out: Path, step: int) -> Path:
    return Path(out) / f"ckpt_step{step}.pt"


def kept_steps(out: Path) -> list[int]:
    """The steps k of the ``ckpt_step{k}.pt`` in ``out``, ascending."""
    pre, suf = "ckpt_step", ".pt"
    names = (f.name[len(pre):-len(suf)] for f in Path(out).glob(f"{pre}*{suf}"))
    return sorted(int(n) for n in names if n.isdigit())


def save_run_checkpoint(out: Path, blob: dict, keep: int = KEEP) -> Path:
    """``ckpt_step{k}.pt`` (k = blob["step"]), then ``ckpt.pt`` pointing at it, then all but
    the newest ``keep`` ``ckpt_step*.pt`` removed (module docstring); returns ``ckpt.pt``."""
    out = Path(out)
    newest = step_file(out, int(blob["step"]))
    digest = save_checkpoint(newest, blob)
    verified_files.link_verified(newest, out / CKPT, digest)
    for k in kept_steps(out)[:-max(1, keep)]:
        verified_files.remove(step_file(out, k))
    return out / CKPT


def point_at(out: Path, f: Path) -> None:
    """``ckpt.pt`` made to point at the step file ``f`` a resume continues from (a run stopped
    between writing ``f`` and pointing ``ckpt.pt`` at it leaves ``ckpt.pt`` older); nothing
    when ``f`` is ``ckpt.pt`` itself."""
    out, f = Path(out), Path(f)
    if f.name != CKPT:
        verified_files.link_verified(f, out / CKPT, verified_files.file_sha256(f))


def append_log(path: Path, log: list) -> None:
    """The log ``log`` whose last record is new: rewritten whole, atomically (:func:`write_log`;
    an append could leave half a line on a full disk)."""
    write_log(path, log)


def holds_run(out: Path) -> bool:
    """True when ``out`` already has a checkpoint or a non-empty log."""
    log = out / "log.jsonl"
    return ((out / CKPT).exists() or bool(kept_steps(out))
            or (log.exists() and log.stat().st_size > 0))

#: TrainConfig fields added after runs were kept, with the value those runs computed with
ADDED_FIELDS = {"aux_groups": 1}


#: the run-spec field of the Newton-Schulz dtype ("auto" until the run resolves it)
NS_FIELD = "ns_dtype"


def ns_dtype_matters(config: dict) -> bool:
    """Can ``ns_dtype`` change a number of the run ``config``? Only for an optimizer of
    ``lmo.registry.NS_OPTIMIZERS`` that runs Newton-Schulz (not ``exact``: the SVD polar
    factor) at the run's dtype (no ``ns_dtype`` of its own in ``opt_kwargs``)."""
    kw = config.get("opt_kwargs") or {}
    return config.get("optimizer") in NS_OPTIMIZERS and not kw.get("exact") and NS_FIELD not in kw


def config_differences(saved: dict, now: dict, safe=RESUME_SAFE) -> list[str]:
    """``"field: saved -> now"`` for every field outside ``safe`` whose value differs
    (a field present on one side only counts as different). ``ns_dtype`` is skipped where
    it cannot change the run on either side (:func:`ns_dtype_matters`: AdamW, Lion, ...) and
    where ``now`` has it unresolved ("auto": the resumed run takes the recorded one). The
    comparison only: the run's records (config.json, paper_figs' cache keys) are unchanged."""
    keys = sorted((set(saved) | set(now)) - set(safe))
    if now.get(NS_FIELD) == "auto" or not (ns_dtype_matters(saved) or ns_dtype_matters(now)):
        keys = [k for k in keys if k != NS_FIELD]
    missing = object()
    out = []
    for k in keys:
        a, b = saved.get(k, missing), now.get(k, missing)
        if a != b:
            show = lambda v: "(absent)" if v is missing else repr(v)
            out.append(f"{k}: {show(a)} -> {show(b)}")
    return out


def restartable(out: Path, config_now: dict) -> bool:
    """True for a run that stopped before its first checkpoint (a kill, a full disk): ``out``
    holds a run (:func:`holds_run`) but no checkpoint and no ``result.json``, and its
    ``config.json`` is this configuration (no field outside ``RESUME_SAFE`` differs). The same
    command, or ``--resume``, then starts it again from step 0: nothing computed is lost,
    since a run is a function of its configuration."""
    out = Path(out)
    if not holds_run(out) or has_checkpoint(out) or (out / "result.json").exists():
        return False
    try:
        saved = _config_json(out)
    except (OSError, ValueError):
        return False
    return saved is not None and not config_differences({**ADDED_FIELDS, **saved}, config_now)


def check_fresh(out: Path) -> None:
    """Refuse to start a new run over an existing one."""
    if holds_run(out):
        raise RunDirError(f"--out {out} already holds a run (ckpt.pt or log.jsonl); pass --resume to "
                          f"continue it, or choose another --out (nothing was overwritten)")


def _candidates(out: Path) -> list[Path]:
    """The ``ckpt_step{k}.pt`` newest first, then ``ckpt.pt``: the order resume tries them.
    ``ckpt.pt`` points at the newest step file once that is complete, so a run stopped in
    between (Ctrl-C, a kill) has a newer step file than ``ckpt.pt``; ``ckpt.pt`` alone (made by
    ``python -m gpu_runs.pipeline.convert to-trainer``) is read when there is no step file."""
    steps = [step_file(out, k) for k in reversed(kept_steps(out))]
    return [p for p in [*steps, out / CKPT] if p.exists()]


def newest_intact(out: Path) -> tuple[Path, int] | None:
    """(``ckpt_step{k}.pt``, k) of the newest step file that passes its sha256 check (or has
    no sidecar: written before checksums), without loading it; None when there is none."""
    for k in reversed(kept_steps(Path(out))):
        f = step_file(out, k)
        try:
            if verified_files.check(f) in (None, verified_files.UNVERIFIED):
                return f, k
        except OSError:
            continue
    return None


def _as_named(out: Path, f: Path) -> Path:
    """``ckpt.pt`` when ``f`` is the file it points at (the usual case: the name users know),
    else ``f``."""
    ck = out / CKPT
    try:
        return ck if f != ck and ck.exists() and os.path.samefile(f, ck) else f
    except OSError:
        return f


def has_checkpoint(out: Path) -> bool:
    """True when ``out`` holds a checkpoint ``--resume`` could try (``ckpt.pt`` or ``ckpt_step{k}.pt``)."""
    return bool(_candidates(Path(out)))


def _load_complete(path: Path, map_location=None, note=None) -> dict:
    """The blob of ``path`` if it is an intact, complete trainer checkpoint (its sha256
    sidecar matches: :mod:`gpu_runs.verified_files`); ValueError saying why not. ``note(line)``
    hears of a file without a sidecar (written before checksums), which is loaded."""
    say = (lambda p: note(f"{p.name} has no checksum ({verified_files.sidecar(p).name}; written before "
                          f"checksums were added): resuming from it unverified")) if note else None
    try:
        blob = verified_files.load(path, map_location, unverified=say)
    except OSError as e:
        raise ValueError(f"{path.name}: {e.strerror or e}") from None
    except verified_files.Damaged as e:
        why = str(e)
        raise ValueError(why[len(path.name) + 2:] if why.startswith(f"{path.name}: ") else why) from None
    missing = [k for k in ("params", "opt", "step", "log") if not isinstance(blob, dict) or k not in blob]
    if missing:
        raise ValueError(f"not a trainer checkpoint (no {', '.join(missing)})")
    return blob


def find_resume(out: Path, config_now: dict, map_location=None, note=None) -> tuple[dict, Path, list[str]]:
    """(blob, its file, ``"file: why skipped"`` for every newer file that was damaged or
    unreadable): the newest intact checkpoint of ``out``, after checking it was made by the
    same run. ``note(line)``: told when that checkpoint has no checksum to verify."""
    out = Path(out)
    files = _candidates(out)
    if not files:
        ck = out / CKPT
        log = out / "log.jsonl"
        if any(out.glob("ckpt_stage*.pt")) or any(out.glob("ckpt_step*_stage*.pt")):
            raise RunDirError(f"--resume: {out} holds a pipeline run (ckpt_stage{{s}}.pt files), not a trainer's: "
                              f"continue it with python -m gpu_runs.pipeline.torchrun --nproc-per-node P -m gpu_runs.pipeline ... --resume "
                              f"(or convert it: python -m gpu_runs.pipeline.convert to-trainer {out})")
        what = (f"{log} has {sum(1 for _ in open(log))} records but no checkpoint was written "
                f"(the run had --ckpt-every 0 or was killed before its first checkpoint)"
                if log.exists() else f"{out} holds no run")
        raise RunDirError(f"--resume: no checkpoint {ck}: {what}. Start a fresh run with another "
                          f"--out (the existing files were left untouched)")
    skipped = []
    for f in files:
        try:
            blob = _load_complete(f, map_location, note)
        except ValueError as e:
            skipped.append(f"{f.name}: {e}")
            continue
        _check_same_run(out, f, blob, config_now)
        return blob, _as_named(out, f), skipped
    raise RunDirError(f"--resume: no complete checkpoint in {out} ({'; '.join(skipped)}). Start a fresh "
                      f"run with another --out (the existing files were left untouched)")


def saved_config(out: Path, blob: dict) -> dict | None:
    """The configuration the checkpoint ``blob`` of ``out`` was made with (its own record, else
    ``out/config.json``; None when neither exists), fields added since filled in (ADDED_FIELDS)."""
    saved = json.loads(blob["config"]) if "config" in blob else _config_json(Path(out))
    return None if saved is None else {**ADDED_FIELDS, **saved}


def _check_same_run(out: Path, ck: Path, blob: dict, config_now: dict) -> None:
    saved = saved_config(out, blob)
    if saved is not None:
        diff = config_differences(saved, config_now)
        if diff:
            raise RunDirError(f"--resume: {ck} was made by a different run; these fields differ "
                              f"(saved -> now): {'; '.join(diff)}. Only {', '.join(RESUME_SAFE)} "
                              f"may change on resume")


def load_for_resume(out: Path, config_now: dict, map_location=None) -> dict:
    """The blob of :func:`find_resume` (the newest complete checkpoint of the same run)."""
    return find_resume(out, config_now, map_location)[0]


def _config_json(out: Path) -> dict | None:
    f = out / "config.json"
    return json.loads(f.read_text()) if f.exists() else None

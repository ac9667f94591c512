"""One run's bookkeeping, shared by the trainer loop (:mod:`gpu_runs.train`) and the
pipeline's last stage (:mod:`gpu_runs.pipeline.worker`): the log record of a step, when a
periodic checkpoint is due, the run's ``log.jsonl`` and its progress lines.

- :func:`step_record`: ``step, train_loss, lr, tokens, step_time`` first, then what the
  caller adds (validation loss, diagnostics, routing, the pipeline's grad norm / layout).
- :func:`eval_due`: ``eval_every`` k: after every k-th step and after the last; 0: after
  the last step only.
- :func:`ckpt_due`: ``ckpt_every`` None: at every evaluation; 0: never; k: every k steps.
  (The pipeline also writes its final stage checkpoints after the run unless ``ckpt_every``
  is 0: its ``--resume`` of a finished run and its conversion to the trainer read them.)

The two options mean the same for the trainer and the pipeline: both call these.
- :class:`RunRecorder`: ``log.jsonl`` (a resumed run keeps the records of steps <= start,
  taken from its checkpoint or, without one, from the file) and the console line of a step
  when its ``due`` says so.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from gpu_runs import checkpoint


def step_record(step: int, train_loss: float, lr: float, tokens_per_step: int, step_time: float,
                **extra) -> dict:
    """The log record of step ``step`` (1-based: x_step has been created)."""
    return dict(step=step, train_loss=train_loss, lr=lr, tokens=step * tokens_per_step,
                step_time=step_time, **extra)


def eval_due(eval_every: int, step: int, steps: int) -> bool:
    """Is x_step evaluated (1-based ``step`` of ``steps``)? eval_every k: when k | step, and
    at the last step; 0: at the last step only."""
    return bool(eval_every and step % eval_every == 0) or step == steps


def ckpt_due(ckpt_every: int | None, step: int, is_eval: bool) -> bool:
    """ckpt_every None: at every evaluation; 0: never; k: every k steps."""
    if ckpt_every is None:
        return is_eval
    return bool(ckpt_every) and step % ckpt_every == 0


def ckpt_cadence(ckpt_every: int | None) -> str | None:
    """The periodic checkpoints' cadence in words; None when there are none (0)."""
    if ckpt_every is None:
        return "at every evaluation"
    return f"every {ckpt_every} steps" if ckpt_every else None


class RunRecorder:
    """``log.jsonl`` under ``out`` (None: no file) and the progress lines of one run.

    ``records``: the log so far of a resumed run (the trainer's checkpoint holds it); None
    takes the file's records of steps <= ``start`` (the pipeline's later ones are redone).
    The file is rewritten atomically with them, then appended one record at a time.
    ``say(line)`` prints; ``line(rec)`` formats a step's progress line, printed when
    ``due(step, force)`` (default: every step)."""

    def __init__(self, out: Path | None, start: int, records: list | None = None, *,
                 say: Callable[[str], None] | None = None, line: Callable[[dict], str] | None = None,
                 due: Callable[[int, bool], bool] | None = None):
        self.path = Path(out) / "log.jsonl" if out is not None else None
        if records is None:
            records = _kept_records(self.path, start) if self.path is not None else []
        self.records = list(records)
        if self.path is not None:
            checkpoint.write_log(self.path, self.records)
        self.say, self.line = say, line
        self.due = due or (lambda step, force: True)

    def record(self, rec: dict, *, keep: bool = True, force: bool = False) -> None:
        """Append ``rec`` to the log (``keep``), then print its progress line when due."""
        if keep:
            self.records.append(rec)
            if self.path is not None:
                checkpoint.append_log(self.path, self.records)
        if self.say is not None and self.line is not None and self.due(rec["step"], force):
            self.say(self.line(rec))


def _kept_records(path: Path, start: int) -> list:
    """The records of steps <= start in ``path`` (none for a fresh run or a missing file)."""
    if not start or not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()
            if line.strip() and json.loads(line)["step"] <= start]

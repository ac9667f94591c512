"""Retrain a kept run and compare it with its kept log: to its end, or its first steps.

A kept record (:mod:`paper_figs.records.kept`) stores the logged rows of its first ``HEAD_STEPS``
steps (train loss, lr, and the validation loss where one was evaluated), every evaluation
(step, validation and train loss, lr) and the final validation loss. :func:`replay` retrains
the same configuration with the real trainer (to its last step, or stopped after ``steps``)
and :func:`compare_log` lists every row that differs:

    first HEAD_STEPS steps:  |loss_new - loss_kept| <= ATOL,       |lr_new - lr_kept| <= 1e-9 lr_kept
    every later evaluation:  |loss_new - loss_kept| <= END_ATOL,   the same lr rule
    the final val loss:      |new - kept| <= END_ATOL

``ATOL`` = 2e-4 nats: the same machine reproduces a run bit for bit (the data order and the
initialisation are seeded), and 2e-4 leaves room for another CPU's float summation order
over 30 steps; a changed schedule, optimizer or model moves the loss by far more. Over a
whole run another CPU's rounding grows to a few thousandths, so the later rows are held to
``END_ATOL`` = :data:`paper_figs.statistics.protocol.TOLERANCE_UNMEASURED` (0.01 nats/byte, the
protocol's live-vs-kept tolerance where a regime's cross-machine spread is not measured); :func:`largest_difference` says how far
the replay actually was (0 on the machine that kept the record). A kept record that no
longer matches means the trainer changed since it was kept: retrain it.
"""
from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path

from .statistics.protocol import TOLERANCE_UNMEASURED

ATOL = 2e-4
END_ATOL = TOLERANCE_UNMEASURED
LR_RTOL = 1e-9


class _PrefixDone(Exception):
    """Raised inside the trainer once the steps to replay are done."""


@contextlib.contextmanager
def stop_after(n: int):
    """Stop ``gpu_runs.train.train`` when it asks for batch ``n`` (after ``n`` steps).

    The trainer draws every step's batch from ``gpu_runs.data.Batcher.batch(t)`` (its
    documented data order); this wraps that method for the duration of the block."""
    from gpu_runs.data import Batcher
    orig = Batcher.batch

    def batch(self, t, *a, **kw):
        if t >= n:
            raise _PrefixDone(t)
        return orig(self, t, *a, **kw)

    Batcher.batch = batch
    try:
        yield
    finally:
        Batcher.batch = orig


def replay_head(record: dict, steps: int | None = None, train=None, TrainConfig=None) -> list[dict]:
    """Retrain ``record``'s configuration for the steps of its ``head`` (at most ``steps``)
    and return the rows the trainer logged (it is stopped after those steps)."""
    head = record["result"].get("head") or []
    if not head:
        raise ValueError(f"record {record.get('key')}: no head rows to replay")
    n = max(r["step"] for r in head)
    if steps is not None:
        if steps < 1:
            raise ValueError(f"steps: must be >= 1, got {steps}")
        n = min(n, steps)
    return replay(record, n, train, TrainConfig)


def replay(record: dict, steps: int | None = None, train=None, TrainConfig=None) -> list[dict]:
    """Retrain ``record``'s configuration (to its last step; stopped after ``steps`` when
    given) in a temporary directory and return the rows the trainer logged."""
    if train is None or TrainConfig is None:
        from gpu_runs.recipe import TrainConfig as TC
        from gpu_runs.train import train as tr
        train, TrainConfig = train or tr, TrainConfig or TC
    if steps is not None and steps < 1:
        raise ValueError(f"steps: must be >= 1, got {steps}")
    with tempfile.TemporaryDirectory(prefix="paper_figs_replay_") as d:
        cfg = TrainConfig(**{**record["settings"], "out": d})
        try:
            with stop_after(steps) if steps is not None else contextlib.nullcontext():
                train(cfg, progress=False)
        except _PrefixDone:
            pass
        return [json.loads(ln) for ln in Path(d, "log.jsonl").read_text().splitlines() if ln.strip()]


def _row_diffs(kept_rows: list[dict], new: dict, atol: float) -> list[str]:
    bad = []
    for r in kept_rows:
        got = new.get(r["step"])
        if got is None:
            bad.append(f"step {r['step']}: not logged by the retrained run")
            continue
        for f in ("train_loss", "val_loss"):
            if r.get(f) is not None and not (got.get(f) is not None and abs(got[f] - r[f]) <= atol):
                bad.append(f"step {r['step']} {f}: kept {r[f]!r}, retrained {got.get(f)!r}")
        if r.get("lr") is not None and not abs(got.get("lr", float("nan")) - r["lr"]) <= LR_RTOL * abs(r["lr"]):
            bad.append(f"step {r['step']} lr: kept {r['lr']!r}, retrained {got.get('lr')!r}")
    return bad


def compare_head(record: dict, rows: list[dict], steps: int | None = None) -> list[str]:
    """Differences between ``record``'s head (up to ``steps``) and retrained ``rows``; [] if none."""
    kept = [r for r in record["result"]["head"] if steps is None or r["step"] <= steps]
    return _row_diffs(kept, {r["step"]: r for r in rows}, ATOL)


def compare_log(record: dict, rows: list[dict]) -> list[str]:
    """Differences between ``record`` and ``rows`` retrained to its end (module docstring):
    its head at ATOL, its later evaluations and its final val loss at END_ATOL; [] if none."""
    head = record["result"].get("head") or []
    last_head = max((r["step"] for r in head), default=0)
    later = [r for r in record["result"]["log"] if r["step"] > last_head]
    new = {r["step"]: r for r in rows}
    bad = _row_diffs(head, new, ATOL) + _row_diffs(later, new, END_ATOL)
    final, evals = record["result"].get("final_val_loss"), [r for r in rows if r.get("val_loss") is not None]
    if final is not None and not (evals and abs(evals[-1]["val_loss"] - final) <= END_ATOL):
        bad.append(f"final val loss: kept {final!r}, retrained {evals[-1]['val_loss'] if evals else None!r}")
    return bad


def largest_difference(record: dict, rows: list[dict]) -> float:
    """max |retrained - kept| over the losses of every kept row (head and evaluations) the
    retrained ``rows`` have."""
    new = {r["step"]: r for r in rows}
    kept = (record["result"].get("head") or []) + record["result"]["log"]
    diffs = [abs(new[r["step"]][f] - r[f]) for r in kept if r["step"] in new
             for f in ("train_loss", "val_loss") if r.get(f) is not None and new[r["step"]].get(f) is not None]
    return max(diffs, default=0.0)


PREFERRED = ("adamw", "muon")  # the headline pair: an elementwise and a Newton-Schulz optimizer


def sample(records: list[dict], n: int = 2) -> list[dict]:
    """A deterministic sample of ``n`` records to replay, distinct optimizers: AdamW and
    Muon first, the cheapest model config first, then by key."""
    def rank(r):
        opt = r["config"].get("optimizer")
        return (opt not in PREFERRED, PREFERRED.index(opt) if opt in PREFERRED else 0,
                r["config"].get("config") != "tiny", r["key"])
    order = sorted(records, key=rank)
    picked, seen = [], set()
    for r in order:
        opt = r["config"].get("optimizer")
        if opt not in seen:
            picked.append(r)
            seen.add(opt)
        if len(picked) == n:
            break
    return picked

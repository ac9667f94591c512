"""The theory's diagnostics for pipeline runs (``--diag-every N``), measured as the trainer measures them.

The trainer diagnoses step t (log record ``step = t + 1``) when t + 1 = 1 or N | t + 1, from
(x_t, state_t) and (x_{t+1}, state_{t+1}): ||d_t||, r_t = ||x_t - y_t|| and r_t / eta per
block, L_local, sigma, the momentum error (``gpu_runs.diagnostics``). In a pipeline these
live on P ranks. Each stage writes its block after k steps, for every k in
{t, t + 1 : t diagnosed} (the stage checkpoint of ``gpu_runs.pipeline.checkpoint``, taken at U(k - 1),
without any collective, so the no-flush 2BW stream is not disturbed), under ``RUN_DIR/diag/``.
After the run the last rank merges each pair into the trainer's format
(``pipeline.conversion.merge_stages``), calls the trainer's ``Diagnostics.measure`` on the full model
and writes the records into ``log.jsonl`` under ``diagnostics``, as the trainer does; the
snapshots are then removed. Because the pipeline's trajectory is the trainer's, so are the
numbers (tested against ``gpu_runs.train`` with the same ``--diag-every``), and
``gpu_runs.predict`` reads a pipeline run directory like a trainer one.

gpipe / 1f1b (sync) and 2bw of every delay shape (--ef, --sync-start / --sync-cooldown,
--dc-asgd, --tau, --corrector, --delay-profile, --delayed-groups: ``pipeline.conversion``),
``--model llama``. pipedream is refused, as ``to-trainer`` refuses it (its stash is per
microbatch, the trainer's history per parameter). Cost: two stage checkpoints on disk per
diagnosed step, and after the run the trainer's measurement (2 + ``--diag-micro``
forward/backward passes of the full model on one device) per diagnosed step.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

from lmo.base import load_state_dict
from lmo.registry import lr_at

from gpu_runs.data import Batcher, get_corpus
from gpu_runs.diagnostics import Diagnostics
from gpu_runs.model import Llama
from gpu_runs.pipeline.checkpoint import save_stage, stage_file
from gpu_runs.pipeline.conversion import merge_stages
from gpu_runs import recipe
from gpu_runs import verified_files
from gpu_runs.recipe import build_optimizer


def diagnosed_steps(steps: int, every: int, start: int = 0) -> list[int]:
    """Steps t in [start, steps) the trainer diagnoses: t + 1 == 1 or (t + 1) % every == 0."""
    if not every:
        return []
    return [t for t in range(start, steps) if t == 0 or (t + 1) % every == 0]


def snapshot_steps(steps: int, every: int, start: int = 0) -> set[int]:
    """k = t and t + 1 for each diagnosed t: the stage states the measurement needs."""
    return {k for t in diagnosed_steps(steps, every, start) for k in (t, t + 1)}


def diag_dir(out) -> Path:
    return Path(out) / "diag"


class Snapshots:
    """A stage's side: its checkpoint after k steps into RUN_DIR/diag for every k in
    ``snapshot_steps`` (at the start of the run, then after U(k - 1)); no collectives."""

    def __init__(self, out, rank: int, engine, job, start: int):
        self.rank, self.engine, self.job, self.start = rank, engine, job, start
        self.steps = snapshot_steps(job.run.steps, job.run.diag_every, start) if out is not None else set()
        self.dir = diag_dir(out) if out is not None else None
        if self.steps:
            self.dir.mkdir(parents=True, exist_ok=True)
            if start in self.steps:
                self.save(start)

    def save(self, k: int) -> None:
        save_stage(self.dir, self.rank, self.engine, k, self.job)

    def after(self, a) -> None:
        if a.kind == "U" and a.step >= self.start and a.step + 1 in self.steps:
            self.save(a.step + 1)


def check_args(job) -> None:
    """ValueError for --diag-every settings the pipeline cannot measure (after
    ``TrainConfig.validate``, which refuses a negative cadence)."""
    run = job.run
    if not run.diag_every:
        return
    if run.delay.stale_point:
        raise ValueError("--diag-every: not for pipedream (its per-microbatch stash has no trainer "
                         "state to measure; run gpu_runs.train --delay pipedream --diag-every N)")
    if job.opts.model != "llama":
        raise ValueError(f"--diag-every needs --model llama, got {job.opts.model!r}")
    if run.out is None:
        raise ValueError("--diag-every needs --out (the stages' snapshots and the log go there)")
    if run.diag_micro < 2:
        raise ValueError(f"--diag-micro must be >= 2 (sigma needs two batches), got {run.diag_micro}")


def measure(out, run, P: int, device: str = "cpu", progress: bool = True) -> list[dict]:
    """The trainer's diagnostics records for every diagnosed step with both snapshots in
    ``RUN_DIR/diag`` (after ``--resume`` also those a crashed run left); written into
    ``log.jsonl``; the snapshots are removed afterwards."""
    d = diag_dir(out)
    steps = [t for t in diagnosed_steps(run.steps, run.diag_every)
             if all(stage_file(d, s, k).exists() for s in range(P) for k in (t, t + 1))]
    recs = []
    if steps:
        dev = torch.device(device)
        tc, x0, _, _ = merge_stages(d, steps[0])
        corpus = get_corpus(tc.data)
        # the trainer's model (an MoE's aux_groups = M: the objective the pipeline trained)
        model = Llama(recipe.model_config(tc, corpus.vocab_size), seed=tc.seed).to(dev)
        batcher = Batcher(corpus.train, tc.batch_size, tc.seq_len, tc.seed, device=dev)
        opt, _, _ = build_optimizer(tc, x0)
        diag = Diagnostics(tc.optimizer, x0, batcher, run.diag_micro, amp=dev.type == "cuda")
        template = opt.init({k: v.to(dev) for k, v in x0.items()})

        def state_at(k):
            _, x, flat, _ = merge_stages(d, k)
            return {n: v.to(dev) for n, v in x.items()}, load_state_dict(template, {n: v.to(dev) for n, v in flat.items()})

        for i, t in enumerate(steps):
            (x_t, s_t), (x_t1, s_t1) = state_at(t), state_at(t + 1)
            rec = diag.measure(model, t, x_t, x_t1, None, s_t1, opt, lr_at(opt, t), s_t)
            recs.append(rec)
            if progress:
                print(f"[pipeline diagnostics] step {t + 1} ({i + 1}/{len(steps)}): r/eta "
                      f"{rec['r_over_eta']:.3f}, L_local {rec['L_local']:.3g}, sigma {rec['sigma']:.3g}", flush=True)
    write_into_log(Path(out) / "log.jsonl", recs)
    shutil.rmtree(d, ignore_errors=True)
    return recs


def write_into_log(path: Path, recs: list[dict]) -> None:
    """Attach each record to the log line of its ``step`` (atomic rewrite)."""
    if not recs or not path.exists():
        return
    by = {r["step"]: r for r in recs}
    lines = []
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row["step"] in by:
                row["diagnostics"] = by[row["step"]]
            lines.append(json.dumps(row))
    verified_files.write_text(path, "\n".join(lines) + "\n")

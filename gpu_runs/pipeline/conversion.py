"""The pipeline's stage checkpoints and the trainer's single ``ckpt.pt``, one into the other
(:func:`to_trainer`, :func:`from_trainer`; the command is :mod:`gpu_runs.pipeline.convert`;
the stage format is :mod:`gpu_runs.pipeline.checkpoint`'s).

Trainer format (``gpu_runs.train``): ``params`` (the full x_k), ``opt`` (its optimizer's
state_dict), ``history`` ({} outside pipedream), ``step`` = k (the data position:
``Batcher.batch(t)`` depends on t only) and ``log`` (JSON). A stage checkpoint holds the
trainer's state restricted to the stage's block, under other keys: the trainer's base
optimizer sits inside ``chain(clip_by_global_norm, base)`` (state path ``inner/1/`` in its
chain; no chain when grad_clip = 0), the stage's is bare (the engine clips), and both sit in
the same delay wrapper (``Delay.wrap``: the one-step queue, EF's buffers, a longer queue, a
corrector's state, per-block delays of a profile or a group). :func:`stage_key_map` pairs
the two state_dicts of one block entry by entry: both optimizers are built over the block's
parameters (the stage's as ``gpu_runs.pipeline.worker`` builds it, the trainer's as
``gpu_runs.recipe.build_optimizer`` does), their state_dicts list the same entries in the
same order (the clip's state is empty), and each pair must differ by the chain's ``inner/1/``
alone. Per-parameter entries belong to the stage owning the parameter; the scalar step
counters are equal on every stage. Conversion covers gpipe / 1f1b (the trainer's delay sync) and
2bw with every delay shape (--ef, --sync-start / --sync-cooldown, --dc-asgd, --tau,
--corrector, --delay-profile, --delayed-groups), --model llama; not pipedream (its stash is
per microbatch, the trainer's history per parameter).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

from lmo.base import state_dict

from gpu_runs.checkpoint import RESUME_SAFE, save_checkpoint
from gpu_runs.delay_fields import delay_of_json
from gpu_runs.parallelism import DEFAULT_SCHEDULE
from gpu_runs.pipeline.args import DESTS, SHARED, Job, build_parser, run_spec
from gpu_runs.pipeline.checkpoint import saved_run_job, load, settle_ns_dtype, spec_record, stage_file
from gpu_runs.pipeline.delay import wrap_stage
from gpu_runs.pipeline.llama import llama_problem
from gpu_runs.pipeline.stage_module import StageModule, split_layers
from gpu_runs.recipe import base_optimizer, build_optimizer, resolve_device

FIELDS = ("step", "train_loss", "lr", "tokens", "step_time", "val_loss", "routing")  # the trainer's record fields


def stage_key_map(run, base, own: dict, stage: int, P: int) -> dict:
    """{stage state_dict key: trainer state_dict key} for one stage's block ``own``: the entries
    of the stage's optimizer (``pipeline.delay.wrap_stage`` around ``base``, as the worker builds it)
    and of the trainer's ``build_optimizer(run, own)``, paired in
    order; ValueError unless they are as many and each pair differs by the clip chain's
    ``inner/1/`` alone (module docstring)."""
    stage_keys = list(state_dict(wrap_stage(run.delay, run.steps, base, own, stage, P)[0].init(own)))
    trainer_keys = list(state_dict(build_optimizer(run, own)[0].init(own)))
    chain = "inner/1/" if run.grad_clip else ""
    if len(stage_keys) != len(trainer_keys) or any(t.replace(chain, "", 1) != s
                                                   for s, t in zip(stage_keys, trainer_keys)):
        raise ValueError(f"stage {stage}: the stage's and the trainer's optimizer state differ beyond the clip "
                         f"chain ({stage_keys[:3]} vs {trainer_keys[:3]})")
    return dict(zip(stage_keys, trainer_keys))


def merge_stages(run_dir, step: int | None = None):
    """(TrainConfig, x_k, trainer optimizer state_dict, k) from the stage checkpoints of
    RUN_DIR after ``step`` steps (default the final ones); ValueError when they do not fit."""
    run_dir = Path(run_dir)
    ck0 = load(stage_file(run_dir, 0, step))
    P = int(ck0["stages"])
    job = saved_run_job(run_dir, ck0, P)
    if job.run.delay.stale_point:
        raise ValueError("to-trainer: pipedream checkpoints are not converted (the trainer's "
                         "history is per parameter, the stages' stash per microbatch)")
    cks = [ck0] + [load(stage_file(run_dir, s, step)) for s in range(1, P)]
    if job.opts.model != "llama":
        raise ValueError(f"to-trainer: --model llama only, got {job.opts.model!r}")
    k = int(ck0["step"])
    if any(int(c["step"]) != k for c in cks):
        raise ValueError(f"to-trainer: stage checkpoints at different steps {[c['step'] for c in cks]}")
    tc = job.run
    params, opt = {}, {}
    for s, c in enumerate(cks):
        params.update(c["params"])
        to_tr = stage_key_map(tc, base_optimizer(tc, c["params"])[0], c["params"], s, P)
        for key, v in c["opt_state"].items():
            if key not in to_tr:
                raise ValueError(f"to-trainer: stage {s}'s optimizer state has {key!r}, which this run's has not")
            tk = to_tr[key]
            if tk in opt and v.numel() == 1 and not torch.equal(opt[tk], v):
                raise ValueError(f"to-trainer: stages disagree on {tk}: {opt[tk]} vs {v}")
            opt[tk] = v
    want = state_dict(build_optimizer(tc, params)[0].init(params))
    if set(want) != set(opt):
        extra, missing = sorted(set(opt) - set(want)), sorted(set(want) - set(opt))
        raise ValueError(f"to-trainer: optimizer keys differ (extra {extra[:3]}, missing {missing[:3]})")
    return tc, params, opt, k
def to_trainer(run_dir, out=None, step: int | None = None) -> Path:
    """Merge the stage checkpoints of RUN_DIR (after ``step`` steps; default the final
    ones) into the trainer's ``ckpt.pt``; returns its path (default RUN_DIR/ckpt.pt)."""
    run_dir = Path(run_dir)
    _, params, opt, k = merge_stages(run_dir, step)
    log = []
    if (run_dir / "log.jsonl").exists():
        for line in open(run_dir / "log.jsonl"):
            r = json.loads(line)
            if r["step"] <= k:
                log.append({f: r[f] for f in FIELDS if f in r})
    out = Path(out) if out else run_dir / "ckpt.pt"
    out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(out, dict(params=params, opt=opt, history={}, step=k, log=json.dumps(log)))
    return out


def from_trainer(train_dir, stages: int, out_dir, microbatches: int | None = None,
                 schedule: str | None = None) -> Path:
    """Split TRAIN_DIR/ckpt.pt (delay sync, 2bw or ef, with its config.json) into the stage
    checkpoints ``ckpt_stage{s}.pt`` that ``gpu_runs.pipeline --resume OUT_DIR`` reads."""

    train_dir, out_dir = Path(train_dir), Path(out_dir)
    cfg = json.loads((train_dir / "config.json").read_text())
    delay = delay_of_json(cfg)
    if delay.stale_point:
        raise ValueError(f"from-trainer: delay {delay.kind!r} is not converted (sync, 2bw or ef only)")
    blob = load(train_dir / "ckpt.pt")
    schedule = schedule or DEFAULT_SCHEDULE[delay.kind]
    args = build_parser().parse_args(["--schedule", schedule, "--microbatches", str(microbatches or stages)])
    # the trainer's recorded values of the pipeline's run-spec options that shape the trajectory
    # (the resume-safe cadences and the device stay this command's defaults)
    for name in SHARED:
        if name in cfg and name not in RESUME_SAFE and name != "device":
            setattr(args, DESTS.get(name, name), cfg[name])
    args.device = resolve_device(args.device)
    run = settle_ns_dtype(Job(run_spec(args, stages), args)).run
    prob = llama_problem(run)
    model = prob.model
    out_dir.mkdir(parents=True, exist_ok=True)
    ranges = split_layers(len(model.layers), stages)
    for s in range(stages):
        module = StageModule(model, ranges[s], s == 0, s == stages - 1)
        # a tied head is the first stage's (the trainer's params hold embed.weight only)
        own = {k: blob["params"][k] for k, _ in module.named_parameters() if k in blob["params"]}
        to_tr = stage_key_map(run, prob.build_opt(own), own, s, stages)
        missing = [t for t in to_tr.values() if t not in blob["opt"]]
        if missing:
            raise ValueError(f"from-trainer: {train_dir / 'ckpt.pt'} lacks {missing[:3]} of this run's optimizer state")
        opt_state = {key: blob["opt"][tk] for key, tk in to_tr.items()}
        save_checkpoint(stage_file(out_dir, s), dict(
            step=int(blob["step"]), stage=s, schedule=schedule, stages=stages, microbatches=run.parallel.microbatches,
            ns_dtype=run.ns_dtype, params=own, opt_state=opt_state, **spec_record(Job(run, args))))
    return out_dir

"""Options of ``python -m gpu_runs.pipeline`` (``build_parser``) and the one place they
become a run: :func:`run_spec` parses them into the :class:`gpu_runs.recipe.TrainConfig` the
trainer runs (the one run spec; its parallelism section, ``TrainConfig.parallel``, holds
``--schedule``, ``--microbatches``, ``--dp``, and P = ``TrainConfig.stages``). A :class:`Job`
carries that run together with the command line, of which the pipeline reads only the
process knobs (:data:`PROCESS`). ``TrainConfig.validate`` checks the run, for the trainer
and the pipeline alike; :func:`check_options` checks only what is not part of the run (the
process knobs, and that ``--data`` exists); the run-directory checks (resume, an existing
run) are ``gpu_runs.pipeline.checkpoint.check_run_dir``."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from lmo.variants import KINDS, Delay

from gpu_runs.cli import add_config_options, option_fields, show_defaults
from gpu_runs.delay_fields import options_of_kind
from gpu_runs.model import CONFIGS
from gpu_runs.parallelism import DEFAULT_SCHEDULE, KIND_OF_SCHEDULE, SCHEDULES, Parallelism, check_schedule_runs
from gpu_runs.recipe import TrainConfig, check_device_here, resolve_device


#: TrainConfig fields that are pipeline options, generated with the fields' defaults
#: (gpu_runs.cli.add_config_options): a pipeline run and a trainer run with the same
#: options are the same run
SHARED = ("config", "optimizer", "lr", "momentum", "weight_decay", "grad_clip", "ef", "sync_start",
          "sync_cooldown", "dc_asgd", "warmup_frac", "final_frac", "steps", "batch_size", "seq_len", "seed",
          "data", "eval_every", "eval_batches", "device", "out", "ckpt_every", "diag_every", "diag_micro",
          "ns_dtype", "tau", "corrector", "delay_profile", "delayed_groups")
#: the option's argparse dest where it is not the field's name (``--clip`` / ``--grad-clip``)
DESTS = {"grad_clip": "clip"}
#: the pipeline's own wording where its meaning is narrower than the trainer's
HELP = {
    "ef": "error feedback x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}: the same as --delay ef (2bw only)",
    "sync_start": "2bw only: the first K steps synchronous (flushed 1F1B), as the trainer's",
    "sync_cooldown": "2bw only: the last K steps synchronous; the switch flushes the pending update",
    "dc_asgd": "2bw only: DC-ASGD lambda, g + lambda g*g*(y_t - x_t) before clipping, per stage",
    "corrector": "2bw only: a delay corrector of lmo.CORRECTORS, as the trainer's (weight_prediction / "
                 "nesterov_lookahead: forward at the gradient point z_t, a tied head's too; dc_asgd_adaptive / "
                 "dc_asgd_ema: the correction before the clip, as the trainer's)",
    "delay_profile": "2bw only: uniform, or pipedream (stage s delayed by P - 1 - s; the last stage's delay 0: "
                     "its update right before the next step)",
    "delayed_groups": "2bw only: all, matrix or other (the rest synchronous, delay 0: flushed steps)",
    "batch_size": "rows per optimizer step (split into M microbatches)",
    "eval_every": "validation loss on x_{t+1} after every k-th step and after the last (0: after the last "
                  "step only), as the trainer's",
    "device": "cpu, cuda (one GPU per rank, NCCL) or auto (cuda if available)",
    "out": "directory for log.jsonl and per-stage checkpoints",
    "ckpt_every": "checkpoint every k steps into OUT/ckpt_step{k}_stage{s}.pt and at the end into "
                  "OUT/ckpt_stage{s}.pt (None: at every evaluation, keeping the newest 3 sets; 0: never, "
                  "as the trainer's: such a run cannot be resumed)",
    "diag_every": "the trainer's theory diagnostics at its cadence, measured after the run from per-stage "
                  "snapshots (gpu_runs.pipeline.diagnostics; sync / 2bw, llama; 0: off)",
    "lr": "peak lr (None: lmo.presets.DEFAULT_LR[optimizer]; toy model: 0.05)",
    "momentum": "primary momentum beta (None: the optimizer's preset; toy model: 0.9)",
}


#: the launcher every command line of the package names: torchrun, silent after a rank's own one-line
#: refusal or interruption (``python -m gpu_runs.pipeline.torchrun``; plain torchrun prints its
#: ChildFailedError traceback after any rank's non-zero exit, which no exit status of a rank avoids)
LAUNCHER = ("python", "-m", "gpu_runs.pipeline.torchrun")
#: how the package spells a pipeline command (``--help``, refusals, the resume line)
PROG = " ".join(LAUNCHER) + " --nproc-per-node P -m gpu_runs.pipeline"


#: the value of a bare ``--resume``: the run in ``--out`` (check_options replaces it)
RESUME_OUT = "(--out)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Pipeline-parallel LM training, one process per stage (P = WORLD_SIZE). "
                    "--delay is the trainer's: sync runs on --schedule gpipe or 1f1b (default), 2bw and ef "
                    "(with --sync-start, --sync-cooldown, --dc-asgd) on 2bw, pipedream on pipedream (its "
                    "--stages P is the process count), step for step (module docstring: index alignment).")
    p.add_argument("--delay", choices=KINDS, default=None,
                   help="the delay, as the trainer's --delay (lmo.variants.Delay); default: the one --schedule runs")
    p.add_argument("--schedule", choices=SCHEDULES, default=None,
                   help="the schedule: one that runs --delay (sync: gpipe, 1f1b; 2bw, ef: 2bw; pipedream: "
                        "pipedream); default: the delay's (sync: 1f1b); one of --delay / --schedule is needed")
    p.add_argument("--microbatches", "-M", type=int, default=None,
                   help="microbatches per step M (default P); 2bw needs M >= P; ignored by pipedream")
    p.add_argument("--dp", type=int, default=1,
                   help="data-parallel replicas D: WORLD_SIZE = D x P processes, a (dp, pp) device mesh; "
                        "each replica gets batch_size / D rows of every step (gpu_runs.pipeline.data_parallel)")
    p.add_argument("--model", choices=("llama", "toy"), default="llama",
                   help="llama: gpu_runs.model with --config; toy: gpu_runs.pipeline.toy.ToyLM (tests, bench)")
    add_config_options(p, SHARED, flags={"grad_clip": ("--clip", "--grad-clip")}, dests=DESTS,
                       helps=HELP)
    p.add_argument("--resume", nargs="?", const=RESUME_OUT, default=None, metavar="DIR",
                   help="continue the run in --out, as the trainer's --resume (or the run in DIR, "
                        "writing to --out; options compared): from its final ckpt_stage{s}.pt files, else "
                        "from its newest complete ckpt_step{k}_stage{s}.pt set (a killed run; unreadable "
                        "files are skipped, saying so), up to --steps (gpu_runs.pipeline.checkpoint "
                        "converts the trainer's ckpt.pt)")
    p.set_defaults(resume_set=None)
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds without progress before a rank gives up (watchdog and gloo timeout)")
    p.add_argument("--toy-layers", type=int, default=4)
    p.add_argument("--toy-dim", type=int, default=16)
    p.add_argument("--toy-tied", action="store_true", help="toy model with the head tied to the embedding")
    p.add_argument("--fault", default=None,
                   help="testing: RANK:STEP:KIND with KIND in raise|exit|hang; that rank fails "
                        "at the first forward of STEP")
    p.add_argument("--synthetic-ms", default=None, metavar="F,B",
                   help="benchmark: sleep F ms per forward and B ms per backward of a microbatch "
                        "on top of the model's compute (use with a tiny --model toy)")
    p.add_argument("--quiet", action="store_true", help="no per-step progress lines")
    p.add_argument("--comm-log", action="store_true",
                   help="testing: write each rank's point-to-point messages in issue order to "
                        "OUT/comm_rank{r}.json (gpu_runs.pipeline.channels.order_mismatches checks "
                        "them against NCCL's order matching)")
    return show_defaults(p)


#: options that are not part of the run (how this process runs it, testing, the toy model's
#: sizes); everything else on the command line is a TrainConfig field (run_spec)
PROCESS = ("model", "toy_layers", "toy_dim", "toy_tied", "resume", "resume_set", "timeout", "fault",
           "synthetic_ms", "quiet", "comm_log")
#: the process knobs that choose the model (part of a toy run's identity): the stage checkpoints
#: record them next to the run spec (``gpu_runs.pipeline.checkpoint.save_stage``)
MODEL_KNOBS = ("model", "toy_layers", "toy_dim", "toy_tied")


@dataclass
class Job:
    """One invocation of the pipeline: ``run``, the run spec (:func:`run_spec`), which is
    what the stages train and what config.json and the resume check record; ``opts``, the
    command line as parsed, read only for its :data:`PROCESS` knobs (``resume`` /
    ``resume_set`` are filled in by the checks) and recorded as given in the stage
    checkpoints (``args``)."""

    run: TrainConfig
    opts: argparse.Namespace

    @property
    def M(self) -> int:
        """Microbatches per optimizer step as the schedules count them (pipedream: 1)."""
        return 1 if self.run.delay.stale_point else self.run.parallel.microbatches


def delay_and_schedule(args) -> tuple[Delay, str]:
    """The run's delay and schedule from ``--delay``, ``--schedule`` and ``--ef`` (an alias of
    ``--delay ef``): either flag alone fixes the other (``--schedule 2bw``: delay 2bw, or ef with
    --ef; ``--delay ef``: schedule 2bw, ``parallelism.DEFAULT_SCHEDULE``); both must agree
    (``parallelism.check_schedule_runs``, one line naming both flags). The mitigations are the
    run spec's, checked by ``TrainConfig.validate``."""
    kind, schedule, ef = getattr(args, "delay", None), args.schedule, bool(args.ef)
    if kind is None and schedule is None:
        raise ValueError(f"give --delay {{{','.join(KINDS)}}} or --schedule {{{','.join(SCHEDULES)}}}")
    if kind is None:
        return Delay.of_config(KIND_OF_SCHEDULE[schedule], ef, stages=2), schedule
    delay = Delay.of_config(**options_of_kind(kind, ef), stages=2)
    schedule = DEFAULT_SCHEDULE[delay.kind] if schedule is None else schedule
    check_schedule_runs(schedule, delay)
    return delay, schedule


def run_spec(args, num_stages: int) -> TrainConfig:
    """The one conversion of the pipeline's command line into the run spec: the
    :class:`gpu_runs.recipe.TrainConfig` of the trainer run with the same trajectory (its delay
    from ``--delay`` / ``--schedule``, :func:`delay_and_schedule`; an MoE's ``aux_groups`` = M, see :func:`aux_groups`) plus the
    parallelism section (schedule, M = ``--microbatches`` or P, D = ``--dp``); P = ``stages``.
    The :data:`SHARED` fields come from the options (:func:`shared_fields`: an option absent
    or None takes the field's own default); ``--resume DIR`` is a process knob: the spec's
    ``resume`` stays False."""
    M = num_stages if args.microbatches is None else args.microbatches
    delay, schedule = delay_and_schedule(args)
    given = shared_fields(args)
    return TrainConfig(**dict(given, **options_of_kind(delay.kind), stages=num_stages,
                              aux_groups=aux_groups(args, M, delay),
                              device=resolve_device(given["device"]), parallel=Parallelism(schedule, M, args.dp)))


def shared_fields(args) -> dict:
    """``{field: value}`` of the :data:`SHARED` TrainConfig fields as the options give them
    (option ``DESTS.get(field, field)``); an option that is absent, or None where the field's
    default is not None (an older checkpoint's recorded options), takes the field's default::

        value(field) = getattr(args, dest)  if it is not None  else  TrainConfig's default"""
    fields = option_fields()
    out = {}
    for name in SHARED:
        v = getattr(args, DESTS.get(name, name), None)
        out[name] = fields[name].default if v is None else v
    return out


def aux_groups(args, M: int, delay: Delay) -> int:
    """The trainer's ``aux_groups`` of this run: M for an MoE model under gpipe / 1f1b / 2bw (each
    microbatch has its own balance loss), 1 for a stale-point delay (pipedream: a step is one
    microbatch) and dense models."""
    if (args.model != "llama" or args.config not in CONFIGS or not CONFIGS[args.config].n_experts
            or delay.stale_point):
        return 1
    return M


def check_options(args, num_stages: int) -> None:
    """Refuse bad values of what is not part of the run (ValueError naming the option), before
    any process group exists; fills in ``--schedule`` (the one ``--delay`` runs,
    :func:`delay_and_schedule`), ``--microbatches`` (P) and a bare ``--resume`` (--out).
    The run's own values are ``TrainConfig.validate``'s."""
    args.schedule = delay_and_schedule(args)[1]
    if args.microbatches is None:
        args.microbatches = num_stages
    if args.resume == RESUME_OUT:
        if args.out is None:
            raise ValueError("--resume without a directory continues the run in --out: give --out "
                             "(or --resume DIR to continue the run in DIR)")
        args.resume = args.out
    if args.model == "llama" and args.data not in (None, "stdlib") and not Path(args.data).exists():
        raise ValueError(f"--data: {args.data!r} is neither 'stdlib' nor an existing file/directory")
    if args.model == "toy" and args.optimizer != "sgd":
        raise ValueError(f"--model toy supports --optimizer sgd only, got {args.optimizer!r}")
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be > 0, got {args.timeout}")
    if args.fault is not None:
        parts = args.fault.split(":")
        if len(parts) != 3 or parts[2] not in ("raise", "exit", "hang"):
            raise ValueError(f"--fault must be RANK:STEP:raise|exit|hang, got {args.fault!r}")
    if args.synthetic_ms is not None:
        try:
            f_ms, b_ms = (float(v) for v in args.synthetic_ms.split(","))
        except ValueError:
            raise ValueError(f"--synthetic-ms must be F,B in milliseconds, got {args.synthetic_ms!r}") from None
        if f_ms < 0 or b_ms < 0:
            raise ValueError(f"--synthetic-ms must be >= 0, got {args.synthetic_ms!r}")


def parse_job(args, num_stages: int, num_layers: int | None = None) -> Job:
    """The command line as a checked :class:`Job`: :func:`check_options`, :func:`run_spec`,
    then ``TrainConfig.validate`` (names against the registries for ``--model llama``; P at
    most ``num_layers``, default the model config's) and the device on this machine
    (``check_device_here``). ValueError naming the option."""
    check_options(args, num_stages)
    run = run_spec(args, num_stages)
    run.validate(names=args.model == "llama", num_layers=num_layers)
    check_device_here(run.device)
    return Job(run, args)


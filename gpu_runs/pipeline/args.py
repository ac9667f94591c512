"""Options of ``python -m gpu_runs.pipeline`` (``build_parser``) and the checks of their
values that need no files (``check_options``); the run-directory checks (resume, an
existing run) are ``gpu_runs.pipeline.checkpoint.check_run_dir``."""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from gpu_runs.cli import add_config_options, show_defaults
from gpu_runs.pipeline.llama import train_config
from gpu_runs.pipeline.schedules import SCHEDULES, check_schedule_args, check_sync_args


#: TrainConfig fields that are pipeline options, generated with the fields' defaults
#: (gpu_runs.cli.add_config_options): a pipeline run and a trainer run with the same
#: options are the same run
SHARED = ("config", "optimizer", "lr", "momentum", "weight_decay", "grad_clip", "ef", "sync_start",
          "sync_cooldown", "dc_asgd", "warmup_frac", "final_frac", "steps", "batch_size", "seq_len", "seed",
          "data", "eval_every", "eval_batches", "device", "out", "ckpt_every", "diag_every", "diag_micro",
          "ns_dtype")
#: the pipeline's own wording where its meaning is narrower than the trainer's
HELP = {
    "ef": "2bw only: error feedback x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}",
    "sync_start": "2bw only: the first K steps synchronous (flushed 1F1B), as the trainer's",
    "sync_cooldown": "2bw only: the last K steps synchronous; the switch flushes the pending update",
    "dc_asgd": "2bw only: DC-ASGD lambda, g + lambda g*g*(y_t - x_t) before clipping, per stage",
    "batch_size": "rows per optimizer step (split into M microbatches)",
    "eval_every": "validation loss on x_{t+1} after every k-th step and after the last (0: never)",
    "device": "cpu, cuda (one GPU per rank, NCCL) or auto (cuda if available)",
    "out": "directory for log.jsonl and per-stage checkpoints",
    "ckpt_every": "checkpoint every k steps into OUT/ckpt_step{k}_stage{s}.pt (0: at the end only; "
                  "None: at every evaluation, keeping the newest 3 sets)",
    "diag_every": "the trainer's theory diagnostics at its cadence, measured after the run from per-stage "
                  "snapshots (gpu_runs.pipeline.diagnostics; sync / 2bw, llama; 0: off)",
    "lr": "peak lr (None: lmo.presets.DEFAULT_LR[optimizer]; toy model: 0.05)",
    "momentum": "primary momentum beta (None: the optimizer's preset; toy model: 0.9)",
}


#: the value of a bare ``--resume``: the run in ``--out`` (check_options replaces it)
RESUME_OUT = "(--out)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node P -m gpu_runs.pipeline",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Pipeline-parallel LM training, one process per stage (P = WORLD_SIZE). "
                    "gpipe/1f1b reproduce the trainer's sync mode, 2bw its 2bw mode (with --ef, "
                    "--sync-start, --sync-cooldown, --dc-asgd), pipedream "
                    "its pipedream --stages P mode, step for step (module docstring: index alignment).")
    p.add_argument("--schedule", choices=SCHEDULES, required=True)
    p.add_argument("--microbatches", "-M", type=int, default=None,
                   help="microbatches per step M (default P); 2bw needs M >= P; ignored by pipedream")
    p.add_argument("--dp", type=int, default=1,
                   help="data-parallel replicas D: WORLD_SIZE = D x P processes, a (dp, pp) device mesh; "
                        "each replica gets batch_size / D rows of every step (gpu_runs.pipeline.data_parallel)")
    p.add_argument("--model", choices=("llama", "toy"), default="llama",
                   help="llama: gpu_runs.model with --config; toy: gpu_runs.pipeline.toy.ToyLM (tests, bench)")
    add_config_options(p, SHARED, flags={"grad_clip": ("--clip", "--grad-clip")}, dests={"grad_clip": "clip"},
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


def check_options(args, num_stages: int, num_layers: int | None) -> None:
    """Refuse bad option values before any process group exists (ValueError naming the option)."""
    if args.microbatches is None:
        args.microbatches = num_stages
    if args.resume == RESUME_OUT:
        if args.out is None:
            raise ValueError("--resume without a directory continues the run in --out: give --out "
                             "(or --resume DIR to continue the run in DIR)")
        args.resume = args.out
    check_schedule_args(args.schedule, num_stages, args.microbatches, args.steps, num_layers)
    if args.dp < 1:
        raise ValueError(f"--dp must be >= 1, got {args.dp}")
    rows = args.dp * (1 if args.schedule == "pipedream" else args.microbatches)
    if args.batch_size % rows:
        raise ValueError(f"--batch-size ({args.batch_size}) must be divisible by --dp ({args.dp}) x "
                         f"--microbatches ({1 if args.schedule == 'pipedream' else args.microbatches})")
    if args.ef and args.schedule != "2bw":
        raise ValueError(f"--ef needs --schedule 2bw (the one-step delay it corrects), got {args.schedule}")
    check_sync_args(args.schedule, args.steps, args.sync_start, args.sync_cooldown)
    if not math.isfinite(args.dc_asgd) or args.dc_asgd < 0:
        raise ValueError(f"--dc-asgd must be a finite number >= 0, got {args.dc_asgd}")
    if args.dc_asgd and args.schedule != "2bw":
        raise ValueError(f"--dc-asgd needs --schedule 2bw (the delay it compensates), got {args.schedule}")
    if args.ckpt_every is not None and args.ckpt_every < 0:
        raise ValueError(f"--ckpt-every must be >= 0, got {args.ckpt_every}")
    if args.model == "llama":
        train_config(args, num_stages).validate_recipe()
        if args.data not in (None, "stdlib") and not Path(args.data).exists():
            raise ValueError(f"--data: {args.data!r} is neither 'stdlib' nor an existing file/directory")
    if args.eval_every < 0 or args.eval_batches < 1:
        raise ValueError(f"--eval-every must be >= 0 and --eval-batches >= 1, got "
                         f"{args.eval_every}, {args.eval_batches}")
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

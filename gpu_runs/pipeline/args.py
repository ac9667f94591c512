"""Options of ``python -m gpu_runs.pipeline`` (``build_parser``) and the checks of their
values that need no files (``check_options``); the run-directory checks (resume, an
existing run) are ``gpu_runs.pipeline.checkpoint.check_run_dir``."""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from gpu_runs.cli import show_defaults
from gpu_runs.pipeline.llama import train_config
from gpu_runs.pipeline.schedules import SCHEDULES, check_schedule_args, check_sync_args


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
    p.add_argument("--model", choices=("llama", "toy"), default="llama",
                   help="llama: gpu_runs.model with --config; toy: gpu_runs.pipeline.toy.ToyLM (tests, bench)")
    p.add_argument("--config", default="tiny", help="model config name (gpu_runs.model.CONFIGS)")
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--momentum", type=float, default=None)
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--clip", type=float, default=None,
                   help="global-norm clipping threshold (default: the trainer's; 0 disables)")
    p.add_argument("--ef", action="store_true",
                   help="2bw only: error feedback x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}")
    p.add_argument("--sync-start", type=int, default=0,
                   help="2bw only: the first K steps synchronous (flushed 1F1B), as the trainer's")
    p.add_argument("--sync-cooldown", type=int, default=0,
                   help="2bw only: the last K steps synchronous; the switch flushes the pending update")
    p.add_argument("--dc-asgd", type=float, default=0.0,
                   help="2bw only: DC-ASGD lambda, g + lambda g*g*(y_t - x_t) before clipping, per stage")
    p.add_argument("--warmup-frac", type=float, default=0.1, help="lr warmup fraction (llama; trainer default)")
    p.add_argument("--final-frac", type=float, default=0.1, help="cosine floor as a fraction of peak lr")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch-size", type=int, default=32, help="rows per optimizer step (split into M microbatches)")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=None, help="corpus name or path (gpu_runs.data.get_corpus)")
    p.add_argument("--eval-every", type=int, default=50,
                   help="validation loss on x_{t+1} after every k-th step and after the last (0: never)")
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--device", default="cpu", help="cpu or cuda (cuda: one GPU per rank, NCCL)")
    p.add_argument("--out", default=None, help="directory for log.jsonl and per-stage checkpoints")
    p.add_argument("--ckpt-every", type=int, default=None,
                   help="checkpoint every k steps into OUT/ckpt_step{k}_stage{s}.pt (0: at the end "
                        "only; default None: at every evaluation, keeping the newest 3 sets)")
    p.add_argument("--resume", default=None,
                   help="run directory of the same run (options compared): continue from its final "
                        "ckpt_stage{s}.pt files, else from its newest complete ckpt_step{k}_stage{s}.pt "
                        "set (a killed run), up to --steps (gpu_runs.pipeline.checkpoint converts the trainer's ckpt.pt)")
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
    p.add_argument("--diag-every", type=int, default=0,
                   help="the trainer's theory diagnostics at its cadence, measured after the run "
                        "from per-stage snapshots (gpu_runs.pipeline.diagnostics; sync / 2bw, llama; 0: off)")
    p.add_argument("--diag-micro", type=int, default=4, help="independent microbatches for sigma / momentum error")
    p.add_argument("--quiet", action="store_true", help="no per-step progress lines")
    return show_defaults(p)


def check_options(args, num_stages: int, num_layers: int | None) -> None:
    """Refuse bad option values before any process group exists (ValueError naming the option)."""
    if args.microbatches is None:
        args.microbatches = num_stages
    check_schedule_args(args.schedule, num_stages, args.microbatches, args.steps, num_layers)
    if args.schedule != "pipedream" and args.batch_size % args.microbatches:
        raise ValueError(f"--batch-size ({args.batch_size}) must be divisible by "
                         f"--microbatches ({args.microbatches})")
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

"""Multi-process pipeline-parallel training: ``torchrun --nproc-per-node P -m gpu_runs.pipeline``.

Each process is one stage (rank s holds layers ``split_layers(n, P)[s]``, the embedding
on the first, the final norm, head and loss on the last). Stages exchange activations
and gradients over torch.distributed P2P (gloo on CPU, NCCL on CUDA) and run one of the
schedules of :mod:`gpu_runs.pipeline_schedules`:

- ``gpipe``, ``1f1b``: flush every step; exact gradients, x_{t+1} = x_t + d_t (= sync mode).
- ``2bw``: PipeDream-2BW, no flush, two weight versions, x_{t+1} = x_t + d_{t-1} (= 2bw
  mode; ``--ef``: x_{t+1} = x_t + 2 d_{t-1} - d_{t-2} = 2bw --ef). Needs M >= P.
- ``pipedream``: one update per microbatch, weight stashing, block delay tau_s = P-1-s
  (= pipedream --stages P mode; each microbatch is one optimizer step of --batch-size
  rows, so ``--microbatches`` does not apply).

Index alignment with ``gpu_runs.train``: the log's ``step`` is 1-based as the trainer's
(record ``step = t + 1`` holds the loss of ``batch(t)``, ``lr = sched(t)`` and, on eval
steps, the validation loss on x_{t+1}); the pipeline logs every step. For gpipe / 1f1b /
2bw the batch of step t is split row-wise into M microbatches of batch_size / M rows,
each loss scaled by 1/M (the batch mean). 2bw: steps 0 and 1 both run on x_0
(x_1 = x_0 + d_{-1}, d_{-1} = 0: the pipeline fill); U(t), right before the first forward
of step t + 2, makes x_{t+2} = x_{t+1} + d_t; d_{T-1} is computed but not applied (it is
the trainer's pending delayed update, kept in the checkpoint; with mitigations see
below). pipedream: stage s runs
microbatch k on u_{max(0, k - tau_s)} (the trainer's mixed point, x_{<0} = x_0). A tied
head belongs to the first stage (its delay), as ``gpu_runs.model.stage_of_params`` says.

Global-norm clipping is exact: squared norms are all-reduced across stages (2bw launches
it asynchronously after a step's last backward, no bubble). For pipedream that all-reduce
after every microbatch is a barrier that reintroduces bubbles; ``--clip 0`` removes it.

Mitigations (2bw only, as the trainer's ``TrainConfig(mode="2bw", ...)``): ``--sync-start
K`` / ``--sync-cooldown K`` run the first / last K steps synchronously as flushed 1F1B
steps and the rest as the 2BW stream (``pipeline_schedules.stage_actions``); the stage
optimizer is the trainer's ``lmo.delay.delayed`` / ``lmo.error_feedback`` wrapper on the
stage's block (``pipeline_delay``), so the first asynchronous step K applies nothing
(steps K and K+1 both run on x_K) and the cooldown switch T-K_c applies the pending
update with its own, x_{t+1} = y_t + d_t. ``--dc-asgd LAMBDA`` corrects each stage's
gradient elementwise, g + lambda g*g*(y_t - x_t), before the clipping norm (as the
trainer). They are refused for gpipe / 1f1b / pipedream, as the trainer refuses them outside 2bw.

``--diag-every N`` logs the trainer's theory diagnostics at its cadence, measured after the
run from per-stage snapshots (``gpu_runs.pipeline_diag``; gpipe / 1f1b / 2bw).

Checkpoints are per stage (``ckpt_stage{s}.pt``: ``gpu_runs.pipeline_ckpt``, which also
converts them to and from the trainer's single ``ckpt.pt`` for sync / 2bw runs);
``--resume`` works for every schedule (pipedream's hold the tau_s = P-1-s stashed
versions each stage still forwards on).

Failure handling: bad arguments are refused before any process group starts; any
exception, a peer's death (gloo reports a closed connection) or ``--timeout`` seconds
without progress (a watchdog thread) make the rank print ``[pipeline rank s/P] …`` and
exit non-zero at once; torchrun then stops the remaining ranks.

Example: ``torchrun --nproc-per-node 2 -m gpu_runs.pipeline --schedule 2bw -M 4
--config tiny --optimizer muon --steps 200 --out runs/pp_2bw``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import torch
import torch.distributed as dist

from gpu_runs import pipeline_diag
from gpu_runs.checkpoint import holds_run
from gpu_runs.cli import show_defaults
from gpu_runs.pipeline_ckpt import (check_same_run, latest_set, load_resume, prune_stage, resume_step,
                                    save_stage)
from gpu_runs.pipeline_delay import DelayRule
from gpu_runs.pipeline_schedules import (SCHEDULES, check_schedule_args, check_sync_args,
                                         stage_actions, with_evals)
from gpu_runs.pipeline_stage import StageEngine, StageModule, split_layers


# ----------------------------------------------------------------------------- CLI
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
                   help="llama: gpu_runs.model with --config; toy: pipeline_toy.ToyLM (tests, bench)")
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
                        "set (a killed run), up to --steps (pipeline_ckpt converts the trainer's ckpt.pt)")
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
                        "from per-stage snapshots (gpu_runs.pipeline_diag; sync / 2bw, llama; 0: off)")
    p.add_argument("--diag-micro", type=int, default=4, help="independent microbatches for sigma / momentum error")
    p.add_argument("--quiet", action="store_true", help="no per-step progress lines")
    return show_defaults(p)


def validate_args(args, num_stages: int, num_layers: int | None) -> None:
    """Refuse bad settings before any process group exists (ValueError naming the option)."""
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
        from gpu_runs.pipeline_llama import train_config
        train_config(args, num_stages).validate_recipe()
        if args.data not in (None, "stdlib") and not Path(args.data).exists():
            raise ValueError(f"--data: {args.data!r} is neither 'stdlib' nor an existing file/directory")
    if args.resume is not None:
        args.resume_set = latest_set(args.resume, num_stages)
        check_same_run(args, num_stages)
    if args.out is not None and holds_pipeline_run(Path(args.out)) and (
            args.resume is None or Path(args.resume).resolve() != Path(args.out).resolve()):
        raise ValueError(f"--out {args.out} already holds a run; pass --resume {args.out} to continue "
                         f"it, or choose another --out (nothing was overwritten)")
    if args.eval_every < 0 or args.eval_batches < 1:
        raise ValueError(f"--eval-every must be >= 0 and --eval-batches >= 1, got "
                         f"{args.eval_every}, {args.eval_batches}")
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be > 0, got {args.timeout}")
    pipeline_diag.check_args(args)
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


def holds_pipeline_run(out: Path) -> bool:
    """A log with content, or any stage checkpoint."""
    return holds_run(out) or any(out.glob("ckpt_stage*.pt")) or any(out.glob("ckpt_step*_stage*.pt"))


# ----------------------------------------------------------------------------- problem
class Problem:
    """What a stage needs from the model side: the full model (built identically on every
    rank), ``batch(step) -> (x, y)``, ``build_opt(stage_params)``, ``lr_at(step)``,
    the clipping threshold and the hidden size."""

    def __init__(self, model, batch, build_opt, lr_at, max_norm, dim, layer_fn=None, val_batch=None):
        self.model, self.batch, self.build_opt, self.lr_at = model, batch, build_opt, lr_at
        self.val_batch = val_batch
        self.max_norm, self.dim, self.layer_fn = max_norm, dim, layer_fn


def toy_problem(args) -> Problem:
    from gpu_runs.pipeline_toy import ToyLM, sgd_momentum, toy_batch

    model = ToyLM(vocab=32, dim=args.toy_dim, num_layers=args.toy_layers, seed=args.seed, tied=args.toy_tied)
    lr = args.lr if args.lr is not None else 0.05
    if args.optimizer != "sgd":
        raise ValueError(f"--model toy supports --optimizer sgd only, got {args.optimizer!r}")
    opt = lambda params: sgd_momentum(lr, args.momentum if args.momentum is not None else 0.9,
                                      args.weight_decay or 0.0)
    return Problem(model, lambda t: toy_batch(args.seed, t, args.batch_size, args.seq_len, 32),
                   opt, lambda t: lr, args.clip or None, args.toy_dim,
                   val_batch=lambda i: toy_batch(args.seed + 7919, i, args.batch_size, args.seq_len, 32))


def make_problem(args) -> Problem:
    if args.model == "toy":
        return toy_problem(args)
    from gpu_runs.pipeline_llama import llama_problem

    return llama_problem(args)


def num_layers_of(args) -> int:
    if args.model == "toy":
        return args.toy_layers
    from gpu_runs.pipeline_llama import num_layers

    return num_layers(args)


# ----------------------------------------------------------------------------- worker
class Watchdog:
    """Exits the process (code 3) when ``beat()`` has not been called for ``timeout`` s."""

    def __init__(self, timeout: float, tag: str):
        self.timeout, self.tag, self.last = timeout, tag, time.monotonic()
        self.done = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def beat(self) -> None:
        self.last = time.monotonic()

    def _watch(self) -> None:
        while not self.done.wait(min(1.0, self.timeout / 4)):
            if time.monotonic() - self.last > self.timeout:
                fail(self.tag, f"no progress for {self.timeout:.0f} s (a peer died or hangs); giving up", 3)


def fail(tag: str, msg: str, code: int = 1) -> None:
    print(f"{tag} error: {msg}", file=sys.stderr, flush=True)
    os._exit(code)


def run_stage(args, rank: int, P: int, watchdog: Watchdog, clip_group) -> dict:
    """Build stage ``rank``, run the schedule, write log / checkpoint; returns a summary."""
    prob = make_problem(args)
    device = torch.device(args.device if args.device != "cuda" else f"cuda:{rank % max(1, torch.cuda.device_count())}")
    ranges = split_layers(len(prob.model.layers), P)
    module = StageModule(prob.model, ranges[rank], rank == 0, rank == P - 1, prob.layer_fn).to(device)
    M = 1 if args.schedule == "pipedream" else args.microbatches
    mb_rows = args.batch_size // M
    cache: dict = {}

    def batch(mb: int):
        t, i = divmod(mb, M)
        if t not in cache:
            cache.clear()
            cache[t] = prob.batch(t)
        x, y = cache[t]
        return x[i * mb_rows:(i + 1) * mb_rows], y[i * mb_rows:(i + 1) * mb_rows]

    fault = None
    if args.fault is not None:
        fr, fs, fk = args.fault.split(":")
        fault = (int(fr), int(fs), fk)
    eval_steps = eval_steps_of(args)
    eval_set = set(eval_steps)
    start = resume_step(args)
    tied = tied_role(prob.model, rank, P, args, M, eval_steps, start)
    own = {k: v for k, v in module.named_parameters() if not (tied and tied[0] == "user" and k == tied[1])}
    opt = prob.build_opt(own)
    rule = None
    if args.schedule == "2bw":  # the trainer's delayed / error_feedback wrapper, per block
        rule = DelayRule(args.ef, args.sync_start, args.sync_cooldown, args.steps, args.dc_asgd)
        opt = rule.wrap(opt)
    val = [prob.val_batch(i) for i in range(args.eval_batches)] if eval_steps else []
    hook = None
    if args.synthetic_ms is not None:
        delay = dict(zip("FB", (float(v) / 1e3 for v in args.synthetic_ms.split(","))))
        hook = lambda kind: time.sleep(delay[kind])
    acts = with_evals(actions_of(args, rank, P, start), args.schedule, M, [t for t in eval_steps if t >= start])
    engine = StageEngine(
        module, rank, P, opt, batch=batch, act_shape=(mb_rows, args.seq_len, prob.dim),
        loss_scale=1.0 / M, update_params="current" if args.schedule == "pipedream" else "stash",
        max_norm=prob.max_norm, clip_group=clip_group, device=device, on_progress=watchdog.beat,
        compute_hook=hook, val_batches=val, rule=rule,
        tied=tied, amp=device.type == "cuda")
    if args.resume is not None:
        load_resume(engine, args, rank, P, M, start)
    out = Path(args.out) if args.out else None
    last = rank == P - 1
    log_f = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if last:
            log_f = open_log(out / "log.jsonl", start)
            if start:
                print(f"[pipeline rank {rank}/{P}] resumed at step {start} from {args.resume} "
                      f"({'final' if args.resume_set is None else 'periodic'} checkpoints)", flush=True)
            if args.ckpt_every != 0 and not args.quiet:
                cad = "at every evaluation" if args.ckpt_every is None else f"every {args.ckpt_every} steps"
                print(f"[pipeline rank {rank}/{P}] checkpoints: {out}/ckpt_step{{k}}_stage{{s}}.pt {cad}, "
                      f"{out}/ckpt_stage{{s}}.pt at the end", flush=True)
            if args.model == "llama":
                from gpu_runs.pipeline_llama import run_config
                (out / "config.json").write_text(json.dumps(run_config(args, P), indent=1))
    snaps = pipeline_diag.Snapshots(out, rank, engine, args, start)
    tag = f"[pipeline rank {rank}/{P}]"
    t_prev = time.perf_counter()
    tokens_per_step = args.batch_size * args.seq_len

    def on_action(a):
        nonlocal t_prev
        if a.kind == "F" and fault is not None and fault[0] == rank and a.mb == fault[1] * M:
            if fault[2] == "raise":
                raise RuntimeError(f"injected fault at step {fault[1]}")
            if fault[2] == "exit":
                os._exit(7)
            time.sleep(1e9)
        if a.kind == "U" and out is not None and a.step >= start and a.step + 1 < args.steps and (
                (a.step + 1) % args.ckpt_every == 0 if args.ckpt_every else
                args.ckpt_every is None and a.step in eval_set):
            save_stage(out, rank, engine, a.step + 1, args)
            if args.ckpt_every is None:
                prune_stage(out, rank, a.step + 1)
        snaps.after(a)
        if last and a.kind in "UE" and a.step >= start:
            done_u.add(a.step) if a.kind == "U" else done_e.add(a.step)
            if a.step in done_u and (a.step in done_e or a.step not in eval_steps):
                now = time.perf_counter()
                rec = dict(step=a.step + 1, train_loss=engine.losses.pop(a.step), lr=float(prob.lr_at(a.step)),
                           tokens=(a.step + 1) * tokens_per_step, step_time=now - t_prev,
                           grad_norm=engine.grad_norms[a.step], schedule=args.schedule, stages=P,
                           microbatches=M)
                if a.step in eval_steps:
                    rec["val_loss"] = engine.val_losses[a.step]
                t_prev = now
                if log_f is not None:
                    log_f.write(json.dumps(rec) + "\n")
                    log_f.flush()
                if not args.quiet:
                    print(f"{tag} step {a.step:4d} loss {rec['train_loss']:.4f} "
                          f"({rec['step_time']*1e3:.0f} ms)", flush=True)

    done_u, done_e = set(), set()
    t0 = time.perf_counter()
    engine.run(acts, on_action)
    wall = time.perf_counter() - t0
    if out is not None:
        save_stage(out, rank, engine, args.steps, args, final=True)
    if log_f is not None:
        log_f.close()
    return dict(rank=rank, wall=wall, device=str(device))


def open_log(path: Path, start: int):
    """The log for appending: a resumed run keeps the records of steps <= start (later ones
    are redone); a fresh run starts an empty one (validate_args refused an existing run)."""
    if start and path.exists():
        keep = [line for line in path.read_text().splitlines(keepends=True)
                if line.strip() and json.loads(line)["step"] <= start]
        path.write_text("".join(keep))
        return open(path, "a")
    return open(path, "a" if start else "w")


def actions_of(args, stage: int, P: int, start: int):
    return stage_actions(args.schedule, stage, P, args.microbatches, args.steps, start,
                         sync_start=args.sync_start, sync_cooldown=args.sync_cooldown)


def tied_role(model, rank: int, P: int, args, M: int, eval_steps, start: int):
    """The engine's ``tied`` argument when ``lm_head.weight is embed.weight`` and P > 1:
    the first stage owns it; the last stage gets, per ("F", mb) / ("E", step), how many
    weight updates the first stage had applied at that point of its own action list."""
    if P == 1 or model.lm_head.weight is not model.embed.weight:
        return None
    if rank == 0:
        return ("owner", "embed.weight", P - 1)
    if rank != P - 1:
        return None
    if args.schedule == "pipedream":  # absolute: stage 0 forwards k on u_{max(0, k - (P-1))}
        version_of = {("F", k): max(0, k - (P - 1)) for k in range(start, args.steps)}
        version_of.update({("E", t): t + 1 for t in eval_steps})
        version_of[("end", None)] = args.steps
        return ("user", "lm_head.weight", 0, version_of)
    acts0 = with_evals(actions_of(args, 0, P, start), args.schedule, M, [t for t in eval_steps if t >= start])
    count, version_of = 0, {}
    for a in acts0:
        if a.kind == "U" and a.apply:
            count += 1
        elif a.kind == "F":
            version_of[("F", a.mb)] = count
        elif a.kind == "E":
            version_of[("E", a.step)] = count
    version_of[("end", None)] = count  # drained after the run: every version sent is received
    return ("user", "lm_head.weight", 0, version_of)


def eval_steps_of(args) -> list[int]:
    """Steps t after which x_{t+1} is evaluated: (t + 1) % eval_every == 0, and the last."""
    if not args.eval_every:
        return []
    return sorted({t for t in range(args.steps) if (t + 1) % args.eval_every == 0} | {args.steps - 1})


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    P = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    tag = f"[pipeline rank {rank}/{P}]"
    try:
        validate_args(args, P, num_layers_of(args))
    except ValueError as e:
        print(f"{tag} refused: {e}", file=sys.stderr, flush=True)
        return 2
    watchdog = Watchdog(args.timeout, tag)
    backend = "nccl" if args.device.startswith("cuda") else "gloo"
    try:
        timeout = datetime.timedelta(seconds=args.timeout)
        dist.init_process_group(backend, rank=rank, world_size=P, timeout=timeout)
        clip_group = dist.new_group(backend=backend, timeout=timeout)
        watchdog.beat()
        summary = run_stage(args, rank, P, watchdog, clip_group)
        dist.barrier()
    except BaseException as e:  # noqa: BLE001 - every failure must end the process
        if not isinstance(e, (RuntimeError, ValueError, KeyboardInterrupt, FileNotFoundError)):
            traceback.print_exc()
        fail(tag, f"{type(e).__name__}: {e}")
    watchdog.done.set()
    if not args.quiet and rank == P - 1:
        print(f"{tag} done: {args.steps} steps in {summary['wall']:.2f} s", flush=True)
    dist.destroy_process_group()
    if args.diag_every and rank == P - 1:   # every stage's snapshots are on disk (barrier above)
        pipeline_diag.measure(args.out, args, P, device=summary["device"], progress=not args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())

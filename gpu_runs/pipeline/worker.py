"""One pipeline stage per process: build it, run the schedule, write log and checkpoints
(``run_stage``), and ``main``: check everything, start the process group, fail fast.
The design, the index alignment and the failure handling: the package docstring."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

import torch
import torch.distributed as dist

from gpu_runs.pipeline import diagnostics as pipeline_diag
from gpu_runs.pipeline.args import build_parser, check_options
from gpu_runs.pipeline import data_parallel as dpar
from gpu_runs import run_lock
from gpu_runs.checkpoint import write_text_atomic
from gpu_runs.pipeline.checkpoint import (RunFinished, check_finished, check_fresh, check_run_dir, load_resume,
                                          prune_stage, resume_step, save_stage)
from gpu_runs.pipeline.delay import DelayRule
from gpu_runs.pipeline.llama import llama_problem, num_layers, run_config, train_config
from gpu_runs.pipeline.moe import StageMoE, routing_group, stage_moe_names
from gpu_runs.pipeline.problem import Problem
from gpu_runs.pipeline.schedules import stage_actions, with_evals
from gpu_runs.pipeline.channels import make_channels
from gpu_runs.pipeline.stage import StageEngine
from gpu_runs.pipeline.stage_module import StageModule, split_layers
from gpu_runs.pipeline.toy import toy_problem
from gpu_runs.recipe import resolve_device


def validate_args(args, num_stages: int, num_layers: int | None) -> list[str]:
    """Refuse bad settings before any process group exists (ValueError naming the option):
    option values, the diagnostics' needs, and the run directories (resume / existing run).
    Returns the unreadable checkpoints a resume skipped (checkpoint.find_set)."""
    check_options(args, num_stages, num_layers)
    pipeline_diag.check_args(args)
    return check_run_dir(args, num_stages)


def lock_out(args, rank: int):
    """This rank's lock on ``--out`` (gpu_runs.run_lock; None without --out), then the
    fresh-run check again under the lock (a run that started meanwhile is not overwritten)."""
    if args.out is None:
        return None
    fd = run_lock.acquire(args.out, rank)
    try:
        check_fresh(args)
    except ValueError:
        run_lock.release(fd)
        raise
    return fd


TORCHRUN_HINT = ("not started by torchrun (RANK / MASTER_ADDR unset): run "
                 "torchrun --nproc-per-node P -m gpu_runs.pipeline ... (one process per stage; "
                 "--nproc-per-node 1 for a single stage)")


def make_problem(args) -> Problem:
    if args.model == "toy":
        return toy_problem(args)
    return llama_problem(args)


def num_layers_of(args) -> int:
    if args.model == "toy":
        return args.toy_layers
    return num_layers(args)


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


def run_stage(args, rank: int, P: int, watchdog: Watchdog, clip_group, layout=None) -> dict:
    """Build stage ``rank``, run the schedule, write log / checkpoint; returns a summary.
    ``layout`` (--dp): the rank's place in the (dp, pp) grid; None is one replica. Only
    replica 0 writes (log, config, checkpoints): the replicas are identical."""
    layout = layout or dpar.Layout(1, P, rank, pp_group=clip_group)
    D, writer = layout.dp, layout.replica == 0
    prob = make_problem(args)
    local = int(os.environ.get("LOCAL_RANK", layout.rank))
    device = torch.device(args.device if args.device != "cuda" else f"cuda:{local % max(1, torch.cuda.device_count())}")
    ranges = split_layers(len(prob.model.layers), P)
    module = StageModule(prob.model, ranges[rank], rank == 0, rank == P - 1, prob.layer_fn).to(device)
    M = 1 if args.schedule == "pipedream" else args.microbatches
    mb_rows = args.batch_size // (D * M)
    cache: dict = {}

    def batch(mb: int):
        t, i = divmod(mb, M)
        if t not in cache:
            cache.clear()
            cache[t] = dpar.shard_rows(*prob.batch(t), layout.replica, D)
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
    opt = build_stage_opt(prob, args, own, layout)
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
    reduce_s = [0.0]  # seconds in the dp averaging since the last log record (the benchmark's share)

    def reduce(g):
        t0 = time.perf_counter()
        g = dpar.average_gradients(g, layout.dp_group, D)
        reduce_s[0] += time.perf_counter() - t0
        return g

    if D > 1 and getattr(getattr(prob.model, "cfg", None), "n_experts", 0):
        fail(f"[pipeline rank {layout.rank}]", "--dp > 1 with a mixture-of-experts config is not supported "
             "yet (the routing statistics are gathered over one replica's stages); use --dp 1", 2)
    moe = stage_moe(prob.model, module, ranges, rank, P, M, device, args.timeout)
    channels = make_channels(P, args.timeout)  # collective: every rank, after stage_moe's group
    engine = StageEngine(
        module, rank, P, opt, batch=batch, act_shape=(mb_rows, args.seq_len, prob.dim),
        loss_scale=1.0 / M, update_params="current" if args.schedule == "pipedream" else "stash",
        max_norm=prob.max_norm, clip_group=clip_group, device=device, on_progress=watchdog.beat,
        compute_hook=hook, val_batches=val, rule=rule,
        tied=tied, amp=device.type == "cuda", rank_of=layout.rank_of,
        grad_reduce=reduce if D > 1 else None, moe=moe, channels=channels, comm_log=args.comm_log)
    if args.resume is not None:
        load_resume(engine, args, rank, P, M, start)
    out = Path(args.out) if args.out and writer else None
    last = rank == P - 1
    tag = f"[pipeline rank {layout.rank}/{D * P}]"
    log_f = None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if last:
            log_f = open_log(out / "log.jsonl", start)
            if start:
                print(f"{tag} resumed at step {start} from {args.resume} "
                      f"({'final' if args.resume_set is None else 'periodic'} checkpoints)", flush=True)
            if args.ckpt_every != 0 and not args.quiet:
                cad = "at every evaluation" if args.ckpt_every is None else f"every {args.ckpt_every} steps"
                print(f"{tag} checkpoints: {out}/ckpt_step{{k}}_stage{{s}}.pt {cad}, "
                      f"{out}/ckpt_stage{{s}}.pt at the end", flush=True)
            if args.model == "llama":
                (out / "config.json").write_text(json.dumps(dict(run_config(args, P), dp=D), indent=1))
    snaps = pipeline_diag.Snapshots(out, rank, engine, args, start)
    t_prev = time.perf_counter()
    tokens_per_step = args.batch_size * args.seq_len

    def on_action(a):
        nonlocal t_prev
        if a.kind == "F" and fault is not None and fault[0] == layout.rank and a.mb == fault[1] * M:
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
                loss = dpar.dp_mean(engine.losses.pop(a.step), layout.dp_group, D, device)
                rec = dict(step=a.step + 1, train_loss=loss, lr=float(prob.lr_at(a.step)),
                           tokens=(a.step + 1) * tokens_per_step, step_time=now - t_prev,
                           grad_norm=engine.grad_norms[a.step], schedule=args.schedule, stages=P,
                           microbatches=M, dp=D, dp_allreduce_time=reduce_s[0])
                reduce_s[0] = 0.0
                if moe is not None:  # every stage's balance loss and routing (gpu_runs.pipeline.moe)
                    rec["routing"], aux = moe.gather(a.step)
                    rec["train_loss"] += aux
                if a.step in eval_steps:
                    rec["val_loss"] = engine.val_losses[a.step]
                t_prev = now
                if log_f is not None:
                    log_f.write(json.dumps(rec) + "\n")
                    log_f.flush()
                if not args.quiet and writer:
                    print(f"{tag} step {a.step + 1:4d} loss {rec['train_loss']:.4f} "
                          f"({rec['step_time']*1e3:.0f} ms)", flush=True)

    done_u, done_e = set(), set()
    t0 = time.perf_counter()
    engine.run(acts, on_action)
    if moe is not None:
        moe.finish()
    wall = time.perf_counter() - t0
    if out is not None:
        save_stage(out, rank, engine, args.steps, args, final=True)
    if args.comm_log and args.out:  # every replica's ranks: each rank's own file
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"comm_rank{layout.rank}.json").write_text(json.dumps(engine.comm_log))
    if log_f is not None:
        log_f.close()
    return dict(rank=rank, wall=wall, device=str(device))


def build_stage_opt(prob, args, own: dict, layout):
    """The stage's base optimizer; --optimizer muon with --dp > 1 shards its Newton-Schulz
    over the stage's dp group (gpu_runs.pipeline.sharded_muon), the same update."""
    if layout.dp > 1 and args.model == "llama" and args.optimizer == "muon":
        from gpu_runs.pipeline import sharded_muon
        return sharded_muon.base_optimizer(train_config(args), own, layout.dp_group, layout.dp)
    return prob.build_opt(own)


def stage_moe(model, module, ranges, rank: int, P: int, M: int, device, timeout_s: float):
    """The stage's :class:`gpu_runs.pipeline.moe.StageMoE` for an MoE model (every rank
    creates its process group here), else None."""
    cfg = getattr(model, "cfg", None)
    if cfg is None or not getattr(cfg, "n_experts", 0):
        return None
    return StageMoE(module, rank, P, stage_moe_names(model, ranges), M, cfg.aux_loss_coef, cfg.n_experts,
                    routing_group(P, timeout_s), device)


def open_log(path: Path, start: int):
    """The log for appending: a resumed run keeps the records of steps <= start (later ones
    are redone); a fresh run starts an empty one (validate_args refused an existing run)."""
    if start and path.exists():
        keep = [line for line in path.read_text().splitlines(keepends=True)
                if line.strip() and json.loads(line)["step"] <= start]
        write_text_atomic(path, "".join(keep))
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
    args.device = resolve_device(args.device)
    N = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    tag = f"[pipeline rank {rank}/{N}]"
    try:
        _, P = dpar.grid_shape(N, args.dp)
        skipped = validate_args(args, P, num_layers_of(args))
        check_finished(args)
        if "RANK" not in os.environ or "MASTER_ADDR" not in os.environ:
            raise ValueError(TORCHRUN_HINT)
        lock_out(args, rank)     # held until the process exits
    except RunFinished as e:
        if rank == 0:
            print(f"{tag} {e}", flush=True)
        return 0
    except ValueError as e:
        print(f"{tag} refused: {e}", file=sys.stderr, flush=True)
        return 2
    if skipped and rank == 0:
        print(f"{tag} skipped unreadable checkpoints ({'; '.join(skipped)}); resuming from the newest "
              f"complete set ({'final' if args.resume_set is None else f'step {args.resume_set}'})",
              file=sys.stderr, flush=True)
    watchdog = Watchdog(args.timeout, tag)
    backend = "nccl" if args.device.startswith("cuda") else "gloo"
    try:
        layout = dpar.init_layout(args.dp, backend, args.timeout)
        watchdog.beat()
        summary = run_stage(args, layout.stage, P, watchdog, layout.pp_group, layout)
        dist.barrier()
    except OSError as e:     # the file system (disk full, a directory removed): one line, exit 2
        fail(tag, f"{type(e).__name__}: {e}", 2)
    except BaseException as e:  # noqa: BLE001 - every failure must end the process
        if not isinstance(e, (RuntimeError, ValueError, KeyboardInterrupt)):
            traceback.print_exc()
        fail(tag, f"{type(e).__name__}: {e}")
    watchdog.done.set()
    if not args.quiet and rank == P - 1:  # the last stage of replica 0
        print(f"{tag} done: {args.steps} steps in {summary['wall']:.2f} s", flush=True)
    dist.destroy_process_group()
    if args.diag_every and rank == P - 1:  # replica 0's last stage   # every stage's snapshots are on disk (barrier above)
        pipeline_diag.measure(args.out, args, P, device=summary["device"], progress=not args.quiet)
    return 0


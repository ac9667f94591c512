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
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from gpu_runs.pipeline import diagnostics as pipeline_diag
from gpu_runs.pipeline.args import build_parser, check_options
from gpu_runs.pipeline import data_parallel as dpar
from gpu_runs import run_lock
from gpu_runs.recorder import RunRecorder, ckpt_cadence, ckpt_due, step_record
from gpu_runs.pipeline.checkpoint import (RunFinished, check_finished, check_fresh, check_run_dir, load_resume,
                                          prune_stage, resume_step, save_stage)
from gpu_runs.pipeline.delay import DelayRule
from gpu_runs.pipeline.llama import llama_problem, num_layers, run_config, train_config
from gpu_runs.pipeline.moe import StageMoE, routing_group, stage_moe_names
from gpu_runs.pipeline.problem import Problem
from gpu_runs.pipeline.schedules import stage_actions, with_evals
from gpu_runs.pipeline.channels import make_channels
from gpu_runs.pipeline.comm import StageComm, tied_weight
from gpu_runs.pipeline.stage import StageEngine
from gpu_runs.pipeline.step_rule import StepRule
from gpu_runs.pipeline.weight_versions import WeightVersions
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
    prob = make_problem(args)
    local = int(os.environ.get("LOCAL_RANK", layout.rank))
    device = torch.device(args.device if args.device != "cuda" else f"cuda:{local % max(1, torch.cuda.device_count())}")
    start = resume_step(args)
    stage = build_stage(args, prob, rank, P, layout, device, start, watchdog, clip_group)
    M, engine = stage.M, stage.engine
    if args.resume is not None:
        load_resume(engine, args, rank, P, M, start)
    out = Path(args.out) if args.out and layout.replica == 0 else None
    books = StageBooks(args, prob, stage, rank, P, layout, device, start, out)
    t0 = time.perf_counter()
    engine.run(stage.actions, books.on_action)
    if stage.moe is not None:
        stage.moe.finish()
    wall = time.perf_counter() - t0
    if out is not None:
        save_stage(out, rank, engine, args.steps, args, final=True)
    if args.comm_log and args.out:  # every replica's ranks: each rank's own file
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / f"comm_rank{layout.rank}.json").write_text(json.dumps(engine.comm_log))
    return dict(rank=rank, wall=wall, device=str(device))


@dataclass
class BuiltStage:
    """What :func:`build_stage` made: the engine and what the bookkeeping reads."""
    engine: StageEngine
    M: int
    actions: list
    eval_steps: list
    moe: StageMoE | None
    reduce_s: list  # seconds in the dp averaging since the last log record (the benchmark's share)


def build_stage(args, prob, rank: int, P: int, layout, device, start: int, watchdog, clip_group) -> BuiltStage:
    """Stage ``rank``'s module, optimizer (2bw: the DelayRule's wrapper), data, actions and
    engine. Creates the MoE routing group and the channels' groups (collective: every rank)."""
    D = layout.dp
    ranges = split_layers(len(prob.model.layers), P)
    module = StageModule(prob.model, ranges[rank], rank == 0, rank == P - 1, prob.layer_fn).to(device)
    M = 1 if args.schedule == "pipedream" else args.microbatches
    mb_rows = args.batch_size // (D * M)
    eval_steps = eval_steps_of(args)
    tied = tied_role(prob.model, rank, P, args, M, eval_steps, start)
    own = {k: v for k, v in module.named_parameters() if not (tied and tied[0] == "user" and k == tied[1])}
    opt = build_stage_opt(prob, args, own, layout)
    rule = None
    if args.schedule == "2bw":  # the trainer's delayed / error_feedback wrapper, per block
        rule = DelayRule(args.ef, args.sync_start, args.sync_cooldown, args.steps, args.dc_asgd)
        opt = rule.wrap(opt)
    val = [prob.val_batch(i) for i in range(args.eval_batches)] if eval_steps else []
    acts = with_evals(actions_of(args, rank, P, start), args.schedule, M, [t for t in eval_steps if t >= start])
    reduce_s = [0.0]

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
    comm = StageComm((mb_rows, args.seq_len, prob.dim), device=device, rank_of=layout.rank_of,
                     channels=channels, comm_log=args.comm_log, on_progress=watchdog.beat)
    params = {k: v.detach().clone() for k, v in module.named_parameters()}
    tied_part = tied_weight(tied, comm, params)  # the last stage's tied copy leaves params
    steps = StepRule(opt, params, rule=rule, max_norm=prob.max_norm, clip_group=clip_group,
                     num_stages=P, device=device)
    weights = WeightVersions(params, rank, P, "current" if args.schedule == "pipedream" else "stash")
    engine = StageEngine(module, rank, P, comm, weights, steps, tied_part, batch=microbatches(prob, layout, M, mb_rows),
                         loss_scale=1.0 / M, amp=device.type == "cuda", compute_hook=synthetic_hook(args),
                         val_batches=val, grad_reduce=reduce if D > 1 else None, moe=moe)
    return BuiltStage(engine, M, acts, eval_steps, moe, reduce_s)


def microbatches(prob, layout, M: int, mb_rows: int):
    """``batch(mb) -> (x, y)``: microbatch ``mb`` = (step, i) of this replica's rows."""
    cache: dict = {}

    def batch(mb: int):
        t, i = divmod(mb, M)
        if t not in cache:
            cache.clear()
            cache[t] = dpar.shard_rows(*prob.batch(t), layout.replica, layout.dp)
        x, y = cache[t]
        return x[i * mb_rows:(i + 1) * mb_rows], y[i * mb_rows:(i + 1) * mb_rows]
    return batch


def synthetic_hook(args):
    """--synthetic-ms F,B: sleep that long per forward / backward (the benchmark's compute)."""
    if args.synthetic_ms is None:
        return None
    delay = dict(zip("FB", (float(v) / 1e3 for v in args.synthetic_ms.split(","))))
    return lambda kind: time.sleep(delay[kind])


class StageBooks:
    """A stage's bookkeeping after each action: the injected fault (--fault), the periodic
    checkpoints, the diagnostics' snapshots and, on the last stage, the log record of each
    finished step (:mod:`gpu_runs.recorder`, shared with the trainer) and its console line."""

    def __init__(self, args, prob, stage: BuiltStage, rank: int, P: int, layout, device, start: int,
                 out: Path | None):
        self.args, self.prob, self.stage, self.rank, self.P = args, prob, stage, rank, P
        self.layout, self.device, self.start, self.out = layout, device, start, out
        self.engine, self.M, self.last = stage.engine, stage.M, rank == P - 1
        self.eval_set = set(stage.eval_steps)
        self.fault = None
        if args.fault is not None:
            fr, fs, fk = args.fault.split(":")
            self.fault = (int(fr), int(fs), fk)
        self.tag = f"[pipeline rank {layout.rank}/{layout.dp * P}]"
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        self.recorder = self._open_outputs() if self.last else None
        self.snaps = pipeline_diag.Snapshots(out, rank, self.engine, args, start)
        self.t_prev = time.perf_counter()
        self.done_u, self.done_e = set(), set()

    def _open_outputs(self) -> RunRecorder:
        """The last stage's recorder (log.jsonl under --out of replica 0), its start lines and config.json."""
        args, out, tag = self.args, self.out, self.tag
        quiet = args.quiet or self.layout.replica != 0
        recorder = RunRecorder(out, self.start, say=None if quiet else (lambda m: print(m, flush=True)),
                               line=lambda r: f"{tag} step {r['step']:4d} loss {r['train_loss']:.4f} "
                                              f"({r['step_time']*1e3:.0f} ms)")
        if out is not None:
            if self.start:
                print(f"{tag} resumed at step {self.start} from {args.resume} "
                      f"({'final' if args.resume_set is None else 'periodic'} checkpoints)", flush=True)
            if args.ckpt_every != 0 and not args.quiet:
                print(f"{tag} checkpoints: {out}/ckpt_step{{k}}_stage{{s}}.pt {ckpt_cadence(args.ckpt_every)}, "
                      f"{out}/ckpt_stage{{s}}.pt at the end", flush=True)
            if args.model == "llama":
                (out / "config.json").write_text(json.dumps(dict(run_config(args, self.P), dp=self.layout.dp),
                                                            indent=1))
        return recorder

    def on_action(self, a) -> None:
        args = self.args
        if a.kind == "F" and self.fault is not None and self.fault[0] == self.layout.rank and a.mb == self.fault[1] * self.M:
            inject_fault(self.fault)
        if a.kind == "U" and self.out is not None and self.start <= a.step and a.step + 1 < args.steps and \
                ckpt_due(args.ckpt_every, a.step + 1, a.step in self.eval_set):
            save_stage(self.out, self.rank, self.engine, a.step + 1, args)
            if args.ckpt_every is None:
                prune_stage(self.out, self.rank, a.step + 1)
        self.snaps.after(a)
        if self.last and a.kind in "UE" and a.step >= self.start:
            (self.done_u if a.kind == "U" else self.done_e).add(a.step)
            if a.step in self.done_u and (a.step in self.done_e or a.step not in self.eval_set):
                self._record(a.step)

    def _record(self, t: int) -> None:
        """The log record of step t + 1 (every dp replica's last stage: dp_mean is collective)."""
        args, engine, layout, st = self.args, self.engine, self.layout, self.stage
        now = time.perf_counter()
        loss = dpar.dp_mean(engine.losses.pop(t), layout.dp_group, layout.dp, self.device)
        rec = step_record(t + 1, loss, float(self.prob.lr_at(t)), args.batch_size * args.seq_len,
                          now - self.t_prev, grad_norm=engine.grad_norms[t], schedule=args.schedule,
                          stages=self.P, microbatches=self.M, dp=layout.dp, dp_allreduce_time=st.reduce_s[0])
        st.reduce_s[0] = 0.0
        if st.moe is not None:  # every stage's balance loss and routing (gpu_runs.pipeline.moe)
            rec["routing"], aux = st.moe.gather(t)
            rec["train_loss"] += aux
        if t in self.eval_set:
            rec["val_loss"] = engine.val_losses[t]
        self.t_prev = now
        self.recorder.record(rec)


def inject_fault(fault) -> None:
    """--fault R:S:KIND at the first forward of step S on rank R: raise, exit 7, or hang."""
    if fault[2] == "raise":
        raise RuntimeError(f"injected fault at step {fault[1]}")
    if fault[2] == "exit":
        os._exit(7)
    time.sleep(1e9)


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


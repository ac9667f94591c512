"""One pipeline stage per process: build it, run the schedule, write log and checkpoints
(``run_stage``), and ``main``: check everything, start the process group, fail fast.
The design, the index alignment and the failure handling: the package docstring.

The command line becomes a :class:`gpu_runs.pipeline.args.Job` once (:func:`prepare`): its
``run`` (a :class:`gpu_runs.recipe.TrainConfig`, the run spec) holds every run setting the
functions here read; its ``opts`` only the process knobs (``args.PROCESS``)."""
from __future__ import annotations

import contextlib
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

from lmo.registry import lr_at

from gpu_runs.pipeline import diagnostics as pipeline_diag
from gpu_runs.pipeline.args import PROG, Job, build_parser, parse_job
from gpu_runs.pipeline import data_parallel as dpar
from gpu_runs import interrupt, memory_budget, run_lock, verified_files
from gpu_runs.recorder import RunRecorder, ckpt_cadence, ckpt_due, eval_due, step_record
from gpu_runs.pipeline.checkpoint import (RunFinished, check_finished, check_fresh, check_run_dir, interrupted_line,
                                          load_resume, prune_stage, resume_step, save_stage, sweep_temps)
from gpu_runs.parallelism import applies_at_once, flushed_steps, looks_ahead
from gpu_runs.pipeline.delay import wrap_stage
from gpu_runs.pipeline.llama import check_memory, llama_problem, run_config
from gpu_runs.pipeline.moe import StageMoE, routing_group, stage_moe_names
from gpu_runs.pipeline.problem import Problem
from gpu_runs.pipeline.schedules import stage_actions, with_evals
from gpu_runs.pipeline.channels import make_channels
from gpu_runs.pipeline.comm import StageComm, tied_messages, tied_weight
from gpu_runs.pipeline.stage import StageEngine
from gpu_runs.pipeline.step_rule import StepRule
from gpu_runs.pipeline.weight_versions import WeightVersions
from gpu_runs.pipeline.stage_module import StageModule, split_layers
from gpu_runs.pipeline.toy import toy_problem


def prepare(args, num_stages: int, num_layers: int | None = None) -> tuple[Job, list[str]]:
    """The parsed command line as a checked :class:`Job`, before any process group exists
    (ValueError naming the option): the run spec and its one validation
    (``args.parse_job``), the diagnostics' needs, and the run directories (resume / existing
    run). Returns (job, the unreadable checkpoints a resume skipped: checkpoint.find_set)."""
    job = parse_job(args, num_stages, num_layers)
    pipeline_diag.check_args(job)
    if job.opts.model == "llama":   # every rank, before any allocates: the run must fit the machine
        check_memory(job.run, num_stages, rank_device(job.run.device))
    return job, check_run_dir(job, num_stages)


def rank_device(name: str) -> torch.device:
    """This rank's device (``LOCAL_RANK`` picks the GPU of ``cuda``)."""
    if name != "cuda":
        return torch.device(name)
    return torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % max(1, torch.cuda.device_count())}")


def validate_args(args, num_stages: int, num_layers: int | None) -> list[str]:
    """:func:`prepare` for its checks: the unreadable checkpoints a resume skipped."""
    return prepare(args, num_stages, num_layers)[1]


def lock_out(job: Job, rank: int, P: int):
    """This rank's lock on ``--out`` (gpu_runs.run_lock; None without --out), then the
    fresh-run check again under the lock (a run that started meanwhile is not overwritten);
    once it passes, the temporary files a killed writer of this rank left are removed
    (``checkpoint.sweep_temps``: a refusal removes nothing and leaves nothing)."""
    if job.run.out is None:
        return None
    created = not Path(job.run.out).exists()
    fd = run_lock.acquire(job.run.out, rank)
    try:
        check_fresh(job)
    except ValueError:        # the refusal leaves no lock file, nor a directory it made
        run_lock.release(fd, Path(job.run.out) / run_lock.lock_name(rank))
        if created:
            with contextlib.suppress(OSError):
                Path(job.run.out).rmdir()
        raise
    sweep_temps(job.run.out, rank, P)
    return fd


TORCHRUN_HINT = ("not started by torchrun (RANK / MASTER_ADDR unset): run "
                 f"{PROG} ... (one process per stage; --nproc-per-node 1 for a single stage)")


def make_problem(job: Job) -> Problem:
    if job.opts.model == "toy":
        return toy_problem(job)
    return llama_problem(job.run)


def num_layers_of(args) -> int | None:
    """The toy model's layer count (a process knob); None for llama (its config's, which
    ``TrainConfig.validate`` reads)."""
    return args.toy_layers if args.model == "toy" else None


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


def run_stage(job: Job, rank: int, P: int, watchdog: Watchdog, clip_group, layout=None) -> dict:
    """Build stage ``rank``, run the schedule, write log / checkpoint; returns a summary.
    ``layout`` (--dp): the rank's place in the (dp, pp) grid; None is one replica. Only
    replica 0 writes (log, config, checkpoints): the replicas are identical. The final stage
    checkpoints are written unless ``ckpt_every`` is 0 (never, as the trainer's)."""
    run = job.run
    layout = layout or dpar.Layout(1, P, rank, pp_group=clip_group)
    prob = make_problem(job)
    local = int(os.environ.get("LOCAL_RANK", layout.rank))
    device = torch.device(run.device if run.device != "cuda" else f"cuda:{local % max(1, torch.cuda.device_count())}")
    start = resume_step(job)
    stage = build_stage(job, prob, rank, P, layout, device, start, watchdog, clip_group)
    M, engine = stage.M, stage.engine
    if job.opts.resume is not None:
        load_resume(engine, job, rank, P, M, start)
    out = Path(run.out) if run.out and layout.replica == 0 else None
    books = StageBooks(job, prob, stage, rank, P, layout, device, start, out)
    t0 = time.perf_counter()
    engine.run(stage.actions, books.on_action)
    if stage.moe is not None:
        stage.moe.finish()
    wall = time.perf_counter() - t0
    if out is not None and run.ckpt_every != 0:
        save_stage(out, rank, engine, run.steps, job, final=True)
    if job.opts.comm_log and run.out:  # every replica's ranks: each rank's own file
        Path(run.out).mkdir(parents=True, exist_ok=True)
        verified_files.write_text(Path(run.out) / f"comm_rank{layout.rank}.json", json.dumps(engine.comm_log))
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


def build_stage(job: Job, prob, rank: int, P: int, layout, device, start: int, watchdog, clip_group) -> BuiltStage:
    """Stage ``rank``'s module, optimizer (2bw: the DelayRule's wrapper), data, actions and
    engine. Creates the MoE routing group and the channels' groups (collective: every rank)."""
    run, opts, D = job.run, job.opts, layout.dp
    schedule = run.parallel.schedule
    ranges = split_layers(len(prob.model.layers), P)
    module = StageModule(prob.model, ranges[rank], rank == 0, rank == P - 1, prob.layer_fn).to(device)
    M = job.M
    mb_rows = run.batch_size // (D * M)
    eval_steps = eval_steps_of(run)
    tied = tied_role(prob.model, rank, P, run, M, eval_steps, start)
    own = {k: v for k, v in module.named_parameters() if not (tied and tied[0] == "user" and k == tied[1])}
    # the trainer's delay wrapper on the stage's block, its taus (schedule 2bw)
    opt, rule = wrap_stage(run.delay, run.steps, build_stage_opt(prob, job, own, layout), own, rank, P)
    val = [prob.val_batch(i) for i in range(run.eval_batches)] if eval_steps else []
    acts = with_evals(actions_of(run, rank, P, start), schedule, M, [t for t in eval_steps if t >= start])
    reduce_s = [0.0]

    def reduce(g):
        t0 = time.perf_counter()
        g = dpar.average_gradients(g, layout.dp_group, D)
        reduce_s[0] += time.perf_counter() - t0
        return g

    if D > 1 and getattr(getattr(prob.model, "cfg", None), "n_experts", 0):
        fail(f"[pipeline rank {layout.rank}]", "--dp > 1 with a mixture-of-experts config is not supported "
             "yet (the routing statistics are gathered over one replica's stages); use --dp 1", 2)
    moe = stage_moe(prob.model, module, ranges, rank, P, M, device, opts.timeout)
    channels = make_channels(P, opts.timeout)  # collective: every rank, after stage_moe's group
    comm = StageComm((mb_rows, run.seq_len, prob.dim), device=device, rank_of=layout.rank_of,
                     channels=channels, comm_log=opts.comm_log, on_progress=watchdog.beat)
    params = {k: v.detach().clone() for k, v in module.named_parameters()}
    tied_part = tied_weight(tied, comm, params)  # the last stage's tied copy leaves params
    steps = StepRule(opt, params, rule=rule, max_norm=prob.max_norm, clip_group=clip_group,
                     num_stages=P, device=device)
    weights = WeightVersions(params, rank, P, "current" if run.delay.stale_point else "stash")
    engine = StageEngine(module, rank, P, comm, weights, steps, tied_part, batch=microbatches(prob, layout, M, mb_rows),
                         loss_scale=1.0 / M, amp=device.type == "cuda", compute_hook=synthetic_hook(opts),
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


def synthetic_hook(opts):
    """--synthetic-ms F,B: sleep that long per forward / backward (the benchmark's compute)."""
    if opts.synthetic_ms is None:
        return None
    delay = dict(zip("FB", (float(v) / 1e3 for v in opts.synthetic_ms.split(","))))
    return lambda kind: time.sleep(delay[kind])


class StageBooks:
    """A stage's bookkeeping after each action: the injected fault (--fault), the periodic
    checkpoints, the diagnostics' snapshots and, on the last stage, the log record of each
    finished step (:mod:`gpu_runs.recorder`, shared with the trainer) and its console line."""

    def __init__(self, job: Job, prob, stage: BuiltStage, rank: int, P: int, layout, device, start: int,
                 out: Path | None):
        self.job, self.run, self.prob, self.stage, self.rank, self.P = job, job.run, prob, stage, rank, P
        self.layout, self.device, self.start, self.out = layout, device, start, out
        self.engine, self.M, self.last = stage.engine, stage.M, rank == P - 1
        self.eval_set = set(stage.eval_steps)
        self.fault = None
        if job.opts.fault is not None:
            fr, fs, fk = job.opts.fault.split(":")
            self.fault = (int(fr), int(fs), fk)
        self.tag = f"[pipeline rank {layout.rank}/{layout.dp * P}]"
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        self.recorder = self._open_outputs() if self.last else None
        self.snaps = pipeline_diag.Snapshots(out, rank, self.engine, job, start)
        self.t_prev = time.perf_counter()
        self.done_u, self.done_e = set(), set()

    def _open_outputs(self) -> RunRecorder:
        """The last stage's recorder (log.jsonl under --out of replica 0), its start lines and config.json."""
        run, opts, out, tag = self.run, self.job.opts, self.out, self.tag
        quiet = opts.quiet or self.layout.replica != 0
        recorder = RunRecorder(out, self.start, say=None if quiet else (lambda m: print(m, flush=True)),
                               line=lambda r: f"{tag} step {r['step']:4d} loss {r['train_loss']:.4f} "
                                              f"({r['step_time']*1e3:.0f} ms)")
        if out is not None:
            if self.start:
                print(f"{tag} resumed at step {self.start} from {opts.resume} "
                      f"({'final' if opts.resume_set is None else 'periodic'} checkpoints)", flush=True)
            if run.ckpt_every != 0 and not opts.quiet:
                print(f"{tag} checkpoints: {out}/ckpt_step{{k}}_stage{{s}}.pt {ckpt_cadence(run.ckpt_every)}, "
                      f"{out}/ckpt_stage{{s}}.pt at the end", flush=True)
            if opts.model == "llama":
                verified_files.write_text(out / "config.json", json.dumps(run_config(run), indent=1))
        return recorder

    def on_action(self, a) -> None:
        run = self.run
        if a.kind == "F" and self.fault is not None and self.fault[0] == self.layout.rank and a.mb == self.fault[1] * self.M:
            inject_fault(self.fault)
        if a.kind == "U" and self.out is not None and self.start <= a.step and a.step + 1 < run.steps and \
                ckpt_due(run.ckpt_every, a.step + 1, a.step in self.eval_set):
            save_stage(self.out, self.rank, self.engine, a.step + 1, self.job)
            if run.ckpt_every is None:
                prune_stage(self.out, self.rank, a.step + 1)
        self.snaps.after(a)
        if self.last and a.kind in "UE" and a.step >= self.start:
            (self.done_u if a.kind == "U" else self.done_e).add(a.step)
            if a.step in self.done_u and (a.step in self.done_e or a.step not in self.eval_set):
                self._record(a.step)

    def _record(self, t: int) -> None:
        """The log record of step t + 1 (every dp replica's last stage: dp_mean is collective)."""
        run, engine, layout, st = self.run, self.engine, self.layout, self.stage
        now = time.perf_counter()
        loss = dpar.dp_mean(engine.losses.pop(t), layout.dp_group, layout.dp, self.device)
        rec = step_record(t + 1, loss, lr_at(engine.steps.opt, t), run.batch_size * run.seq_len,
                          now - self.t_prev, grad_norm=engine.grad_norms[t], schedule=run.parallel.schedule,
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


def build_stage_opt(prob, job: Job, own: dict, layout):
    """The stage's base optimizer; --optimizer muon with --dp > 1 shards its Newton-Schulz
    over the stage's dp group (gpu_runs.pipeline.sharded_muon), the same update."""
    if layout.dp > 1 and job.opts.model == "llama" and job.run.optimizer == "muon":
        from gpu_runs.pipeline import sharded_muon
        return sharded_muon.base_optimizer(job.run, own, layout.dp_group, layout.dp)
    return prob.build_opt(own)


def stage_moe(model, module, ranges, rank: int, P: int, M: int, device, timeout_s: float):
    """The stage's :class:`gpu_runs.pipeline.moe.StageMoE` for an MoE model (every rank
    creates its process group here), else None."""
    cfg = getattr(model, "cfg", None)
    if cfg is None or not getattr(cfg, "n_experts", 0):
        return None
    return StageMoE(module, rank, P, stage_moe_names(model, ranges), M, cfg.aux_loss_coef, cfg.n_experts,
                    routing_group(P, timeout_s), device)


def actions_of(run, stage: int, P: int, start: int):
    """Stage ``stage``'s action list of the run spec ``run`` from step ``start`` (no evaluations)."""
    return stage_actions(run.parallel.schedule, stage, P, run.parallel.microbatches, run.steps, start,
                         sync_start=run.delay.sync_start, sync_cooldown=run.delay.sync_cooldown,
                         flushed=flushed_steps(run.delay), lag=1 if applies_at_once(run.delay, stage, P) else 2)


def tied_role(model, rank: int, P: int, run, M: int, eval_steps, start: int):
    """The engine's ``tied`` argument when ``lm_head.weight is embed.weight`` and P > 1:
    the first stage owns it; the last stage gets, per ("F", mb) / ("E", step) / ("end", None),
    the index of the owner's message it forwards on, numbered along the first stage's own
    action list (``comm.tied_messages``)."""
    if P == 1 or model.lm_head.weight is not model.embed.weight:
        return None
    if rank == 0:
        return ("owner", "embed.weight", P - 1)
    if rank != P - 1:
        return None
    if run.delay.stale_point:  # pipedream, absolute: stage 0 forwards k on u_{max(0, k - (P-1))}
        version_of = {("F", k): max(0, k - (P - 1)) for k in range(start, run.steps)}
        version_of.update({("E", t): t + 1 for t in eval_steps})
        version_of[("end", None)] = run.steps
        return ("user", "lm_head.weight", 0, version_of)
    acts0 = with_evals(actions_of(run, 0, P, start), run.parallel.schedule, M, [t for t in eval_steps if t >= start])
    return ("user", "lm_head.weight", 0, tied_messages(acts0, lookahead=looks_ahead(run.delay)))


def eval_steps_of(run) -> list[int]:
    """Steps t after which x_{t+1} is evaluated, as the trainer's (``recorder.eval_due``):
    (t + 1) % eval_every == 0, and the last; eval_every 0: the last only."""
    return [t for t in range(run.steps) if eval_due(run.eval_every, t + 1, run.steps)]


def says_refusal(e: ValueError, rank: int, device: str) -> bool:
    """Does this rank print its refusal ``e``? Every rank runs the same checks on the same
    command line and files, so rank 0 says it for all (one line, not one per rank); a rank says
    its own where the check depends on the rank: its lock on ``--out`` (``run_lock``) and the
    memory of its device (one rank per machine, every rank on CUDA: each has its own GPU)."""
    if isinstance(e, (run_lock.RunLockError, run_lock.RunDirUnusable)):
        return True
    if isinstance(e, memory_budget.DoesNotFit):
        return os.environ.get("LOCAL_RANK", str(rank)) == "0" or str(device).startswith("cuda")
    return rank == 0


def main(argv=None) -> int:
    """``python -m gpu_runs.pipeline``: parse, check (:func:`prepare`), start the process
    group, run this rank's stage; exit 2 for a refused setting, 0 for a finished run."""
    args = build_parser().parse_args(argv)
    N = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    tag = f"[pipeline rank {rank}/{N}]"
    try:
        _, P = dpar.grid_shape(N, args.dp)   # P = WORLD_SIZE / D, before the run spec exists
        job, skipped = prepare(args, P, num_layers_of(args))
        check_finished(job)
        if "RANK" not in os.environ or "MASTER_ADDR" not in os.environ:
            raise ValueError(TORCHRUN_HINT)
        lock = lock_out(job, rank, P)     # held until the process exits
    except RunFinished as e:
        if rank == 0:
            print(f"{tag} {e}", flush=True)
        return 0
    except ValueError as e:
        if says_refusal(e, rank, args.device):
            print(f"{tag} refused: {e}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:    # Ctrl-C reaches every rank: rank 0 says it for all
        if rank == 0:
            print(f"{tag} interrupted before training started; nothing was written", file=sys.stderr, flush=True)
        return 130
    run, opts = job.run, job.opts
    if skipped and rank == 0:
        print(f"{tag} skipped unreadable checkpoints ({'; '.join(skipped)}); resuming from the newest "
              f"complete set ({'final' if opts.resume_set is None else f'step {opts.resume_set}'})",
              file=sys.stderr, flush=True)
    watchdog = Watchdog(opts.timeout, tag)
    backend = "nccl" if run.device.startswith("cuda") else "gloo"
    stop = interrupt.OnceInterrupt().install()   # Ctrl-C: one KeyboardInterrupt per rank, then a line
    try:
        try:
            layout = dpar.init_layout(run.parallel.dp, backend, opts.timeout)
            watchdog.beat()
            summary = run_stage(job, layout.stage, P, watchdog, layout.pp_group, layout)
            dist.barrier()
        except BaseException as e:  # noqa: BLE001 - every failure must end the process
            if stop.seen or isinstance(e, KeyboardInterrupt):   # a peer's Ctrl-C ends this rank too
                raise KeyboardInterrupt from None
            if isinstance(e, OSError):     # the file system (disk full, a directory removed): one line, exit 2
                fail(tag, f"{type(e).__name__}: {e}", 2)
            if not isinstance(e, (RuntimeError, ValueError, FloatingPointError)):
                traceback.print_exc()
            fail(tag, f"{type(e).__name__}: {e}")
    except KeyboardInterrupt:    # every rank stops now; rank 0 says where the newest checkpoints are
        if rank == 0:
            print(f"{tag} {interrupted_line(run.out, P, N, argv)}", file=sys.stderr, flush=True)
        os._exit(130)
    stop.restore()
    watchdog.done.set()
    if not opts.quiet and rank == P - 1:  # the last stage of replica 0
        print(f"{tag} done: {run.steps} steps in {summary['wall']:.2f} s", flush=True)
    dist.destroy_process_group()
    if run.diag_every and rank == P - 1:  # replica 0's last stage; every stage's snapshots are on disk (barrier above)
        pipeline_diag.measure(run.out, run, P, device=summary["device"], progress=not opts.quiet)
    if lock is not None:     # a finished rank leaves no lock file (a failed one exits at once: the kernel drops it)
        run_lock.release(lock, Path(run.out) / run_lock.lock_name(rank))
    return 0

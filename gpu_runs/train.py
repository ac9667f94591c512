"""Train the Llama decoder with a real gradient delay: ``python -m gpu_runs.train --config tiny --delay 2bw``.

Delays (docs/design.md §4, ``--delay``), all from the same pure optimizer ``opt = clip_by_global_norm(1.0) -> registry.build(...)``:

- ``sync``:      x_{t+1} = x_t + d_t
- ``2bw``:       x_{t+1} = x_t + d_{t-1}                (``lmo.delay.delayed(opt, 1)``)
- ``2bw --ef``:  x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}    (``lmo.ef_correction.error_feedback``)
- ``pipedream --stages P``: stale-point model: the gradient of step t is taken at the mixed
  point whose stage-s block is x_{t - tau_s}, tau_s = P - 1 - s (``lmo.pipedream``), and the
  update is applied at once; stages from the contiguous layer split (``model.stage_of_params``).

Mitigations: ``--sync-start K`` / ``--sync-cooldown K`` (first / last K steps synchronous) and
``--dc-asgd LAMBDA``. Paper protocol by default: 10% warmup, cosine to 0.1 x peak, weight
decay 0.1, clip 1.0; the peak lr is ``lmo.presets.DEFAULT_LR[optimizer]`` unless ``--lr``.

Every step's batch is ``Batcher(train, B, T, seed).batch(t)``: the data order is the same in
every delay and after a resume. Outputs under ``--out``: ``log.jsonl`` (one line per logged
step), ``config.json``, ``ckpt_step{k}.pt`` (atomic and fsync-ed; model, optimizer + wrapper
state incl. the delay queue / EF buffer and the pipedream history, step, log, configuration;
the newest 3 kept, ``ckpt.pt`` the newest), written at every evaluation by default
(``--ckpt-every N`` / ``0``). ``--resume`` continues bit-for-bit from the newest complete
checkpoint (an unreadable ``ckpt.pt`` is skipped, saying so), refuses a directory without one
or made by a different run, and changes nothing in a finished run; a fresh run refuses a
directory that already holds one (``gpu_runs.checkpoint``), but for a run of the same
configuration that stopped before its first checkpoint, which the same command (or
``--resume``) starts again from step 0. Before it allocates, a run states its memory cost and
refuses one that does not fit the machine, naming the option (``gpu_runs.memory_budget``).
Every file is written atomically (``gpu_runs.verified_files``); a refused run leaves no lock,
temporary file or directory it made. One writer per directory: a
second one, or an ``--out`` that cannot be written, is refused before the data and the model
are built (``gpu_runs.run_lock``); such errors are one line and exit 2. Progress: the first step, every
evaluation and at least every ``gpu_runs.progress.EVERY_S`` seconds, with tokens/s and ETA.
"""
from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lmo.base import apply_updates, load_state_dict, state_dict
from lmo.pipedream import history_load, history_push, history_state_dict, mixed_point
from lmo.lookahead import gradient_point
from lmo.registry import OPTIMIZERS, lr_at
from lmo.variants import KINDS

from gpu_runs import checkpoint, interrupt, memory_budget, run_lock, verified_files
from gpu_runs.cli import add_config_options, show_defaults
from gpu_runs.delay_fields import options_of_kind
from gpu_runs.data import Batcher, get_corpus, val_batches
from gpu_runs.diagnostics import Diagnostics
from gpu_runs.model import Llama, param_count
from gpu_runs.moe import routing_stats
from gpu_runs.progress import StepProgress
from gpu_runs.recorder import RunRecorder, ckpt_due, eval_due, step_record
from gpu_runs.recorder import ckpt_cadence as recorder_cadence
from gpu_runs.recipe import (TrainConfig, bind_data, build_optimizer, check_device_here, evaluate,
                             loss_and_grads, loss_fn, make_history, model_config, resolve_device, resolved, resumed)


@dataclass
class TrainResult:
    log: list
    final_val_loss: float
    config: TrainConfig
    params: dict
    n_params: int
    tokens_per_s: float          # training steps only
    wall_tokens_per_s: float = 0.0  # including eval, diagnostics, logging, checkpoints
    diagnostics: list = field(default_factory=list)


# ----------------------------------------------------------------------------- the loop
def train(cfg: TrainConfig, progress: bool = True, keep_ckpts: int = checkpoint.KEEP) -> TrainResult:
    """Run ``cfg.steps`` steps; returns the log (one dict per logged step), final val loss, params.

    With ``cfg.out`` the run holds the directory's lock (``gpu_runs.run_lock``) from before
    the data and the model are built until it returns: a second writer, or a directory that
    cannot be written, is refused before any work. ``keep_ckpts``: how many
    ``ckpt_step{k}.pt`` to keep (``gpu_runs.checkpoint``)."""
    cfg.validate()
    check_device_here(cfg.device)
    if not cfg.resume:
        cfg = resolved(cfg)     # --resume: the recorded ns_dtype (_train, recipe.resumed)
    out = Path(cfg.out) if cfg.out else None
    created = out is not None and not out.exists()
    fd = run_lock.acquire(out) if out else None
    try:
        if out:   # we are the only writer: a killed writer's temporary files go
            verified_files.remove_stale_temps(out)
        return _train(cfg, progress, out, keep_ckpts)
    finally:      # the lock file goes with the lock, and a directory this call made and left empty
        run_lock.release(fd, out / run_lock.LOCK if out else None)
        if created:
            with contextlib.suppress(OSError):
                out.rmdir()


def _open_run_dir(cfg: TrainConfig, out: Path, dev, say):
    """The checkpoint blob to resume from (None for a fresh run, after refusing a directory
    that holds one); says which unreadable checkpoints it skipped."""
    note = lambda line: print(f"[gpu_runs.train] note: {line}", file=sys.stderr, flush=True)
    if checkpoint.restartable(out, cfg.as_dict()):
        note(f"{out} holds a run of this configuration that stopped before its first checkpoint: "
             f"restarting it from step 0")
        return None
    if not cfg.resume:
        checkpoint.check_fresh(out)
        return None
    blob, f, skipped = checkpoint.find_resume(out, cfg.as_dict(), map_location=dev, note=note)
    checkpoint.point_at(out, f)     # ckpt.pt names the newest complete checkpoint again
    if skipped:
        print(f"[gpu_runs.train] skipped unreadable checkpoints ({'; '.join(skipped)}); falling back to "
              f"{f}, the newest complete one (step {int(blob['step'])})", file=sys.stderr, flush=True)
    say(f"[gpu_runs.train] resumed at step {int(blob['step'])} from {f}")
    return blob


def _finished(cfg: TrainConfig, out: Path, blob: dict, say) -> TrainResult | None:
    """The result of a run whose checkpoint is at its last step and whose result.json
    exists: ``--resume`` of a finished run changes nothing."""
    res = out / "result.json"
    if int(blob["step"]) < cfg.steps or not res.exists():
        return None
    r = json.loads(res.read_text())
    log = json.loads(blob["log"])
    say(f"[gpu_runs.train] {out} finished already ({cfg.steps} steps); nothing to do, nothing rewritten")
    return TrainResult(log=log, final_val_loss=r["final_val_loss"], config=cfg, params=dict(blob["params"]),
                       n_params=r["n_params"], tokens_per_s=r["tokens_per_s"],
                       diagnostics=[x["diagnostics"] for x in log if "diagnostics" in x])


def _train(cfg: TrainConfig, progress: bool, out: Path | None, keep_ckpts: int) -> TrainResult:
    dev = torch.device(resolve_device(cfg.device))
    say = (lambda msg: print(msg, flush=True)) if progress else (lambda msg: None)
    corpus = get_corpus(cfg.data)
    cfg = bind_data(cfg, corpus)   # the tokens' sha256 joins the identity (config.json, resume check)
    blob = _open_run_dir(cfg, out, dev, say) if out else None
    if cfg.resume:     # "auto" becomes what the run recorded, never a new choice of this machine
        cfg = resumed(cfg, (checkpoint.saved_config(out, blob or {}) or {}).get("ns_dtype"))
    if blob is not None and (done := _finished(cfg, out, blob, say)) is not None:
        return done
    amp = dev.type == "cuda"
    mcfg = model_config(cfg, corpus.vocab_size)
    cost = memory_budget.run_cost(cfg, mcfg)     # stated and checked before anything is allocated
    memory_budget.check_fits(cost, memory_budget.machine_available(dev))
    say(f"[gpu_runs.train] {cost.line()}")
    model = Llama(mcfg, seed=cfg.seed).to(dev)
    n_params = param_count(mcfg)
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    opt, inner, _ = build_optimizer(cfg, params)
    state = opt.init(params)
    history = delays = None
    if cfg.delay.stale_point:   # the gradient at a stale point: the loop threads the history
        history, delays = make_history(cfg, model, params)
    fn = loss_fn(model, cfg.compile)
    efn = loss_fn(model, cfg.compile, aux=False) if mcfg.n_experts else fn   # validation: CE only
    batcher = Batcher(corpus.train, cfg.batch_size, cfg.seq_len, cfg.seed, device=dev)
    vbatches = [(x.to(dev), y.to(dev)) for x, y in val_batches(corpus.val, cfg.eval_batches, cfg.batch_size, cfg.seq_len)]
    diag = None
    if cfg.diag_every:
        diag = Diagnostics(cfg.optimizer, params, batcher, cfg.diag_micro, amp)

    log, start = [], 0
    if blob is not None:
        params = {k: blob["params"][k].to(dev) for k in params}
        state = load_state_dict(state, blob["opt"])
        if history is not None:
            history = history_load(blob["history"], delays)
        start, log = int(blob["step"]), json.loads(blob["log"])
    if out:
        verified_files.write_text(out / "config.json", json.dumps(cfg.as_dict(), indent=1))
    tokens_per_step = cfg.batch_size * cfg.seq_len
    meter = StepProgress(cfg.steps, start, tokens_per_step)
    rec_line = lambda r: meter.line(r["step"], f"train {r['train_loss']:.4f} " + (
        f"val {r['val_loss']:.4f} " if "val_loss" in r else "") + f"lr {r['lr']:.2e} ")
    recorder = RunRecorder(out, start, log, say=say if progress else None, line=rec_line, due=meter.due)
    log = recorder.records
    if start == 0:
        flat = cfg.delay.config_fields
        say(f"[gpu_runs.train] {cfg.config}: {n_params:,} params | {cfg.optimizer} {flat['mode']}"
            f"{' +EF' if flat['ef'] else ''} | {corpus!r} | {cfg.steps} steps on {dev}")
    if out:
        say(f"[gpu_runs.train] checkpoints: {out / 'ckpt.pt'} {ckpt_cadence(cfg)}")

    t_run, n_timed = 0.0, 0
    last_train = float("nan")
    t_wall = time.perf_counter()
    for t in range(start, cfg.steps):
        t0 = time.perf_counter()
        x, y = batcher.batch(t)
        # the gradient's point: the stale mix (pipedream), a corrector's look-ahead z_t, else x_t
        point = mixed_point(history, params) if history is not None else gradient_point(state, params)
        loss, grads = loss_and_grads(model, point, x, y, amp, fn)
        routing = routing_stats(model) if mcfg.n_experts else None   # this step's batch, not validation's
        lr_t = lr_at(opt, t)      # the lr the optimizer's own update resolves at step t
        prev, state_prev = params, state          # pure update: the old state stays valid
        updates, state = opt.update(grads, state, params)
        if history is not None:
            history = history_push(history, params, delays)   # remember x_t
        params = apply_updates(params, updates)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        t_run += dt
        n_timed += 1
        last_train = float(loss)
        step = t + 1
        d = None
        if diag is not None and (step % cfg.diag_every == 0 or step == 1):
            d = diag.measure(model, t, prev, params, updates, state, opt, lr_t, state_prev)
        is_eval = eval_due(cfg.eval_every, step, cfg.steps)
        rec = step_record(step, last_train, lr_t, tokens_per_step, dt)
        if is_eval:
            rec["val_loss"] = evaluate(model, params, vbatches, amp, efn)
        keep = is_eval or d is not None or bool(cfg.log_every and step % cfg.log_every == 0)
        if keep and d is not None:
            rec["diagnostics"] = d
        if keep and routing is not None:
            rec["routing"] = routing
        recorder.record(rec, keep=keep, force=is_eval)
        if not math.isfinite(last_train):
            raise FloatingPointError(f"train: loss became {last_train} at step {step}")
        if out and ckpt_due(cfg.ckpt_every, step, is_eval):
            checkpoint.save_run_checkpoint(out, dict(
                params={k: v.detach().cpu() for k, v in params.items()}, opt=state_dict(state),
                history=history_state_dict(history) if history is not None else {}, step=step,
                log=json.dumps(log), config=json.dumps(cfg.as_dict())), keep_ckpts)
    vals = [r["val_loss"] for r in log if "val_loss" in r]
    final = vals[-1] if vals else evaluate(model, params, vbatches, amp, efn)
    res = TrainResult(log=log, final_val_loss=final, config=cfg, params=params, n_params=n_params,
                      tokens_per_s=tokens_per_step * n_timed / max(t_run, 1e-9),
                      wall_tokens_per_s=tokens_per_step * n_timed / max(time.perf_counter() - t_wall, 1e-9),
                      diagnostics=[r["diagnostics"] for r in log if "diagnostics" in r])
    if out:
        verified_files.write_text(out / "result.json", json.dumps(dict(final_val_loss=final, n_params=n_params,
                                                                       tokens_per_s=res.tokens_per_s)))
    return res


def ckpt_cadence(cfg: TrainConfig) -> str:
    cad = recorder_cadence(cfg.ckpt_every)
    if cfg.ckpt_every is None:
        return f"{cad} and at the end"
    return cad or "never (--ckpt-every 0: a killed run cannot resume)"


# ----------------------------------------------------------------------------- CLI
def parse_args(argv=None) -> TrainConfig:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="Delays and outputs: see the module docstring (python -c 'import gpu_runs.train as t; help(t)'). "
                                       "Every option is a field of gpu_runs.recipe.TrainConfig, with its default.")
    add_config_options(p, flags={"mode": ("--delay", "--mode")}, choices={"mode": KINDS, "optimizer": OPTIMIZERS})
    show_defaults(p)
    a = vars(p.parse_args(argv))
    a = {k.replace("-", "_"): v for k, v in a.items()}
    # --delay ef is spelled mode 2bw with ef=True in the run's JSON; --ef stays its alias
    a.update(options_of_kind(a["mode"], a["ef"]))
    try:
        cfg = TrainConfig(**a)   # the delay is built here, once (its rules: lmo.variants.Delay)
        cfg.validate()
        check_device_here(cfg.device)
    except ValueError as e:     # one line (no usage block): the message names the option
        p.exit(2, f"{p.prog}: error: {e}\n")
    return cfg


#: errors that come from the user's input (options, data, run directory): a message, no traceback
USER_ERRORS = (ValueError, OSError, FloatingPointError)


def error_line(e: BaseException) -> str:
    """One line for a user error: the message, and the OS error's kind where it is one."""
    if isinstance(e, OSError):
        what = f"{e.strerror} ({type(e).__name__})" if e.strerror else str(e)
        return f"{what}: {e.filename}" if e.filename else what
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def disk_hint(e: BaseException, cfg: TrainConfig) -> str:
    """What to do after a write failed for want of space or a disk error: run the same
    command again once it is fixed (with ``--resume`` when a checkpoint exists: the run
    continues from it; without one the same command starts it again); "" for other errors."""
    if not (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO)):
        return ""
    again = "the same command" + (" with --resume" if cfg.out and not cfg.resume
                                  and checkpoint.has_checkpoint(Path(cfg.out)) else "")
    return f"; nothing was replaced: free space (or fix the disk), then run {again}"


def main(argv=None) -> int:
    cfg = parse_args(argv)
    try:
        res = train(cfg)
    except USER_ERRORS as e:
        print(f"python -m gpu_runs.train: error: {error_line(e)}{disk_hint(e, cfg)}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:   # nothing new is saved; the newest checkpoint and how to resume
        print(interrupt.trainer_line(cfg.out, argv), file=sys.stderr, flush=True)
        return 130
    print(f"final val loss {res.final_val_loss:.4f} | {res.tokens_per_s:,.0f} tok/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

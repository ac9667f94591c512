"""The pipeline's synchronous schedules against ``torch.distributed.pipelining``.

``python -m gpu_runs.torch_pipelining_ref [--schedules gpipe 1f1b] [--steps 4] ...`` trains
the same model twice per schedule, with P processes over gloo each time:

- ours: ``python -m gpu_runs.pipeline --schedule gpipe|1f1b --model llama`` (its CLI);
- torch's: ``ScheduleGPipe`` / ``Schedule1F1B`` on ``PipelineStage``s holding the same
  layers (stage s: ``split`` of the layers, the embedding on the first, the final norm
  and head on the last), the same x_0 (``gpu_runs.model.Llama(cfg, seed)``), the same
  batches (``gpu_runs.data.Batcher``), M microbatches with the gradient averaged
  (``scale_grads``), global-norm clipping with the all-reduced squared norms,
  c = min(1, max_norm / (||g|| + 1e-6)), and the same ``lmo`` optimizer per stage
  (``lmo.build`` with ``lmo.schedules.WarmupCosine``). A tied head is a copy on the last stage
  whose gradient is sent to the first stage and added to the embedding's before the
  update; the updated weight is sent back (one weight, as in the trainer).

It prints the per-step train losses of both, their largest difference and the step time
of each (measured side by side in one run, the same machine; on a shared machine the
times are noisy). ``tests/gpu_runs/test_reference_torch_pipelining.py`` checks the
losses agree.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpu_runs.pipeline.launch import close_rank_logs, free_port, rank_logs
from gpu_runs import verified_files

SCHEDULES = ("gpipe", "1f1b")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.torch_pipelining_ref", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--schedules", nargs="+", choices=SCHEDULES, default=list(SCHEDULES))
    p.add_argument("--stages", "-P", type=int, default=2)
    p.add_argument("--microbatches", "-M", type=int, default=2)
    p.add_argument("--config", default="tiny")
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0, help="global-norm clip (0: off)")
    p.add_argument("--warmup-frac", type=float, default=0.1)
    p.add_argument("--final-frac", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per launch")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)   # internal: one torch rank
    return p


# ----------------------------------------------------------------------------- launching
def _rank_env(r: int, nproc: int, port: int) -> dict:
    return dict(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc),
                MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))


def _forked_child(module: str, argv: list[str], env: dict, log: str) -> None:
    import importlib

    import torch
    torch.set_num_threads(1)          # a forked child must not enter the parent's OpenMP pool
    os.environ.update(env)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    try:
        rc = importlib.import_module(module).main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    except BaseException:             # noqa: BLE001 - reported through the log and exit code
        import traceback
        traceback.print_exc()
        rc = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc or 0)


def _launch(module: str, argv: list[str], nproc: int, timeout: float, fork: bool = False) -> None:
    """Run ``module.main(argv)`` as ``nproc`` ranks with torchrun's environment: fresh
    ``python -m module`` interpreters, or (``fork``, POSIX) children forked from this
    process, which skips the interpreter start and the imports (for tests)."""
    port, procs, fails = free_port(), [], []
    deadline = time.monotonic() + timeout
    if fork:
        import multiprocessing as mp
        tmp = rank_logs()
        logs = [str(Path(tmp) / f"rank{r}.log") for r in range(nproc)]
        procs = [mp.get_context("fork").Process(target=_forked_child,
                                                  args=(module, argv, _rank_env(r, nproc, port), logs[r]))
                 for r in range(nproc)]
        for p in procs:
            p.start()
        for r, p in enumerate(procs):
            p.join(max(0.1, deadline - time.monotonic()))
            if p.exitcode is None:
                p.kill()
                p.join()
            if p.exitcode:
                fails.append(f"rank {r} exited {p.exitcode}:\n{Path(logs[r]).read_text()[-3000:]}")
        if (note := close_rank_logs(tmp, bool(fails))):
            fails.append(note)
    else:
        for r in range(nproc):
            env = dict(os.environ, **_rank_env(r, nproc, port))
            procs.append(subprocess.Popen([sys.executable, "-m", module, *argv], env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        for r, p in enumerate(procs):
            try:
                out, _ = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            if p.returncode:
                fails.append(f"rank {r} exited {p.returncode}:\n{out[-3000:]}")
    if fails:
        raise RuntimeError(f"{module} {' '.join(argv[:2])} failed:\n" + "\n".join(fails))


def run_ours(a, schedule: str, out: Path, fork: bool = False) -> dict:
    """Our pipeline through its CLI; {"loss": [...], "step_ms": median step time}."""
    argv = ["--schedule", schedule, "--model", "llama", "--config", a.config,
            "-M", str(a.microbatches), "--optimizer", a.optimizer, "--lr", str(a.lr),
            "--weight-decay", str(a.weight_decay), "--clip", str(a.clip), "--warmup-frac", str(a.warmup_frac),
            "--final-frac", str(a.final_frac), "--steps", str(a.steps), "--batch-size", str(a.batch_size),
            "--seq-len", str(a.seq_len), "--seed", str(a.seed), "--eval-every", "0", "--out", str(out), "--quiet"]
    _launch("gpu_runs.pipeline", argv, a.stages, a.timeout, fork)
    recs = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines() if line.strip()]
    recs.sort(key=lambda r: r["step"])
    times = sorted(r["step_time"] for r in recs[1:]) or [recs[0]["step_time"]]
    return {"loss": [r["train_loss"] for r in recs], "step_ms": 1e3 * times[len(times) // 2]}


def run_torch(a, schedule: str, out: Path, fork: bool = False) -> dict:
    """torch.distributed.pipelining's schedule on the same problem; same return as run_ours."""
    cfg = out / "ref_args.json"
    out.mkdir(parents=True, exist_ok=True)
    verified_files.write_text(cfg, json.dumps(dict(vars(a), schedule=schedule, out=str(out), worker=None)))
    _launch("gpu_runs.torch_pipelining_ref", ["--worker", str(cfg)], a.stages, a.timeout, fork)
    return json.loads((out / "ref_result.json").read_text())


# ----------------------------------------------------------------------------- one torch rank
def _worker(cfg_path: str) -> int:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    import lmo
    from lmo.schedules import WarmupCosine
    from gpu_runs.data import Batcher, get_corpus
    from gpu_runs.model import Llama, get_config
    from gpu_runs.pipeline.stage_module import split_layers

    a = argparse.Namespace(**json.loads(Path(cfg_path).read_text()))
    torch.set_num_threads(1)
    rank, P = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if P < 2:
        raise ValueError(f"--stages must be >= 2, got {P}")
    dist.init_process_group("gloo", rank=rank, world_size=P)
    first, last = rank == 0, rank == P - 1
    corpus = get_corpus("stdlib")
    vocab = int(math.ceil(corpus.vocab_size / 64) * 64) if corpus.vocab_size > 256 else corpus.vocab_size
    mcfg = get_config(a.config, vocab_size=vocab, max_seq_len=max(a.seq_len, get_config(a.config).max_seq_len))
    model = Llama(mcfg, seed=a.seed)
    layers = split_layers(mcfg.n_layers, P)[rank]
    tied = model.lm_head.weight is model.embed.weight

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = model.embed if first else None
            self.layers = nn.ModuleList(model.layers[i] for i in layers)
            self.norm = model.norm if last else None
            self.head = None
            if last:
                self.head = nn.Linear(mcfg.d_model, mcfg.vocab_size, bias=False)
                self.head.weight = (nn.Parameter(model.embed.weight.detach().clone()) if tied and not first
                                    else model.lm_head.weight)

        def forward(self, h):
            if self.embed is not None:
                h = self.embed(h)
            for layer in self.layers:
                h = layer(h, model.rope_cos, model.rope_sin)
            return self.head(self.norm(h)) if last else h

    sub = Stage()
    names = {id(p): n for n, p in model.named_parameters()}
    own = {names[id(p)]: p for p in sub.parameters() if id(p) in names}       # tied copy excluded
    stage = PipelineStage(sub, rank, P, torch.device("cpu"))
    loss_fn = lambda logits, y: F.cross_entropy(logits.flatten(0, -2).float(), y.flatten())  # noqa: E731
    sched = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[a.schedule](stage, n_microbatches=a.microbatches,
                                                                        loss_fn=loss_fn)
    opt = lmo.build(a.optimizer, own, lr=WarmupCosine(a.lr, a.steps, a.warmup_frac, a.final_frac),
                    weight_decay=a.weight_decay)
    state = opt.init({k: v.detach() for k, v in own.items()})
    batcher = Batcher(corpus.train, a.batch_size, a.seq_len, a.seed)
    losses, times = [], []
    for t in range(a.steps):
        t0 = time.perf_counter()
        x, y = batcher.batch(t)
        for p in sub.parameters():
            p.grad = None
        mb_losses: list = []
        if first:
            sched.step(x)
        else:
            sched.step(target=y, losses=mb_losses) if last else sched.step()
        if tied and last:
            dist.send(sub.head.weight.grad.contiguous(), 0)
        if tied and first:
            buf = torch.empty_like(model.embed.weight)
            dist.recv(buf, P - 1)
            model.embed.weight.grad += buf
        grads = {k: (v.grad if v.grad is not None else torch.zeros_like(v)) for k, v in own.items()}
        sq = torch.tensor([sum(float(g.double().pow(2).sum()) for g in grads.values())], dtype=torch.float64)
        dist.all_reduce(sq)
        c = min(1.0, a.clip / (math.sqrt(float(sq)) + 1e-6)) if a.clip > 0 else 1.0
        grads = {k: g * c for k, g in grads.items()}
        with torch.no_grad():
            upd, state = opt.update(grads, state, {k: v.detach() for k, v in own.items()})
            for k, v in own.items():
                v.add_(upd[k].to(v.dtype))
            if tied and first:
                dist.send(model.embed.weight.detach().contiguous(), P - 1)
            if tied and last:
                buf = torch.empty_like(sub.head.weight)
                dist.recv(buf, 0)
                sub.head.weight.copy_(buf)
        times.append(time.perf_counter() - t0)
        if last:
            losses.append(float(sum(float(v) for v in mb_losses) / len(mb_losses)))
    if last:
        ts = sorted(times[1:]) or times
        verified_files.write_text(Path(a.out) / "ref_result.json", json.dumps({"loss": losses, "step_ms": 1e3 * ts[len(ts) // 2]}))
    dist.destroy_process_group()
    return 0


# ----------------------------------------------------------------------------- CLI
def compare(a, fork: bool = False) -> dict:
    """schedule -> {"ours": ..., "torch": ..., "max_abs_diff": ...} for every schedule of ``a``
    (``a``: parsed arguments of this CLI; ``fork``: fork the ranks from this process)."""
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in a.schedules:
            ours = run_ours(a, s, Path(tmp) / f"ours_{s}", fork)
            ref = run_torch(a, s, Path(tmp) / f"torch_{s}", fork)
            diff = max(abs(x - y) for x, y in zip(ours["loss"], ref["loss"]))
            res[s] = {"ours": ours, "torch": ref, "max_abs_diff": diff}
    return res


def main(argv=None) -> int:
    a = build_parser().parse_args(argv)
    if a.worker:
        return _worker(a.worker)
    res = compare(a)
    print(f"{a.config}, P={a.stages}, M={a.microbatches}, {a.steps} steps of {a.batch_size}x{a.seq_len} "
          f"tokens, {a.optimizer} lr {a.lr}, gloo on CPU (step times: median, shared machine => noisy)")
    print(f"{'schedule':<9}{'ours ms/step':>14}{'torch ms/step':>15}{'ours/torch':>12}{'max |loss diff|':>17}")
    for s, r in res.items():
        o, t = r["ours"]["step_ms"], r["torch"]["step_ms"]
        print(f"{s:<9}{o:>14.1f}{t:>15.1f}{o / t:>12.2f}{r['max_abs_diff']:>17.2e}")
        print(f"  losses ours : {' '.join(f'{v:.6f}' for v in r['ours']['loss'])}")
        print(f"  losses torch: {' '.join(f'{v:.6f}' for v in r['torch']['loss'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

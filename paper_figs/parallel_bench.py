"""Is it faster to train two runs side by side (1 thread each) than one after the other?

``python -m paper_figs.parallel_bench [--steps N] [--config tiny]`` trains the same two
short runs (AdamW sync and 2BW) twice with the real trainer -- one after the other with
``--threads`` torch threads, then in two spawned processes with 1 thread each -- and
prints both wall times and their ratio. The quick / full profiles use ``jobs=2`` because
of this measurement (see the report); rerun it on a new machine before trusting it there.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor


def _one(settings: dict, threads: int) -> float:
    import torch

    from gpu_runs.recipe import TrainConfig

    from gpu_runs.train import train
    torch.set_num_threads(threads)
    t0 = time.time()
    train(TrainConfig(**settings), progress=False)
    return time.time() - t0


def main(argv=None) -> int:
    from .cli import HelpFormatter
    ap = argparse.ArgumentParser(prog="python -m paper_figs.parallel_bench", description=__doc__,
                                 formatter_class=HelpFormatter)
    ap.add_argument("--steps", type=int, default=100, help="training steps per run")
    ap.add_argument("--config", default="tiny", help="model config")
    ap.add_argument("--threads", type=int, default=2, help="threads of the one-after-the-other runs")
    args = ap.parse_args(argv)
    base = {"config": args.config, "optimizer": "adamw", "steps": args.steps, "batch_size": 32,
            "seq_len": 64, "eval_every": args.steps, "device": "cpu"}
    runs = [{**base, "mode": "sync"}, {**base, "mode": "2bw"}]
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:  # same process start-up cost as below
        t0 = time.time()
        for r in runs:
            ex.submit(_one, r, args.threads).result()
        serial = time.time() - t0
    with ProcessPoolExecutor(2, mp_context=ctx) as ex:
        t0 = time.time()
        list(ex.map(_one, runs, [1, 1]))
        parallel = time.time() - t0
    print(f"two {args.config} runs of {args.steps} steps (batch 32x64):")
    print(f"  one after the other, {args.threads} threads: {serial:7.1f} s")
    print(f"  side by side, 1 thread each:        {parallel:7.1f} s")
    print(f"  speed-up of side by side: {serial / parallel:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

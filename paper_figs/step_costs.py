"""Measure each optimizer's training-step cost relative to AdamW: ``python -m paper_figs.step_costs``.

For each optimizer of Table 1, trains ``--steps`` steps of ``--config`` (batch 32 x 64, no
evaluation) with the real trainer, in ``--rounds`` rounds that interleave the optimizers so
load drifts hit all of them alike, and prints the median step time and its ratio to
AdamW's: the numbers to paste into ``paper_figs.estimates.STEP_FACTOR``. Ratios measured
side by side in one process are meaningful on a shared machine; absolute times are not.
"""
from __future__ import annotations

import argparse
import statistics


def measure(config: str, optimizers: list[str], steps: int, rounds: int, threads: int) -> dict:
    """{optimizer: [seconds per step, one per round]} (timed steps only, TrainResult.tokens_per_s)."""
    import torch

    from gpu_runs.train import TrainConfig, train
    torch.set_num_threads(threads)
    out = {o: [] for o in optimizers}
    for r in range(rounds):
        for o in optimizers:
            cfg = TrainConfig(config=config, optimizer=o, steps=steps, batch_size=32, seq_len=64,
                              eval_every=0, log_every=0, eval_batches=1)
            res = train(cfg, progress=False)
            out[o].append(32 * 64 / res.tokens_per_s)
            print(f"round {r + 1}/{rounds} {config} {o}: {out[o][-1] * 1e3:.0f} ms/step", flush=True)
    return out


def main(argv=None) -> int:
    from .cli import HelpFormatter
    from .profiles import TABLE1_OPTIMIZERS
    ap = argparse.ArgumentParser(prog="python -m paper_figs.step_costs", description=__doc__.split("\n\n")[0],
                                 formatter_class=HelpFormatter)
    ap.add_argument("--config", default="tiny", help="model config")
    ap.add_argument("--steps", type=int, default=8, help="training steps per measurement")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (the median is kept)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--optimizers", nargs="+", default=list(TABLE1_OPTIMIZERS), help="optimizers to time")
    a = ap.parse_args(argv)
    if "adamw" not in a.optimizers:
        ap.error("--optimizers: must include adamw (the reference)")
    times = measure(a.config, a.optimizers, a.steps, a.rounds, a.threads)
    med = {o: statistics.median(t) for o, t in times.items()}
    print(f"\n{a.config}, batch 32x64, {a.threads} thread(s), median of {a.rounds} rounds of {a.steps} steps:")
    print(f"{'optimizer':<10}{'ms/step':>10}{'x AdamW':>10}")
    for o in a.optimizers:
        print(f"{o:<10}{med[o] * 1e3:>10.0f}{med[o] / med['adamw']:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

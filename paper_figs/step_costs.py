"""Measure each optimizer's training-step cost relative to AdamW: ``python -m paper_figs.step_costs``.

For each model config of ``--config`` (one or several) and each optimizer, trains
``--steps`` steps (batch 32 x 64, no evaluation) with the real trainer, in ``--rounds``
rounds that interleave every (config, optimizer) pair so load drifts hit all of them alike,
and prints the median step time, its ratio to the same config's AdamW step (the numbers to
paste into ``paper_figs.records.estimates.STEP_FACTOR``) and, with several configs, its ratio to the
first config's AdamW step (``SEC_PER_STEP``, e.g. ``--config tiny tiny_moe``). Ratios
measured side by side in one process are meaningful on a shared machine; absolute times
are not.
"""
from __future__ import annotations

import argparse
import statistics


def measure(configs: list[str], optimizers: list[str], steps: int, rounds: int, threads: int) -> dict:
    """{(config, optimizer): [seconds per step, one per round]} (timed steps only,
    TrainResult.tokens_per_s)."""
    import torch

    from gpu_runs.recipe import TrainConfig

    from gpu_runs.train import train
    torch.set_num_threads(threads)
    out = {(c, o): [] for c in configs for o in optimizers}
    for r in range(rounds):
        for c in configs:
            for o in optimizers:
                cfg = TrainConfig(config=c, optimizer=o, steps=steps, batch_size=32, seq_len=64,
                                  eval_every=0, log_every=0, eval_batches=1)
                res = train(cfg, progress=False)
                out[c, o].append(32 * 64 / res.tokens_per_s)
                print(f"round {r + 1}/{rounds} {c} {o}: {out[c, o][-1] * 1e3:.0f} ms/step", flush=True)
    return out


def main(argv=None) -> int:
    from .cli import HelpFormatter
    from .records.profiles import TABLE1_OPTIMIZERS
    ap = argparse.ArgumentParser(prog="python -m paper_figs.step_costs", description=__doc__.split("\n\n")[0],
                                 formatter_class=HelpFormatter)
    ap.add_argument("--config", nargs="+", default=["tiny"],
                    help="model config(s); with several, also each one's ratio to the first's AdamW step")
    ap.add_argument("--steps", type=int, default=8, help="training steps per measurement")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (the median is kept)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--optimizers", nargs="+", default=list(TABLE1_OPTIMIZERS), help="optimizers to time")
    a = ap.parse_args(argv)
    if "adamw" not in a.optimizers:
        ap.error("--optimizers: must include adamw (the reference)")
    times = measure(a.config, a.optimizers, a.steps, a.rounds, a.threads)
    med = {k: statistics.median(t) for k, t in times.items()}
    ref = a.config[0]
    print(f"\nbatch 32x64, {a.threads} thread(s), median of {a.rounds} rounds of {a.steps} steps:")
    print(f"{'config':<10}{'optimizer':<10}{'ms/step':>10}{'x AdamW':>10}{f'x {ref} AdamW':>16}")
    for c in a.config:
        for o in a.optimizers:
            print(f"{c:<10}{o:<10}{med[c, o] * 1e3:>10.0f}{med[c, o] / med[c, 'adamw']:>10.2f}"
                  f"{med[c, o] / med[ref, 'adamw']:>16.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

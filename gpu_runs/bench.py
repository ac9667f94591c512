"""Tokens/s per delay, side by side in one process: ``python -m gpu_runs.bench``.

Each delay kind of ``lmo.variants.KINDS`` (sync, 2bw, ef, pipedream with P=2) and sync with
diagnostics every ``--diag-every`` (``sync+diag``)
runs ``--steps`` steps (timed end to end: eval, diagnostics included) of the same config, in rounds that interleave the delays so load
drifts hit all of them alike; prints tokens/s and the ratio to sync (the overhead of the delay
queue, the EF buffer, the history and the diagnostics). The first step of each run is
included (warm-up is not separated out).
"""
from __future__ import annotations

import argparse
import sys

from lmo.variants import KINDS, SYNC, Delay

from gpu_runs.cli import show_defaults
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import train


def runs(diag_every: int) -> dict:
    """name -> TrainConfig fields: every delay kind (pipedream with P = 2), and sync+diag."""
    out = {k: dict(delay=Delay(k), stages=2) for k in KINDS}   # pipedream's tau 1: P = 2
    out[f"{SYNC}+diag"] = dict(diag_every=diag_every)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--config", default="tiny")
    p.add_argument("--optimizer", default="muon")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--device", default="cpu")
    p.add_argument("--diag-every", type=int, default=10)
    show_defaults(p)
    a = p.parse_args(argv)
    delays = runs(a.diag_every)
    tps = {k: [] for k in delays}
    for r in range(a.rounds):
        for name, kw in delays.items():
            cfg = TrainConfig(config=a.config, optimizer=a.optimizer, steps=a.steps, batch_size=a.batch_size,
                              seq_len=a.seq_len, device=a.device, eval_every=0, log_every=0, **kw)
            tps[name].append(train(cfg, progress=False).wall_tokens_per_s)
            print(f"round {r + 1}/{a.rounds} {name}: {tps[name][-1]:,.0f} tok/s", flush=True)
    base = max(tps[SYNC])
    print(f"\n{'delay':<12}{'tok/s (best)':>14}{'vs sync':>10}")
    for name, v in tps.items():
        print(f"{name:<12}{max(v):>14,.0f}{max(v) / base:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""python -m verify.bench: batched Monte Carlo vs a per-seed Python loop, side by side.

Measures steps x seeds per second of verify.montecarlo.run with R seeds in one tensor
and of the same run done one seed at a time (each with its own generator), on an m x m
quadratic (spectral and Frobenius geometry) (delayed variant, Gaussian noise), and prints the ratio. The loop is
timed on a subset of the seeds (its throughput does not depend on R). Then times
``python -m verify --quick`` in a subprocess.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

import torch

from lmo.geometry import get_geometry
from lmo.variants import DELAYED

from .montecarlo import per_seed_loop, run
from .noise import Gaussian
from .problems import random_quadratic


def throughput(R: int, m: int, steps: int, loop_seeds: int, geometry: str = "spectral") -> dict:
    p = random_quadratic(m, m, get_geometry(geometry), torch.Generator().manual_seed(0))
    noise = Gaussian(0.5)
    run(p, noise, DELAYED, 0.05, 0.1, 2, 2)  # warm-up
    t = time.perf_counter()
    run(p, noise, DELAYED, 0.05, 0.1, steps, R, stride=steps)
    batched = steps * R / (time.perf_counter() - t)
    t = time.perf_counter()
    per_seed_loop(p, noise, DELAYED, 0.05, 0.1, steps, loop_seeds)
    loop = steps * loop_seeds / (time.perf_counter() - t)
    return dict(geometry=geometry, R=R, m=m, steps=steps, batched_steps_seeds_per_s=batched,
                loop_steps_seeds_per_s=loop, ratio=batched / loop)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=256)
    ap.add_argument("--m", type=int, default=32)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--loop-seeds", type=int, default=16)
    ap.add_argument("--skip-report", action="store_true", help="do not time python -m verify --quick")
    a = ap.parse_args(argv)
    print(f"[bench] batched R={a.seeds} vs per-seed loop ({a.loop_seeds} seeds), {a.m}x{a.m}, {a.steps} steps",
          flush=True)
    for geo in ("spectral", "frobenius"):
        r = throughput(a.seeds, a.m, a.steps, a.loop_seeds, geo)
        print(f"{geo:9s} batched: {r['batched_steps_seeds_per_s']:.0f} steps*seeds/s   loop: "
              f"{r['loop_steps_seeds_per_s']:.0f} steps*seeds/s   ratio: {r['ratio']:.1f}x")
    if not a.skip_report:
        print("[bench] timing python -m verify --quick ...", flush=True)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "verify", "--quick"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        print(f"python -m verify --quick: {time.perf_counter() - t:.1f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

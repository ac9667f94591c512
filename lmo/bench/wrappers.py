"""Overhead of the delay / error-feedback wrappers over the bare optimizer step, and their memory.

Measured side by side in one run (interleaved repeats, median), on the matrix shapes of a
small Llama-style model. Printed as ratios to the bare step; no assertion on time.
"""
from __future__ import annotations

import statistics
import time

import torch

from lmo.adam_family import adamw
from lmo.base import state_dict
from lmo.muon_family import muon
from lmo.variants import EF, SYNC, TWO_BW, Delay


def llama_like_shapes(d: int = 256, layers: int = 4, mlp: int = 688) -> dict:
    shapes = {}
    for i in range(layers):
        for n in ("wq", "wk", "wv", "wo"):
            shapes[f"layers.{i}.attn.{n}"] = (d, d)
        shapes[f"layers.{i}.mlp.w1"] = (mlp, d)
        shapes[f"layers.{i}.mlp.w3"] = (mlp, d)
        shapes[f"layers.{i}.mlp.w2"] = (d, mlp)
    return shapes


def state_bytes(state) -> int:
    return sum(v.numel() * v.element_size() for v in state_dict(state).values())


def _step_time(opt, params, grads, repeats):
    s = opt.init(params)
    for _ in range(2):
        _, s = opt.update(grads, s, params)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _, s = opt.update(grads, s, params)
        times.append(time.perf_counter() - t0)
    return times, s


def main(quick: bool = False) -> None:
    shapes = llama_like_shapes(128, 2, 344) if quick else llama_like_shapes()
    g = torch.Generator().manual_seed(0)
    params = {k: torch.randn(*s, generator=g) for k, s in shapes.items()}
    grads = {k: torch.randn(*s, generator=g) for k, s in shapes.items()}
    model_bytes = sum(v.numel() * v.element_size() for v in params.values())
    repeats = 3 if quick else 10
    print(f"\n== delay / EF wrapper overhead ({len(params)} matrices, {model_bytes / 2**20:.1f} MiB of params) ==")
    print(f"{'optimizer':10s} {'wrapper':16s} {'step ms':>9s} {'ratio':>7s} {'state MiB':>10s} {'extra buffers':>14s}")
    for name, make in (("muon", lambda: muon(0.02)), ("adamw", lambda: adamw(1e-3))):
        variants = {v: Delay(v).wrap(make()) for v in (SYNC, TWO_BW, EF)}   # sync: the bare optimizer
        times = {k: [] for k in variants}
        states = {}
        for _ in range(3):                      # interleave the variants so drift hits all alike
            for k, opt in variants.items():
                ts, states[k] = _step_time(opt, params, grads, repeats)
                times[k] += ts
        base_t = statistics.median(times[SYNC])
        base_b = state_bytes(states[SYNC])
        for k in variants:
            t = statistics.median(times[k])
            extra = (state_bytes(states[k]) - base_b) / model_bytes
            print(f"{name:10s} {k:16s} {1e3 * t:9.2f} {t / base_t:7.3f} {state_bytes(states[k]) / 2**20:10.1f} {extra:14.2f}")
    print("ratio = wrapped step time / sync (bare) step time (target < 1.05); extra buffers = extra state in model sizes "
          "(expected: 2bw 1, ef 2 = queue + one EF buffer)")


if __name__ == "__main__":
    main()

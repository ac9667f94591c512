"""Optimizer zoo benchmark: step time and optimizer-state memory, as ratios to AdamW.

One fixed set of parameter shapes, those of a small Llama-style model (default: 4 layers,
d=256, SwiGLU hidden 768, vocab 4096, untied embedding and head; ``quick``: 2 layers,
d=64, vocab 512). Every optimizer runs the same fixed random gradients in the same
process, one after another, so the ratios are side by side; absolute times depend on the
machine and its load. Matrix optimizers (muon, normuon, adamuon) get the hidden matrices
and AdamW the rest, as ``lmo.registry.build`` does.

Run: ``python -m lmo.bench --zoo [--quick]``.
"""
from __future__ import annotations

import statistics
import time

import torch

from lmo.base import apply_updates, state_dict
from lmo.presets import DEFAULT_LR

ZOO = ["adamw", "nadam", "adan", "mars", "soap", "muon", "normuon", "adamuon", "lion", "signum",
       "normalized_sgd"]


def llama_shapes(layers: int = 4, d: int = 256, ffn: int = 768, vocab: int = 4096) -> dict:
    """name -> shape of a Llama-style model's parameters (RMSNorm gains, no biases)."""
    shapes = {"embed.weight": (vocab, d)}
    for i in range(layers):
        p = f"layers.{i}."
        shapes.update({p + "attn_norm.weight": (d,), p + "q.weight": (d, d), p + "k.weight": (d, d),
                       p + "v.weight": (d, d), p + "o.weight": (d, d), p + "mlp_norm.weight": (d,),
                       p + "gate.weight": (ffn, d), p + "up.weight": (ffn, d), p + "down.weight": (d, ffn)})
    shapes.update({"norm.weight": (d,), "lm_head.weight": (vocab, d)})
    return shapes


def build(name: str, params: dict):
    """The optimizer as the training code builds it (``lmo.registry.build`` with preset lr)."""
    from lmo.registry import build as registry_build
    return registry_build(name, params, lr=DEFAULT_LR[name])


def state_bytes(state) -> int:
    return sum(t.numel() * t.element_size() for t in state_dict(state).values())


def measure(name: str, params: dict, grads: list, repeats: int) -> dict:
    opt = build(name, params)
    state = opt.init(params)
    p = dict(params)
    for g in grads[:3]:  # warm-up (SOAP's first call only initializes its preconditioner)
        u, state = opt.update(g, state, p)
        p = apply_updates(p, u)
    times = []
    for r in range(repeats):
        g = grads[r % len(grads)]
        t0 = time.perf_counter()
        u, state = opt.update(g, state, p)
        p = apply_updates(p, u)
        times.append(time.perf_counter() - t0)
    # mean, not median: SOAP refreshes its eigenbasis every 10th step and that cost counts
    return {"time": statistics.fmean(times), "bytes": state_bytes(state)}


def main(quick: bool = False) -> dict:
    shapes = llama_shapes(2, 64, 192, 512) if quick else llama_shapes()
    repeats = 3 if quick else 10
    gen = torch.Generator().manual_seed(0)
    params = {k: 0.02 * torch.randn(s, generator=gen) for k, s in shapes.items()}
    grads = [{k: torch.randn(s, generator=gen) for k, s in shapes.items()} for _ in range(4)]
    n = sum(v.numel() for v in params.values())
    print(f"optimizer zoo: {len(shapes)} tensors, {n / 1e6:.2f}M params, float32, "
          f"torch threads={torch.get_num_threads()}, mean of {repeats} steps")
    results = {}
    for name in ZOO:
        print(f"  measuring {name} ...", flush=True)
        try:
            results[name] = measure(name, params, grads, repeats)
        except (ImportError, KeyError) as e:  # a constructor not in this tree yet
            results[name] = {"error": f"{type(e).__name__}: {e}"}
    base = results.get("adamw", {})
    print(f"\n{'optimizer':<16}{'step ms':>10}{'x AdamW':>10}{'state MiB':>12}{'x AdamW':>10}")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:<16}  unavailable ({r['error']})")
            continue
        tr = r["time"] / base["time"] if "time" in base else float("nan")
        mr = r["bytes"] / base["bytes"] if base.get("bytes") else float("nan")
        print(f"{name:<16}{1e3 * r['time']:>10.2f}{tr:>10.2f}{r['bytes'] / 2**20:>12.2f}{mr:>10.2f}")
    return results


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller model, fewer repeats")
    main(quick=ap.parse_args().quick)

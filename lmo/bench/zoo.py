"""Optimizer zoo benchmark: step time and optimizer-state memory, as ratios to AdamW.

One fixed set of parameter shapes, those of a small Llama-style model (default: 4 layers,
d=256, SwiGLU hidden 768, vocab 4096, untied embedding and head; ``quick``: 2 layers,
d=64, vocab 512). Every optimizer runs the same fixed random gradients in the same
process, one after another, so the ratios are side by side; absolute times depend on the
machine and its load. Matrix optimizers (muon, normuon, adamuon) get the hidden matrices
and AdamW the rest, as ``lmo.registry.build`` does.

Second table: a whole training step (forward + backward + update) on the ``tiny``
decoder's shapes (lmo.bench.tiny_lm), every optimizer interleaved round by round, as a
ratio to AdamW's step; the Muon rows also with the NS dtype forced to bf16 and to fp32
beside the per-machine choice (``choose_ns_dtype``). Target: Muon <= 1.3x AdamW on CPU.

Run: ``python -m lmo.bench --zoo [--quick]``.
"""
from __future__ import annotations

import statistics
import time

import torch

from lmo.base import apply_updates, state_dict
from lmo.bench.tiny_lm import grads_of, tiny_params
from lmo.ns_dtype import ns_dtype_decision
from lmo.presets import DEFAULT_LR, PRESETS

#: every registered optimizer but scion, in the records' order (the benchmark's set before the records)
ZOO = [name for name in PRESETS if name != "scion"]


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


def build(name: str, params: dict, **kw):
    """The optimizer as the training code builds it (``lmo.registry.build`` with preset lr)."""
    from lmo.registry import build as registry_build
    return registry_build(name, params, lr=DEFAULT_LR[name], **kw)


# row name -> (optimizer name, extra keywords) of the training-step table
STEP_ROWS = {name: (name, {}) for name in ZOO}
STEP_ROWS.update({"muon[ns bf16]": ("muon", dict(ns_dtype=torch.bfloat16)),
                  "muon[ns fp32]": ("muon", dict(ns_dtype=torch.float32))})


def train_steps(rows: dict, rounds: int, steps: int, batch: int = 16, seq: int = 64) -> dict:
    """row -> mean seconds of one training step (forward + backward + update + apply) on
    the tiny decoder, rows interleaved round by round so load drifts hit all alike."""
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 256, (batch, seq + 1), generator=gen)
    runs = {}
    for row, (name, kw) in rows.items():
        p = tiny_params()
        opt = build(name, p, **kw)
        runs[row] = [opt, opt.init(p), p]
    times = {row: [] for row in rows}
    for r in range(rounds + 1):                     # round 0 is warm-up, not counted
        for row, run in runs.items():
            opt, state, p = run
            t0 = time.perf_counter()
            for _ in range(steps):
                _, g = grads_of(p, tokens)
                u, state = opt.update(g, state, p)
                p = apply_updates(p, u)
            if r:
                times[row].append((time.perf_counter() - t0) / steps)
            run[1], run[2] = state, p
    return {row: statistics.fmean(ts) for row, ts in times.items()}


def main_train_step(quick: bool = False) -> dict:
    dtype, why = ns_dtype_decision("cpu")
    print(f"\ntraining step on the tiny decoder (forward + backward + update), batch 16 x 64 tokens; "
          f"NS dtype choice here: {str(dtype).replace('torch.', '')} ({why})")
    rows = {k: v for k, v in STEP_ROWS.items() if not quick or v[0] in ("adamw", "muon")}
    res = train_steps(rows, rounds=2 if quick else 4, steps=2 if quick else 4)
    print(f"{'optimizer':<16}{'step ms':>10}{'x AdamW':>10}")
    for row, t in res.items():
        print(f"{row:<16}{1e3 * t:>10.2f}{t / res['adamw']:>10.2f}")
    return res


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
    results["train_step"] = main_train_step(quick)
    return results


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller model, fewer repeats")
    main(quick=ap.parse_args().quick)

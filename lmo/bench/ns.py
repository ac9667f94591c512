"""Newton-Schulz benchmark: lmo.newton_schulz (lmo.polar_factor) vs exact SVD polar vs torch.optim.Muon's NS.

For each shape (m, n) and dtype, measured side by side in one run (interleaved, best
of r repeats, so shared-machine noise hits all columns alike):
- ``ns``: ``newton_schulz(G, 5, "keller", dtype=dtype)``;
- ``gram``: the same with ``method="gram"`` (Gram NS, one restart; faster when the
  matrix is far from square: 1:4 and 4:1 shapes);
- ``bound``: 5 x the time of one NS step's three plain matmuls (X X^T, A A, B X) in the
  same dtype -- the matmul bound of 5 (4 m^2 n + 2 m^3) FLOPs (30 n^3 for square);
- ``torch``: torch.optim._muon._zeropower_via_newtonschulz (always bf16), if present;
- ``svd``: exact polar(G) via torch.linalg.svd (fp32).
Columns ``ns/bound`` (< 1 is possible: the symmetric products are half-computed),
``ns/torch``, ``gram/ns``, ``gram/torch``, and the achieved GFLOP/s as a fraction of the
measured matmul rate. Targets: bf16 ns/torch <= 0.8 at n = 1024; gram/ns < 1 on 1:4.
Run: ``python -m lmo.bench`` (or ``--quick``).
"""
from __future__ import annotations

import time

import torch

from lmo.polar_factor import NS_COEFFICIENTS, newton_schulz, ns_inexactness, polar
from lmo.ns_dtype import ns_dtype_decision

try:  # private in torch 2.x; guarded so the benchmark still runs without it
    from torch.optim._muon import _zeropower_via_newtonschulz as _torch_ns
except ImportError:  # pragma: no cover
    _torch_ns = None

FULL_SHAPES = [(256, 256), (512, 512), (1024, 1024), (256, 1024), (1024, 256),
               (512, 2048), (2048, 512)]
QUICK_SHAPES = [(64, 64), (128, 128), (64, 256), (256, 64)]


def ns_flops(m: int, n: int, steps: int = 5) -> float:
    """Nominal FLOPs of `steps` NS steps on (m, n): steps (4 s^2 l + 2 s^3), s = min, l = max."""
    s, l = min(m, n), max(m, n)
    return steps * (4 * s * s * l + 2 * s ** 3)


def _matmul_step(X: torch.Tensor) -> torch.Tensor:
    """One NS step's three plain matmuls (no fusion, no symmetry): the bound's unit."""
    A = X @ X.mT
    B = A @ A
    return B @ X


def bench_one(m: int, n: int, dtype: torch.dtype, repeats: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    G = torch.randn(m, n, generator=g)
    Xw = (G if m <= n else G.mT).contiguous().to(dtype)
    coeffs = NS_COEFFICIENTS["keller"][0]
    fns = {"ns": lambda: newton_schulz(G, 5, "keller", dtype=dtype),
           "gram": lambda: newton_schulz(G, 5, "keller", dtype=dtype, method="gram"),
           "step": lambda: _matmul_step(Xw),
           "svd": lambda: polar(G)}
    if _torch_ns is not None:
        fns["torch"] = lambda: _torch_ns(G, coeffs, 5, 1e-7)
    for f in fns.values():  # warm-up
        f()
    times = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k] = min(times[k], time.perf_counter() - t0)
    flops = ns_flops(m, n)
    bound = 5 * times["step"]
    rate = flops / bound  # measured matmul rate on exactly these products
    return {"m": m, "n": n, "dtype": str(dtype).replace("torch.", ""), "ns_ms": 1e3 * times["ns"],
            "gram_ms": 1e3 * times["gram"],
            "bound_ms": 1e3 * bound, "torch_ms": 1e3 * times.get("torch", float("nan")),
            "svd_ms": 1e3 * times["svd"], "mm_gflops": rate / 1e9,
            "ns_gflops": flops / times["ns"] / 1e9}


def main(quick: bool = False) -> list[dict]:
    shapes = QUICK_SHAPES if quick else FULL_SHAPES
    dtype_choice, why = ns_dtype_decision("cpu")
    print(f"NS dtype chosen for this CPU (ns_dtype='auto'): {dtype_choice} ({why})")
    print(f"== Newton-Schulz (5 keller steps) vs matmul bound vs torch.optim.Muon NS vs Gram NS vs SVD polar"
          f" | torch {torch.__version__}, {torch.get_num_threads()} threads"
          + ("" if _torch_ns is not None else " | torch Muon NS not available"))
    print("   (best of r interleaved repeats; on a shared machine absolute times are noisy,"
          " ratios less so)")
    hdr = (f"{'m':>5} {'n':>5} {'dtype':>8} {'ns ms':>9} {'bound ms':>9} {'ns/bound':>8} "
           f"{'torch ms':>9} {'ns/torch':>8} {'gram ms':>9} {'gram/ns':>7} {'gram/tch':>8} "
           f"{'svd ms':>9} {'svd/ns':>7} {'mm GF/s':>8} {'NS frac':>7}")
    print(hdr)
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for m, n in shapes:
            big = max(m, n) * min(m, n) ** 2 >= 2048 ** 3 / 2
            r = bench_one(m, n, dtype, repeats=2 if big else (3 if quick else 5))
            rows.append(r)
            print(f"{m:>5} {n:>5} {r['dtype']:>8} {r['ns_ms']:>9.2f} {r['bound_ms']:>9.2f} "
                  f"{r['ns_ms'] / r['bound_ms']:>8.2f} {r['torch_ms']:>9.2f} "
                  f"{r['ns_ms'] / r['torch_ms']:>8.2f} {r['gram_ms']:>9.2f} "
                  f"{r['gram_ms'] / r['ns_ms']:>7.2f} {r['gram_ms'] / r['torch_ms']:>8.2f} {r['svd_ms']:>9.2f} "
                  f"{r['svd_ms'] / r['ns_ms']:>7.1f} {r['mm_gflops']:>8.1f} "
                  f"{r['ns_gflops'] / r['mm_gflops']:>7.2f}", flush=True)
    print("   ns/torch compares against torch's NS, which always computes in bf16 (fp32 rows:"
          " ours in fp32). NS frac = nominal NS FLOP rate / measured matmul rate.")
    print("   Gram NS inexactness (lmo.polar_factor.ns_inexactness, 4 x 64 x 256, cond 10):")
    g = torch.Generator().manual_seed(1)
    U, _ = torch.linalg.qr(torch.randn(4, 64, 64, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(4, 256, 64, generator=g, dtype=torch.float64))
    G = ((U * torch.linspace(0.1, 1.0, 64, dtype=torch.float64)) @ V.mT).float()
    for dtype in (torch.float32, torch.bfloat16):
        for method in ("standard", "gram"):
            r = ns_inexactness(G, dtype=dtype, method=method)
            print(f"   {str(dtype).replace('torch.', ''):>8} {method:>8}: singular values in "
                  f"[{float(r['sv_min'].min()):.3f}, {float(r['sv_max'].max()):.3f}], "
                  f"||NS(G) - polar(G)||_2 <= {float(r['spectral_error'].max()):.3f}")
    return rows


if __name__ == "__main__":
    main()

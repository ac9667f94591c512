"""Which dtype Newton-Schulz should compute in on this machine: bf16 where bf16 matmul is
fast, fp32 where it is not (docs/design.md §7; issue: Muon's NS in bf16 on a CPU without
bf16 instructions made a tiny Muon step 3-4x an AdamW step).

Decision, once per device (cached):

1. ``LMO_NS_DTYPE`` in the environment (``bfloat16`` / ``float32`` / ``float16``): that
   dtype, on every device (to reproduce a run made on another machine).
2. CUDA: bf16 if ``torch.cuda.is_bf16_supported()``, else fp32.
3. CPU: fp32 unless the CPU reports bf16 instructions (x86 ``avx512_bf16`` / ``amx_bf16``,
   Arm ``bf16``); with them, a one-off micro-measurement decides: bf16 iff a bf16
   matmul of the NS working size (``PROBE_N``) takes at most ``BF16_MAX_TIME_RATIO`` of
   the fp32 one (best of ``PROBE_REPEATS``). bf16 is never assumed fast on a CPU.
4. Any other device: fp32.

``ns_dtype_decision(device)`` returns the dtype with the reason, for logs and configs.
"""
from __future__ import annotations

import functools
import os
import time

import torch

__all__ = ["choose_ns_dtype", "ns_dtype_decision", "cpu_has_bf16_instructions", "ENV_VAR",
           "PROBE_N", "PROBE_REPEATS", "BF16_MAX_TIME_RATIO"]

ENV_VAR = "LMO_NS_DTYPE"
PROBE_N = 256
PROBE_REPEATS = 5
BF16_MAX_TIME_RATIO = 0.8
_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
_NAMES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float32": torch.float32,
          "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16}


def cpu_has_bf16_instructions(cpuinfo_path: str = "/proc/cpuinfo") -> bool:
    """True if the CPU flags (x86 "flags" / Arm "Features" of ``cpuinfo_path``) list a
    bf16 instruction set; False when they do not or cannot be read."""
    try:
        with open(cpuinfo_path) as f:
            text = f.read()
    except OSError:
        return False
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            return any(flag in value.split() for flag in _BF16_FLAGS)
    return False


def _best_time(fn, repeats: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _cpu_bf16_time_ratio(n: int = PROBE_N, repeats: int = PROBE_REPEATS) -> float:
    """t(bf16 n x n matmul) / t(fp32 n x n matmul) on the CPU, best of ``repeats``."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    b = a.bfloat16()
    return _best_time(lambda: b @ b, repeats) / _best_time(lambda: a @ a, repeats)


@functools.lru_cache(maxsize=None)
def _decide(device_type: str, index: int | None, env: str | None) -> tuple[torch.dtype, str]:
    if env:
        key = env.strip().lower()
        if key not in _NAMES:
            raise ValueError(f"{ENV_VAR}={env!r}: expected one of {sorted(_NAMES)}")
        return _NAMES[key], f"{ENV_VAR}={env}"
    if device_type == "cuda":
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return torch.bfloat16, "cuda with bf16 support"
        return torch.float32, "cuda without bf16 support"
    if device_type == "cpu":
        if not cpu_has_bf16_instructions():
            return torch.float32, "cpu without bf16 instructions"
        ratio = _cpu_bf16_time_ratio()
        dtype = torch.bfloat16 if ratio <= BF16_MAX_TIME_RATIO else torch.float32
        return dtype, (f"cpu with bf16 instructions; measured bf16/fp32 matmul time "
                       f"{ratio:.2f} at n={PROBE_N} (bf16 iff <= {BF16_MAX_TIME_RATIO})")
    return torch.float32, f"{device_type}: fp32 by default"


def ns_dtype_decision(device="cpu") -> tuple[torch.dtype, str]:
    """(dtype, reason) for Newton-Schulz on ``device`` (module docstring); cached per device."""
    dev = torch.device(device)
    return _decide(dev.type, dev.index, os.environ.get(ENV_VAR) or None)


def choose_ns_dtype(device="cpu") -> torch.dtype:
    """The dtype Newton-Schulz computes in on ``device`` when ``ns_dtype="auto"``:
    torch.bfloat16 where bf16 matmul is fast there, else torch.float32 (module docstring)."""
    return ns_dtype_decision(device)[0]

"""The dtype Newton-Schulz computes in: the values an ``ns_dtype`` option takes and what
``"auto"`` means, as pure functions of their arguments (docs/design.md §7: no global state).

Values of ``ns_dtype`` (lmo.muon, normuon, adamuon, scion, Spectral; ``dtype`` of
lmo.newton_schulz): a floating torch.dtype; its name (:data:`NAMES`: "float32",
"bfloat16", "float64", "float16", or fp32 / bf16 / fp64 / fp16); None (the input's dtype;
the Muon family reads None as "auto"); or "auto"::

    choose_ns_dtype(device, bf16_native) = bfloat16   if device is CUDA and bf16_native is not False
                                         = float32    otherwise (CPU, MPS, ...)

No timing, no environment variable, no cache: the answer is a function of the arguments.
A CPU gets float32 whatever its instruction set (bf16 matmul on a CPU is emulated or, with
bf16 instructions, not reliably faster; a Muon step in bf16 on a CPU without them cost 3-4x
an AdamW step). An optimizer given "auto" applies this to each gradient's device (a CUDA
tensor: bf16, as torch.optim.Muon; a CPU tensor: fp32). A caller that knows the machine
passes ``bf16_native`` (gpu_runs asks the CUDA device for its capability), resolves once
per run and records the result (gpu_runs.recipe.resolve_ns_dtype), so a run never depends on how the
machine happens to decide later.
"""
from __future__ import annotations

import torch

__all__ = ["NAMES", "AUTO", "check_ns_dtype", "choose_ns_dtype", "ns_dtype_decision", "dtype_name"]

AUTO = "auto"
#: accepted names of a Newton-Schulz dtype
NAMES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "float32": torch.float32,
         "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
         "float64": torch.float64, "fp64": torch.float64}


def check_ns_dtype(value, what: str = "ns_dtype"):
    """``value`` as an NS dtype option: None -> None, "auto" -> "auto", a name of :data:`NAMES`
    -> its torch.dtype, a floating torch.dtype -> itself; ValueError naming ``what`` otherwise.

    >>> check_ns_dtype("bf16"), check_ns_dtype("auto"), check_ns_dtype(torch.float64)
    (torch.bfloat16, 'auto', torch.float64)
    >>> check_ns_dtype("int8")
    Traceback (most recent call last):
    ...
    ValueError: ns_dtype must be a floating torch.dtype, one of [...], None or 'auto', got 'int8'
    """
    if value is None or value == AUTO:
        return value
    if isinstance(value, str):
        if value.strip().lower() in NAMES:
            return NAMES[value.strip().lower()]
    elif isinstance(value, torch.dtype) and value.is_floating_point:
        return value
    raise ValueError(f"{what} must be a floating torch.dtype, one of {sorted(NAMES)}, None or "
                     f"'auto', got {value!r}")


def ns_dtype_decision(device="cpu", bf16_native: bool | None = None) -> tuple[torch.dtype, str]:
    """(dtype, reason) of :func:`choose_ns_dtype`, for logs and reports.

    >>> ns_dtype_decision("cpu")
    (torch.float32, 'cpu: float32 (bf16 is never chosen off CUDA)')
    """
    kind = torch.device(device).type
    if kind == "cuda":
        if bf16_native is False:
            return torch.float32, "cuda without native bf16 matmul"
        return torch.bfloat16, "cuda" + (" with native bf16 matmul" if bf16_native else "")
    return torch.float32, f"{kind}: float32 (bf16 is never chosen off CUDA)"


def choose_ns_dtype(device="cpu", bf16_native: bool | None = None) -> torch.dtype:
    """The dtype "auto" means on ``device`` (module docstring): torch.bfloat16 on CUDA unless
    ``bf16_native`` is False, else torch.float32. Pure: no timing, no environment, no cache.

    >>> choose_ns_dtype("cpu"), choose_ns_dtype("cuda"), choose_ns_dtype("cuda", bf16_native=False)
    (torch.float32, torch.bfloat16, torch.float32)
    """
    return ns_dtype_decision(device, bf16_native)[0]


def dtype_name(dtype: torch.dtype) -> str:
    """"bfloat16" for torch.bfloat16, and so on (the name a run's config records).

    >>> dtype_name(torch.bfloat16)
    'bfloat16'
    """
    return str(dtype).removeprefix("torch.")

"""What Muon, NorMuon and AdaMuon share besides their momentum (lmo.transforms.scale_by_momentum):
the matrix-only check and the NS dtype option (docs/design.md §3). All of them orthogonalise
through one function, ``lmo.polar_factor.orthogonalize_many``::

    O_t = NS(u_t) ~ polar(u_t)        (exact: the SVD polar factor)

``ns_dtype``: None or "auto" -> "auto", which NS reads as ``lmo.ns_dtype.choose_ns_dtype`` of
each gradient's device (bf16 on CUDA, fp32 elsewhere: a pure function of the device, no
timing, no environment); a name ("float32", "bfloat16", ...) or a floating torch dtype ->
that dtype (torch.bfloat16 reproduces torch.optim.Muon, which always runs NS in bf16). A
training run resolves "auto" once for its machine and passes the dtype (gpu_runs.recipe.resolve_ns_dtype).
"""
from __future__ import annotations

from typing import Mapping

from lmo.ns_dtype import AUTO, check_ns_dtype


def check_matrices(params: Mapping, name: str) -> None:
    """Refuse parameters that are not matrices (..., m, n), naming them."""
    for k, v in params.items():
        if v.ndim < 2:
            raise ValueError(f"{name}: params['{k}'] has shape {tuple(v.shape)}; this matrix optimizer "
                             "needs (..., m, n) (route vectors to AdamW, e.g. lmo.registry.build)")


def muon_ns_dtype(ns_dtype):
    """The NS dtype option of the Muon family: None / "auto" -> "auto", a name -> its dtype,
    a floating dtype -> itself (ValueError naming ns_dtype otherwise)."""
    ns_dtype = check_ns_dtype(ns_dtype)
    return AUTO if ns_dtype is None else ns_dtype

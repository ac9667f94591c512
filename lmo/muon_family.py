"""What Muon, NorMuon and AdaMuon share besides their momentum (lmo.transforms.scale_by_momentum):
the matrix-only check, the NS dtype option and one batched orthogonalisation per step
(docs/design.md §3)::

    O_t = NS(u_t) ~ polar(u_t)        (exact: the SVD polar factor)

``ns_dtype``: None or "auto" -> ``lmo.polar_factor.choose_ns_dtype(device)`` (bf16 where
bf16 matmul is fast, fp32 where not); a torch dtype -> that dtype (torch.bfloat16
reproduces torch.optim.Muon, which always runs NS in bf16).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import torch

from lmo.polar_factor import newton_schulz_many, polar, resolve_dtype


def check_matrices(params: Mapping, name: str) -> None:
    """Refuse parameters that are not matrices (..., m, n), naming them."""
    for k, v in params.items():
        if v.ndim < 2:
            raise ValueError(f"{name}: params['{k}'] has shape {tuple(v.shape)}; this matrix optimizer "
                             "needs (..., m, n) (route vectors to AdamW, e.g. lmo.registry.build)")


def muon_ns_dtype(ns_dtype):
    """The NS dtype option of the Muon family: None / "auto" -> "auto", else a checked dtype."""
    if ns_dtype is None or ns_dtype == "auto":
        return "auto"
    resolve_dtype(ns_dtype, "cpu")   # raises ValueError naming dtype if not a floating dtype
    return ns_dtype


def orthogonalize_many(us: Sequence[torch.Tensor], exact: bool, ns_steps: int, ns_coefficients,
                       ns_eps: float, ns_dtype, ns_method: str = "standard") -> list:
    """[polar(u) (exact) or NS(u)] for every u, NS batched over same-shape matrices,
    each cast back to its u's dtype."""
    if exact:
        return [polar(u) for u in us]
    outs = newton_schulz_many(list(us), steps=ns_steps, coefficients=ns_coefficients, eps=ns_eps,
                              dtype=ns_dtype, method=ns_method)
    return [o.to(u.dtype) for o, u in zip(outs, us)]

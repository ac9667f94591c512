"""NorMuon (Li, Liu, Liang, Chen, Zhao 2025, arXiv 2510.05491): Muon + per-neuron second moment.

Source: the paper's Algorithm 1 (RMS-matched step 0.2 sqrt(mn)/||O^||_F) and the official
code (zichongli5/NorMuon ``normuon.py``: momentum=0.95, beta2=0.95, eps=1e-10, Nesterov,
row-wise mean over the last dim, Frobenius norm of the NS output restored, then Muon's
max(1, m/n)^0.5). They differ only in the final scale: ``scale="rms"`` (default) follows
the paper, ``scale="frobenius"`` the code. Nesterov follows the code (the paper's
Algorithm has plain momentum; pass nesterov=False for it).

Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): pytorch-optimizer's
``NorMuon`` with ``update_scale="preserve_norm"`` <-> ``scale="frobenius"`` and
``"match_rms"`` <-> ``scale="rms"``, to 1e-10 in fp64 with both NS in fp64.
"""
from __future__ import annotations

import math

import torch

from lmo.base import Optimizer, ScalarOrSchedule
from lmo.matrix_view import check_flatten, matrix_view
from lmo.muon_second_moment import (SecondMomentState, check_second_moment_args, muon_second_moment,
                                    ns_options)

NorMuonState = SecondMomentState   # step t, momentum m_t (..., m, n), per-row v_t (..., m, 1)


def normuon(lr: ScalarOrSchedule, momentum: float = 0.95, beta2: float = 0.95, eps: float = 1e-10,
            weight_decay: float = 0.0, *, nesterov: bool = True, scale: str = "rms",
            ns_steps: int = 5, ns_coefficients="keller", ns_eps: float = 1e-7,
            ns_dtype="auto", exact: bool = False, mu: float | None = None,
            ns_method: str = "standard", flatten: bool | None = None) -> Optimizer:
    """NorMuon on matrices (..., m, n) (leading dims are a batch); d_t is the displacement::

        m_t = beta m_{t-1} + (1 - beta) g_t,     u_t = (1 - beta) g_t + beta m_t  (nesterov) or m_t
        O_t = NS(u_t) ~ polar(u_t)
        v_t = beta2 v_{t-1} + (1 - beta2) mean_cols(O_t * O_t)        (one number per row)
        O^_t = O_t / (sqrt(v_t) + eps)                                 (broadcast over columns)
        scale="rms":       D_t = 0.2 sqrt(mn) O^_t / ||O^_t||_F         (RMS(D_t) = 0.2)
        scale="frobenius": D_t = max(1, m/n)^0.5 ||O_t||_F O^_t / (||O^_t||_F + eps)
        d_t = -eta_t D_t - eta_t lambda x_t

    ||.||_F is per matrix. No bias correction (as both sources). ``mu`` overrides the
    momentum as beta = 1 - mu. ``exact=True`` uses the SVD polar factor instead of NS.
    ``ns_dtype``: None / "auto" = choose_ns_dtype (lmo.muon_family); ``ns_method``:
    "standard" or "gram" NS (lmo.newton_schulz). NS runs once per matrix shape per step
    (the shared part: lmo.muon_second_moment). ``flatten``: how >2-D weights are read
    (lmo.matrix_view; None refuses 4-D and more, True flattens to (out, in*kh*kw)).
    """
    beta = check_second_moment_args(lr, momentum, beta2, eps, weight_decay, mu)
    if scale not in ("rms", "frobenius"):
        raise ValueError(f"scale must be 'rms' or 'frobenius', got {scale!r}")
    ns = ns_options(exact, ns_steps, ns_coefficients, ns_eps, ns_dtype, ns_method)

    def step(O, v_prev, t, eta):
        """(v_t, -eta_t D_t) of the docstring, for one matrix (no bias correction: t unused)."""
        v = torch.lerp(v_prev, (O * O).mean(dim=-1, keepdim=True), 1 - beta2)
        Oh = O / (v.sqrt() + eps)
        norm_h = torch.linalg.vector_norm(Oh, dim=(-2, -1), keepdim=True)
        rows, cols = O.shape[-2:]
        if scale == "rms":
            D = Oh * (0.2 * math.sqrt(rows * cols) / norm_h.clamp_min(1e-30))
        else:
            norm_o = torch.linalg.vector_norm(O, dim=(-2, -1), keepdim=True)
            D = Oh * (norm_o / (norm_h + eps)) * max(1.0, rows / cols) ** 0.5
        return v, -eta * D

    check_flatten(flatten)
    opt = muon_second_moment("normuon", lr, beta, nesterov, weight_decay, ns,
                             lambda x: torch.zeros_like(x[..., :1]), step,
                             dict(beta2=beta2, eps=eps, scale=scale))
    return matrix_view(opt, flatten, "normuon")

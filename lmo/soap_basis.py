"""SOAP's update (Vyas et al. 2024, arXiv 2409.11321): Adam in the eigenbasis of Shampoo's
preconditioner, as the transform scale_by_soap (the named optimizer is lmo.adam_family.soap).

Source: the paper's Algorithm and the official code (nikhilvyas/SOAP ``soap.py``, the
version with defaults lr=3e-3, betas=(0.95, 0.95), shampoo_beta=-1 (-> betas[1]),
eps=1e-8, weight_decay=0.01, precondition_frequency=10, max_precond_dim=10000,
precondition_1d=False, normalize_grads=False, correct_bias=True). As there: the first call
only initializes the preconditioner (its update is zero, no decay), the moments live in
the eigenbasis, the basis is refreshed by one power-iteration + QR step every
``precondition_frequency`` Adam steps (moments re-expressed in the new basis, v
permuted with the eigenvalue order), and decay is applied after the step:
x <- x' - eta lambda x'. merge_dims (for >2-D conv kernels) is not offered.

Batching: a tensor with >= 2 dims is a matrix on its last two dims, leading dims a batch
(one preconditioner pair per matrix); 1-D tensors are vectors. ``batch_dims=k`` says
explicitly that the first k dims are a batch (needed for stacked vectors); event parts
with more than 2 dims are refused.

Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): equals pytorch-optimizer's
``SOAP(lr, betas, weight_decay, precondition_frequency)`` to fp64 rounding until the first
basis refresh; after it, to fp32 rounding (it computes the QR of the power step in fp32).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from lmo.base import Optimizer
from lmo.transforms import ema

_NONE = torch.zeros(0)  # sentinel shape for "no preconditioner on this side"


def _as_matrix(x: torch.Tensor, vector: bool) -> torch.Tensor:
    return x.unsqueeze(-1) if vector else x


def _rotate(x, QL, QR, back: bool):
    """forward: Q_L^T X Q_R; back: Q_L X Q_R^T (absent sides are the identity)."""
    if QL.numel():
        x = (QL if back else QL.mT) @ x
    if QR.numel():
        x = x @ (QR.mT if back else QR)
    return x


def _eigbasis(M):
    """Eigenvectors of symmetric M, columns by descending eigenvalue (reference: flip of eigh)."""
    eye = torch.eye(M.shape[-1], dtype=M.dtype, device=M.device)
    return torch.linalg.eigh(M + 1e-30 * eye)[1].flip(-1)


def _qr_refresh(M, Q, v, dim):
    """One power step: order Q's columns by diag(Q^T M Q) descending, permute v along ``dim``
    the same way, then Q <- qr(M Q).Q (reference: get_orthogonal_matrix_QR)."""
    est = torch.einsum("...ij,...ik,...kj->...j", Q, M, Q)
    idx = torch.argsort(est, dim=-1, descending=True)
    Q = torch.gather(Q, -1, idx.unsqueeze(-2).expand_as(Q))
    if dim == -2:
        v = torch.gather(v, -2, idx.unsqueeze(-1).expand_as(v))
    else:
        v = torch.gather(v, -1, idx.unsqueeze(-2).expand_as(v))
    return torch.linalg.qr(M @ Q)[0], v


class SOAPEntries(NamedTuple):
    """SOAP's state besides the counter: exp_avg / exp_avg_sq live in the current
    eigenbasis; GG_L, GG_R are the EMAs of G G^T and G^T G, Q_L, Q_R their eigenbases
    (empty tensors where not preconditioned)."""

    exp_avg: dict
    exp_avg_sq: dict
    GG_L: dict
    GG_R: dict
    Q_L: dict
    Q_R: dict


def scale_by_soap(b1: float, b2: float, bs: float, eps: float, weight_decay: float, *,
                  precondition_frequency: int, max_precond_dim: int, precondition_1d: bool,
                  normalize_grads: bool, correct_bias: bool, batch_dims: int | None) -> Optimizer:
    """SOAP's whole update as one transform (fields of :class:`SOAPEntries`; the formulas are
    lmo.adam_family.soap's). It stays hand-written: the first call only builds the preconditioner,
    the moments live in a basis that is refreshed with them, and the decay is applied to
    the stepped point (d - eta lambda (x + d)), so no shared transform fits without
    changing the order of operations.

    >>> from lmo.base import StepInfo
    >>> tr = scale_by_soap(0.9, 0.99, 0.99, 1e-8, 0.0, precondition_frequency=10, max_precond_dim=100,
    ...                    precondition_1d=False, normalize_grads=False, correct_bias=True, batch_dims=None)
    >>> g = {"w": torch.diag(torch.tensor([2.0, 1.0]))}
    >>> d, entries = tr.update(g, tr.init(g), g, StepInfo(torch.tensor(0), 0.1, g))   # call 0: Q_L, Q_R only
    >>> d["w"].abs().sum().item(), dict(zip(tr.fields, entries))["Q_L"]["w"].shape
    (0.0, torch.Size([2, 2]))
    """

    def is_vector(k, x):
        event = (1 if x.ndim == 1 else 2) if batch_dims is None else x.ndim - batch_dims
        if event not in (1, 2):
            raise ValueError(f"soap: params['{k}'] has shape {tuple(x.shape)}: with batch_dims="
                             f"{batch_dims} its event part has {event} dims; only vectors and "
                             "matrices are supported (reshape conv kernels to matrices)")
        return event == 1

    def sides(k, x):
        vec = is_vector(k, x)
        X = _as_matrix(x, vec)
        m, n = X.shape[-2:]
        use_l = m <= max_precond_dim and (precondition_1d or not vec)
        use_r = n <= max_precond_dim and not vec
        return vec, X, use_l, use_r

    def init(params):
        st = ({}, {}, {}, {}, {}, {})
        for k, x in params.items():
            vec, X, use_l, use_r = sides(k, x)
            cdt = torch.promote_types(x.dtype, torch.float32)
            batch, (m, n) = X.shape[:-2], X.shape[-2:]
            st[0][k] = torch.zeros_like(x)
            st[1][k] = torch.zeros_like(x)
            for j, (use, d) in enumerate(((use_l, m), (use_r, n))):
                st[2 + j][k] = (torch.zeros(*batch, d, d, dtype=cdt, device=x.device) if use
                                else _NONE.to(dtype=cdt, device=x.device))
                st[4 + j][k] = st[2 + j][k].clone()
        return st

    def update(grads, entries, params, step):
        state = SOAPEntries(*entries)
        count = int(step.count)
        eta = step.eta
        t = count  # Adam steps after this call
        out = tuple({} for _ in range(7))  # updates, m, v, GGL, GGR, QL, QR
        for k, g in grads.items():
            vec, G, use_l, use_r = sides(k, g)
            GGL, GGR = state.GG_L[k], state.GG_R[k]
            QL, QR = state.Q_L[k], state.Q_R[k]
            Gc = G.to(GGL.dtype)
            if use_l:
                GGL = ema(GGL, Gc @ Gc.mT, 1 - bs)
            if use_r:
                GGR = ema(GGR, Gc.mT @ Gc, 1 - bs)
            if count == 0:
                QL = _eigbasis(GGL) if use_l else QL
                QR = _eigbasis(GGR) if use_r else QR
                d = torch.zeros_like(g)
                m, v = state.exp_avg[k], state.exp_avg_sq[k]
            else:
                QLo, QRo = state.Q_L[k], state.Q_R[k]
                Gp = _rotate(Gc, QLo, QRo, back=False).to(g.dtype)
                M = ema(_as_matrix(state.exp_avg[k], vec), Gp, 1 - b1)
                V = b2 * _as_matrix(state.exp_avg_sq[k], vec) + (1 - b2) * Gp * Gp
                N = _rotate((M / (V.sqrt() + eps)).to(GGL.dtype), QLo, QRo, back=True).to(g.dtype)
                if normalize_grads:
                    N = N / (1e-30 + N.pow(2).mean(dim=(-2, -1), keepdim=True).sqrt())
                step_size = eta * (math.sqrt(1 - b2 ** t) / (1 - b1 ** t) if correct_bias else 1.0)
                d = -step_size * N
                if weight_decay:
                    d = d - eta * weight_decay * (_as_matrix(params[k], vec) + d)
                if t % precondition_frequency == 0 and (use_l or use_r):
                    M = _rotate(M.to(GGL.dtype), QLo, QRo, back=True)       # to the original basis
                    if use_l:
                        QL, V = _qr_refresh(GGL, QLo, V, -2)
                    if use_r:
                        QR, V = _qr_refresh(GGR, QRo, V, -1)
                    M = _rotate(M, QL, QR, back=False).to(g.dtype)         # into the new basis
                if vec:
                    d, M, V = d.squeeze(-1), M.squeeze(-1), V.squeeze(-1)
                m, v = M, V
            for store, val in zip(out, (d, m, v, GGL, GGR, QL, QR)):
                store[k] = val
        return out[0], out[1:]

    return Optimizer(init, update, needs_params=bool(weight_decay), name="scale_by_soap",
                     fields=SOAPEntries._fields)

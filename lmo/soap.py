"""SOAP (Vyas et al. 2024, arXiv 2409.11321): Adam in the eigenbasis of Shampoo's preconditioner.

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

from lmo.base import (betas_with_mu, check_update_inputs, Optimizer, ScalarOrSchedule, check_beta,
                      check_lr, check_nonneg, resolve_lr, step_counter, check_int)

_NONE = torch.zeros(0)  # sentinel shape for "no preconditioner on this side"


class SOAPState(NamedTuple):
    """count = calls made (the first only initializes); step t = Adam steps taken (= count - 1).

    exp_avg / exp_avg_sq live in the current eigenbasis; GG_L, GG_R are the EMAs of
    G G^T and G^T G, Q_L, Q_R their eigenbases (empty tensors where not preconditioned).
    """

    count: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict
    GG_L: dict
    GG_R: dict
    Q_L: dict
    Q_R: dict


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


def soap(lr: ScalarOrSchedule = 3e-3, betas=(0.95, 0.95), eps: float = 1e-8,
         weight_decay: float = 0.01, *, shampoo_beta: float | None = None,
         precondition_frequency: int = 10, max_precond_dim: int = 10000,
         precondition_1d: bool = False, normalize_grads: bool = False, correct_bias: bool = True,
         batch_dims: int | None = None, mu: float | None = None) -> Optimizer:
    """SOAP; for a matrix G_t (m x n), t = 1, 2, ... Adam steps after an initializing call::

        call 0:  L = (1 - b_s) G G^T,  R = (1 - b_s) G^T G,  Q_L, Q_R = eigvecs(L), eigvecs(R); d = 0
        G'  = Q_L^T G_t Q_R
        M_t = b1 M_{t-1} + (1 - b1) G',   V_t = b2 V_{t-1} + (1 - b2) G' * G'     (eigenbasis)
        N   = Q_L (M_t / (sqrt(V_t) + eps)) Q_R^T      (N / RMS(N) if normalize_grads)
        x'  = x_t - eta_t sqrt(1 - b2^t)/(1 - b1^t) N,   x_{t+1} = x' - eta_t lambda x'
        L <- b_s L + (1 - b_s) G_t G_t^T,  R <- b_s R + (1 - b_s) G_t^T G_t
        if t % precondition_frequency == 0: Q <- qr(L Q_sorted) (and R); M_t re-expressed

    b_s = shampoo_beta (default b2). A side longer than max_precond_dim is not rotated;
    vectors are not rotated unless precondition_1d (then only Q_L, from g g^T); with no
    rotation at all SOAP is Adam with (b1, b2) on g_2, g_3, ... eta_t = lr(count).
    ``mu`` overrides b1 as b1 = 1 - mu.
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    bs = b2 if shampoo_beta is None or shampoo_beta < 0 else float(shampoo_beta)
    check_beta(bs, "shampoo_beta")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_int(precondition_frequency, "precondition_frequency", 1)
    check_int(max_precond_dim, "max_precond_dim", 1)
    if batch_dims is not None:
        check_int(batch_dims, "batch_dims")

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
        return SOAPState(step_counter(), *st)

    def update(grads, state, params=None):
        check_update_inputs(grads, params, state.exp_avg, weight_decay)
        count = int(state.count)
        eta = resolve_lr(lr, state.count)
        t = count  # Adam steps after this call
        out = tuple({} for _ in range(7))  # updates, m, v, GGL, GGR, QL, QR
        for k, g in grads.items():
            vec, G, use_l, use_r = sides(k, g)
            GGL, GGR = state.GG_L[k], state.GG_R[k]
            QL, QR = state.Q_L[k], state.Q_R[k]
            Gc = G.to(GGL.dtype)
            if use_l:
                GGL = torch.lerp(GGL, Gc @ Gc.mT, 1 - bs)
            if use_r:
                GGR = torch.lerp(GGR, Gc.mT @ Gc, 1 - bs)
            if count == 0:
                QL = _eigbasis(GGL) if use_l else QL
                QR = _eigbasis(GGR) if use_r else QR
                d = torch.zeros_like(g)
                m, v = state.exp_avg[k], state.exp_avg_sq[k]
            else:
                QLo, QRo = state.Q_L[k], state.Q_R[k]
                Gp = _rotate(Gc, QLo, QRo, back=False).to(g.dtype)
                M = torch.lerp(_as_matrix(state.exp_avg[k], vec), Gp, 1 - b1)
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
        return out[0], SOAPState(state.count + 1, *out[1:])

    return Optimizer(init, update, name="soap",
                     hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                                shampoo_beta=bs, precondition_frequency=precondition_frequency,
                                max_precond_dim=max_precond_dim, precondition_1d=precondition_1d,
                                normalize_grads=normalize_grads, correct_bias=correct_bias,
                                batch_dims=batch_dims))

"""MARS-AdamW (Yuan et al. 2024, arXiv 2411.10438), approximate variant.

Source: the paper's Algorithm 1 / MARS-AdamW and the official code (AGI-Arena/MARS,
``MARS/optimizers/mars.py``: defaults lr=3e-3, betas=(0.95, 0.99), gamma=0.025,
is_approx=True, optimize_1d=False, betas_1d=(0.9, 0.95)). Only the approximate variant is
offered (g(x_{t-1}; xi_t) replaced by the previous minibatch's g_{t-1}; the exact variant
needs a second gradient per step, which the one-gradient protocol cannot supply).

Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): with eps = 0 equals
pytorch-optimizer's ``MARS(lr, betas, gamma, weight_decay, lr_1d=lr_1d_factor * lr,
weight_decay_1d, betas_1d)`` to 1e-9 in fp64. With eps > 0 they differ: it adds eps
before the bias correction (m / ((sqrt(v) + eps) / sqrt(1 - b2^t))), we after it.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lmo.base import (betas_with_mu, Optimizer, ScalarOrSchedule, check_beta, check_finite,
                      check_lr, check_nonneg, check_same_keys, resolve_lr, step_counter, decoupled_decay, check_int,
                      zeros_like_tree)


class MARSState(NamedTuple):
    """step t, m_t, v_t, last gradient g_{t-1} (zeros before the first step, as the reference)."""

    step: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict
    last_grad: dict


def _clip(c: torch.Tensor, max_norm: float, batch_dims: int) -> torch.Tensor:
    """Clip(c, r) = c * min(1, r / ||c||_2), the 2-norm per leading batch index."""
    dims = tuple(range(batch_dims, c.ndim))
    if not dims:
        norm = c.abs()
    else:
        norm = torch.linalg.vector_norm(c, dim=dims, keepdim=True)
    scale = torch.where(norm > max_norm, max_norm / norm.clamp_min(1e-30), torch.ones_like(norm))
    return c * scale


def mars(lr: ScalarOrSchedule = 3e-3, betas=(0.95, 0.99), eps: float = 1e-8,
         weight_decay: float = 0.0, *, gamma: float = 0.025, max_norm: float | None = 1.0,
         optimize_1d: bool = False, lr_1d_factor: float = 1.0, betas_1d=(0.9, 0.95),
         weight_decay_1d: float | None = None, batch_dims: int = 0,
         mu: float | None = None) -> Optimizer:
    """MARS-AdamW; ``updates`` are displacements d_t (x_{t+1} = x_t + d_t), t = 1, 2, ...

    For a tensor with 2 event dims (a matrix; or any tensor when ``optimize_1d``)::

        c_t = g_t + gamma * b1/(1 - b1) * (g_t - g_{t-1})      (g_0 = 0, as the reference)
        c~_t = Clip(c_t, max_norm) = c_t min(1, max_norm/||c_t||_2)   (max_norm=None: no clip)
        m_t = b1 m_{t-1} + (1 - b1) c~_t,   v_t = b2 v_{t-1} + (1 - b2) c~_t^2
        d_t = -eta_t [ m_t / ((1 - b1^t) (sqrt(v_t/(1 - b2^t)) + eps)) + lambda x_t ]

    Other tensors (vectors, and any non-2-D event as in the reference) get AdamW with
    ``betas_1d``, step eta_t * lr_1d_factor and decay ``weight_decay_1d`` (default:
    ``weight_decay``). With gamma = 0 and max_norm=None the matrix rule is exactly AdamW.

    The clip norm is per tensor; with independent seeds stacked in front, pass
    ``batch_dims=k`` so the norm (and the 2-D test) is taken per leading index.
    ``mu`` overrides b1 as b1 = 1 - mu (the 1-D AdamW betas stay).
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    c1, c2 = float(betas_1d[0]), float(betas_1d[1])
    check_beta(c1, "betas_1d[0]")
    check_beta(c2, "betas_1d[1]")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_nonneg(gamma, "gamma")
    check_nonneg(lr_1d_factor, "lr_1d_factor")
    if max_norm is not None and (not isinstance(max_norm, (int, float)) or not max_norm > 0):
        raise ValueError(f"max_norm must be > 0 or None (no clipping), got {max_norm!r}")
    check_int(batch_dims, "batch_dims")
    wd_1d = weight_decay if weight_decay_1d is None else weight_decay_1d
    check_nonneg(wd_1d, "weight_decay_1d")
    scale_c = gamma * b1 / (1.0 - b1)

    def init(params):
        for k, v in params.items():
            if v.ndim < batch_dims + 1:
                raise ValueError(f"params['{k}'] has {v.ndim} dims, fewer than batch_dims+1 = {batch_dims + 1}")
        return MARSState(step_counter(), *(zeros_like_tree(params) for _ in range(3)))

    def update(grads, state, params=None):
        check_same_keys(grads, params)
        check_same_keys(grads, state.exp_avg, "grads and optimizer state")
        check_finite(grads)
        if (weight_decay or wd_1d) and params is None:
            raise ValueError("params is required when weight_decay != 0")
        eta = resolve_lr(lr, state.step)
        t = int(state.step) + 1
        updates, ms, vs = {}, {}, {}
        for k, g in grads.items():
            is_matrix = g.ndim - batch_dims == 2
            if is_matrix or optimize_1d:
                c = g + scale_c * (g - state.last_grad[k])
                if max_norm is not None:
                    c = _clip(c, float(max_norm), batch_dims)
                beta1, beta2, step, wd = b1, b2, eta, weight_decay
            else:
                c = g
                beta1, beta2, step, wd = c1, c2, eta * lr_1d_factor, wd_1d
            m = torch.lerp(state.exp_avg[k], c, 1 - beta1)
            v = beta2 * state.exp_avg_sq[k] + (1 - beta2) * c * c
            denom = (v / (1 - beta2 ** t)).sqrt() + eps
            d = -step * (m / (1 - beta1 ** t)) / denom
            d = decoupled_decay(d, step, wd, params, k)
            updates[k], ms[k], vs[k] = d, m, v
        return updates, MARSState(state.step + 1, ms, vs, {k: g.clone() for k, g in grads.items()})

    return Optimizer(init, update, name="mars",
                     hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                                gamma=gamma, max_norm=max_norm, optimize_1d=optimize_1d,
                                lr_1d_factor=lr_1d_factor, betas_1d=(c1, c2),
                                weight_decay_1d=wd_1d, batch_dims=batch_dims))

"""Adan (Xie et al. 2022, arXiv 2208.06677), in the official implementation's convention.

Source: the paper's Algorithm 1 and the official PyTorch code (sail-sg/Adan, ``adan.py``).
The paper writes each beta as the weight of the *new* term (m_k = (1-b1) m + b1 g with
b1 = 0.02); the official code writes beta as the weight of the *old* term, default
betas = (0.98, 0.92, 0.99). We follow the code's convention (= 1 - paper's betas), so
``betas[0]`` is the usual momentum and ``mu = 1 - betas[0]`` has its usual meaning.

Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): equals pytorch-optimizer's
``Adan(lr, betas, weight_decay)`` (proximal decay; ``no_prox=True`` <-> its
``weight_decouple=True``) to fp64 rounding.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from lmo.base import (check_update_inputs, Optimizer, ScalarOrSchedule, check_beta, check_lr,
                      check_mu, check_nonneg, resolve_lr, step_counter, zeros_like_tree)


class AdanState(NamedTuple):
    """step t, m_t (gradient EMA), v_t (gradient-difference EMA), n_t (squared EMA), g_{t-1}."""

    step: torch.Tensor
    exp_avg: dict
    exp_avg_diff: dict
    exp_avg_sq: dict
    prev_grad: dict


def adan(lr: ScalarOrSchedule = 1e-3, betas=(0.98, 0.92, 0.99), eps: float = 1e-8,
         weight_decay: float = 0.0, *, no_prox: bool = False,
         mu: float | None = None) -> Optimizer:
    """Adan; ``updates`` are displacements d_t (x_{t+1} = x_t + d_t), t = 1, 2, ...::

        delta_t = g_t - g_{t-1}                   (delta_1 = 0: g_0 := g_1, as the official code)
        m_t = b1 m_{t-1} + (1 - b1) g_t
        v_t = b2 v_{t-1} + (1 - b2) delta_t
        n_t = b3 n_{t-1} + (1 - b3) (g_t + b2 delta_t)^2
        D   = sqrt(n_t / (1 - b3^t)) + eps
        u_t = m_t / ((1 - b1^t) D) + b2 v_t / ((1 - b2^t) D)
        x_{t+1} = (x_t - eta_t u_t) / (1 + eta_t lambda)      (proximal decay, default)
        x_{t+1} = (1 - eta_t lambda) x_t - eta_t u_t          (no_prox=True)

    eta_t = lr(t - 1) for a schedule. ``mu`` overrides b1 as b1 = 1 - mu; b2, b3 stay.
    The official code's optional global grad clipping (max_grad_norm) is left to
    ``lmo.chain.clip_by_global_norm``.
    """
    check_lr(lr)
    if len(betas) != 3:
        raise ValueError(f"betas must have three entries (b1, b2, b3), got {betas!r}")
    if mu is not None:
        check_mu(mu)
        betas = (1.0 - mu, betas[1], betas[2])
    b1, b2, b3 = (float(b) for b in betas)
    for i, b in enumerate((b1, b2, b3)):
        check_beta(b, f"betas[{i}]")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")

    def init(params):
        return AdanState(step_counter(), *(zeros_like_tree(params) for _ in range(4)))

    def update(grads, state, params=None):
        check_update_inputs(grads, params, state.exp_avg, weight_decay)
        eta = resolve_lr(lr, state.step)
        t = int(state.step) + 1
        bc1, bc2, bc3 = 1 - b1 ** t, 1 - b2 ** t, math.sqrt(1 - b3 ** t)
        out = ({}, {}, {}, {}, {})
        for k, g in grads.items():
            delta = g - state.prev_grad[k] if t > 1 else torch.zeros_like(g)
            m = torch.lerp(state.exp_avg[k], g, 1 - b1)
            v = torch.lerp(state.exp_avg_diff[k], delta, 1 - b2)
            c = g + b2 * delta
            n = b3 * state.exp_avg_sq[k] + (1 - b3) * c * c
            denom = n.sqrt() / bc3 + eps
            u = (m / bc1 + (b2 / bc2) * v) / denom
            if weight_decay:
                x = params[k]
                if no_prox:
                    d = -eta * weight_decay * x - eta * u
                else:
                    d = (x - eta * u) / (1 + eta * weight_decay) - x
            else:
                d = -eta * u
            for store, val in zip(out, (d, m, v, n, g)):
                store[k] = val
        updates, m, v, n, gprev = out
        return updates, AdanState(state.step + 1, m, v, n, {k: x.clone() for k, x in gprev.items()})

    return Optimizer(init, update, name="adan",
                     hyper=dict(lr=lr, betas=(b1, b2, b3), eps=eps, weight_decay=weight_decay,
                                no_prox=no_prox))

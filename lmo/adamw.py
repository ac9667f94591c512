"""AdamW (Loshchilov & Hutter 2019) as a pure optimizer, matching torch.optim.AdamW.

With t = 1, 2, ... (steps taken after this one) and eta = lr(t - 1)::

    m_t = beta1 m_{t-1} + (1 - beta1) g_t
    v_t = beta2 v_{t-1} + (1 - beta2) g_t^2           (amsgrad: vmax_t = max(vmax_{t-1}, v_t))
    d_t = -eta lambda x_t - eta / (1 - beta1^t) * m_t / (sqrt(v_t / (1 - beta2^t)) + eps)

Weight decay is decoupled and sees x_t (the ``params`` given to ``update``). ``mu``
overrides beta1 as beta1 = 1 - mu. Elementwise, so leading batch dims are free.

Also cross-checked against heavyball's ``AdamW(lr, betas, weight_decay)`` (fp32 rounding;
tests/lmo/test_reference_heavyball.py).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from lmo.base import (betas_with_mu, check_update_inputs, Optimizer, ScalarOrSchedule, check_lr,
                      check_nonneg, resolve_lr, step_counter, decoupled_decay, zeros_like_tree)


class AdamWState(NamedTuple):
    """step t (int64 scalar), first moment m_t, second moment v_t (and max v for amsgrad)."""

    step: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict
    max_exp_avg_sq: dict


def adamw(lr: ScalarOrSchedule = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
          weight_decay: float = 0.01, amsgrad: bool = False, *, mu: float | None = None) -> Optimizer:
    """AdamW; keywords as torch.optim.AdamW (module docstring has the update)."""
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")

    def init(params):
        return AdamWState(step_counter(), zeros_like_tree(params), zeros_like_tree(params),
                          zeros_like_tree(params) if amsgrad else {})

    def update(grads, state, params=None):
        check_update_inputs(grads, params, state.exp_avg, weight_decay)
        eta = resolve_lr(lr, state.step)
        t = int(state.step) + 1
        bc1, bc2_sqrt = 1.0 - b1 ** t, math.sqrt(1.0 - b2 ** t)
        updates, m_new, v_new, vmax_new = {}, {}, {}, {}
        for k, g in grads.items():
            m = torch.lerp(state.exp_avg[k], g, 1.0 - b1)
            v = state.exp_avg_sq[k] * b2 + (1.0 - b2) * g * g
            if amsgrad:
                vmax_new[k] = torch.maximum(state.max_exp_avg_sq[k], v)
                denom = vmax_new[k].sqrt() / bc2_sqrt + eps
            else:
                denom = v.sqrt() / bc2_sqrt + eps
            d = -(eta / bc1) * m / denom
            d = decoupled_decay(d, eta, weight_decay, params, k)
            updates[k], m_new[k], v_new[k] = d, m, v
        return updates, AdamWState(state.step + 1, m_new, v_new, vmax_new)

    return Optimizer(init, update, name="adamw",
                     hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))

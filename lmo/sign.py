"""Sign-based optimizers: Lion (Chen et al. 2023) and Signum (Bernstein et al. 2018).

Both take steps along the l_inf LMO, lmo(c) = -sign(c) (lmo.geometry.Sign), so every
entry moves by exactly eta (or 0 where c = 0).

Lion (the paper's Algorithm 2, decoupled weight decay)::

    c_t = beta1 m_{t-1} + (1 - beta1) g_t
    d_t = -eta_t (sign(c_t) + lambda x_t)
    m_t = beta2 m_{t-1} + (1 - beta2) g_t

Signum (momentum then sign)::

    m_t = beta m_{t-1} + (1 - beta) g_t,      d_t = -eta_t sign(m_t) - eta_t lambda x_t

Cross-checked: ``lion(lr, betas, weight_decay)`` equals lion-pytorch's ``Lion(lr, betas,
weight_decay)`` and pytorch-optimizer's ``Lion`` to fp64 rounding
(tests/lmo/test_reference_lion_pytorch.py, test_reference_pytorch_optimizer.py).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lmo.base import (betas_with_mu, check_update_inputs, Optimizer, ScalarOrSchedule, check_beta,
                      check_lr, check_nonneg, resolve_lr, step_counter, decoupled_decay, zeros_like_tree)
from lmo.geometry import Sign
from lmo.lmo_momentum import lmo_momentum


class LionState(NamedTuple):
    """step t (int64 scalar) and the momentum m_{t-1}."""

    step: torch.Tensor
    momentum: dict


def lion(lr: ScalarOrSchedule = 1e-4, betas=(0.9, 0.99), weight_decay: float = 0.0, *,
         mu: float | None = None) -> Optimizer:
    """Lion; ``mu`` overrides betas[0] (the interpolation weight of the update) as 1 - mu."""
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(weight_decay, "weight_decay")
    geometry = Sign(event_ndim=1)

    def init(params):
        return LionState(step_counter(), zeros_like_tree(params))

    def update(grads, state, params=None):
        check_update_inputs(grads, params, state.momentum, weight_decay)
        eta = resolve_lr(lr, state.step)
        updates, new_m = {}, {}
        for k, g in grads.items():
            m = state.momentum[k]
            c = torch.lerp(m, g, 1.0 - b1)
            d = eta * geometry.lmo(c)
            d = decoupled_decay(d, eta, weight_decay, params, k)
            updates[k] = d
            new_m[k] = torch.lerp(m, g, 1.0 - b2)
        return updates, LionState(state.step + 1, new_m)

    return Optimizer(init, update, name="lion", hyper=dict(lr=lr, betas=(b1, b2), weight_decay=weight_decay))


def signum(lr: ScalarOrSchedule = 1e-4, momentum: float = 0.9, weight_decay: float = 0.0, *,
           mu: float | None = None, init_momentum: str = "zero") -> Optimizer:
    """Signum = LMO-momentum in the l_inf geometry (``mu`` overrides momentum as 1 - mu)."""
    if mu is None:
        check_beta(momentum, "momentum")
        mu = 1.0 - momentum
    return lmo_momentum(lr, Sign(event_ndim=1), mu=mu, weight_decay=weight_decay,
                        init_momentum=init_momentum, matrix_only=False, name="signum")

"""NAdam (Dozat 2016) as torch.optim.NAdam implements it, plus optax's Nesterov-Adam form.

Source: torch.optim.NAdam (torch 2.x, ``_single_tensor_nadam``); optax ``adam(nesterov=True)``.
The two differ (torch uses Dozat's momentum-decay schedule psi, optax a constant beta1);
``variant="torch"`` (default) follows torch so a step-for-step cross-check is possible.

Also cross-checked against heavyball's ``NAdam(lr, betas)`` (fp32 rounding;
tests/lmo/test_reference_heavyball.py).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lmo.base import (betas_with_mu, check_update_inputs, Optimizer, ScalarOrSchedule, check_lr,
                      check_nonneg, resolve_lr, step_counter, decoupled_decay, zeros_like_tree)


class NAdamState(NamedTuple):
    """step t (int64 scalar, steps taken), prod_{i<=t} mu_i (float64 scalar), m_t, v_t."""

    step: torch.Tensor
    mu_product: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict


def nadam(lr: ScalarOrSchedule = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
          weight_decay: float = 0.0, *, momentum_decay: float = 4e-3,
          decoupled_weight_decay: bool = False, variant: str = "torch",
          mu: float | None = None) -> Optimizer:
    """NAdam; ``updates`` are displacements d_t with x_{t+1} = x_t + d_t.

    ``variant="torch"`` (torch.optim.NAdam), with t = 1, 2, ... and eta_t = lr(t - 1)::

        g   <- g_t + lambda x_t                    (coupled L2; if not decoupled_weight_decay)
        psi_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay)),  Pi_t = prod_{i<=t} psi_i
        m_t = beta1 m_{t-1} + (1 - beta1) g,   v_t = beta2 v_{t-1} + (1 - beta2) g^2
        D   = sqrt(v_t / (1 - beta2^t)) + eps
        d_t = -eta_t [(1 - psi_t)/(1 - Pi_t) g/D + psi_{t+1}/(1 - Pi_t psi_{t+1}) m_t/D]
              - eta_t lambda x_t                   (only if decoupled_weight_decay)

    ``variant="optax"`` (optax.adam(nesterov=True)): with the same m_t, v_t and g = g_t,
    ``d_t = -eta_t [beta1 m_t/(1 - beta1^(t+1)) + (1 - beta1) g/(1 - beta1^t)] /
    (sqrt(v_t/(1 - beta2^t)) + eps)``, weight decay decoupled (AdamW-style) when nonzero.

    ``mu`` overrides beta1 as beta1 = 1 - mu (the gap-vs-momentum sweep's one number).
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_nonneg(momentum_decay, "momentum_decay")
    if variant not in ("torch", "optax"):
        raise ValueError(f"variant must be 'torch' or 'optax', got {variant!r}")

    def init(params):
        return NAdamState(step=step_counter(),
                          mu_product=torch.ones((), dtype=torch.float64),
                          exp_avg=zeros_like_tree(params),
                          exp_avg_sq=zeros_like_tree(params))

    def update(grads, state, params=None):
        check_update_inputs(grads, params, state.exp_avg, weight_decay)
        eta = resolve_lr(lr, state.step)
        t = int(state.step) + 1
        bc2 = 1.0 - b2 ** t
        if variant == "torch":
            psi = b1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
            psi_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
            mu_product = state.mu_product * psi
            pi = float(mu_product)
            c_g = (1.0 - psi) / (1.0 - pi)
            c_m = psi_next / (1.0 - pi * psi_next)
        else:
            mu_product = state.mu_product
            c_g = (1.0 - b1) / (1.0 - b1 ** t)
            c_m = b1 / (1.0 - b1 ** (t + 1))
        decoupled = decoupled_weight_decay or variant == "optax"
        updates, m_new, v_new = {}, {}, {}
        for k, g in grads.items():
            if weight_decay and not decoupled:
                g = g + weight_decay * params[k]
            m = torch.lerp(state.exp_avg[k], g, 1.0 - b1)
            v = state.exp_avg_sq[k] * b2 + (1.0 - b2) * g * g
            denom = (v / bc2).sqrt() + eps
            d = -eta * (c_g * g + c_m * m) / denom
            if decoupled:
                d = decoupled_decay(d, eta, weight_decay, params, k)
            updates[k], m_new[k], v_new[k] = d, m, v
        return updates, NAdamState(state.step + 1, mu_product, m_new, v_new)

    return Optimizer(init, update, name="nadam",
                     hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                                momentum_decay=momentum_decay,
                                decoupled_weight_decay=decoupled_weight_decay, variant=variant))

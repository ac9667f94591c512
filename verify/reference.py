"""An independent re-statement of docs/design.md §4's recursions, for cross-checking lmo.

Momentum LMO with m_0 = g_0 (the theory's initialisation):

    m_0 = g_0,  m_t = (1 - mu) m_{t-1} + mu g_t,  d_t = eta lmo(m_t)

and the ways of applying d_t (d_{<0} = 0):

    sync:        x_{t+1} = x_t + d_t                       y_t = x_t
    delayed tau: x_{t+1} = x_t + d_{t-tau}                 y_t = x_t + d_{t-1} + ... + d_{t-tau}
    ef:          x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}       y_t = x_t + d_{t-1} - d_{t-2}

In every case y_{t+1} = y_t + d_t. This module is the verifier's own reference, written
from the formulas above and not from lmo's code; verify.variants prefers lmo's optimizers
and the tests compare the two.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lmo.base import Optimizer
from lmo.hyperparameters import check_lr, check_mu
from lmo.variants import DELAYED, EF, SYNC, THEORY_VARIANTS as VARIANTS   # the names only


class RefState(NamedTuple):
    momentum: dict
    pending: tuple  # (d_{t-1}, d_{t-2}, ...) as dicts, newest first
    step: torch.Tensor


def reference_optimizer(lr: float, geometry, mu: float, variant: str = SYNC, delay: int = 1) -> Optimizer:
    """The recursion of the module docstring as an lmo.base.Optimizer (pure functions)."""
    check_lr(lr)
    check_mu(mu)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if not isinstance(delay, int) or delay < 1:
        raise ValueError(f"delay must be an int >= 1, got {delay!r}")
    depth = {SYNC: 0, DELAYED: delay, EF: 2}[variant]

    def init(params):
        zeros = {k: torch.zeros_like(v) for k, v in params.items()}
        return RefState(zeros, tuple(dict(zeros) for _ in range(depth)), torch.zeros((), dtype=torch.long))

    def update(grads, state, params=None):
        first = bool(state.step == 0)
        m = {k: grads[k].clone() if first else (1 - mu) * state.momentum[k] + mu * grads[k] for k in grads}
        d = {k: lr * geometry.lmo(m[k]) for k in m}
        if variant == SYNC:
            applied, pending = d, ()
        elif variant == DELAYED:
            applied = state.pending[-1]
            pending = (d,) + state.pending[:-1]
        else:
            p1, p2 = state.pending
            applied = {k: 2 * p1[k] - p2[k] for k in p1}
            pending = (d, p1)
        return dict(applied), RefState(m, pending, state.step + 1)

    def virtual(params, state):
        if variant == SYNC:
            return dict(params)
        if variant == DELAYED:
            return {k: params[k] + sum(p[k] for p in state.pending) for k in params}
        p1, p2 = state.pending
        return {k: params[k] + p1[k] - p2[k] for k in params}

    name = variant if variant != DELAYED else f"{DELAYED}{delay}"
    return Optimizer(init, update, virtual, name=f"reference_lmo_momentum_{name}",
                     hyper=dict(lr=lr, mu=mu, variant=variant, delay=delay))

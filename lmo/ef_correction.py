"""Error feedback for a one-step delay (the paper's correction), as a wrapper.

    x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}          d_{-1} = d_{-2} = 0
    y_t     = x_t + d_{t-1} - d_{t-2}            y_{t+1} = y_t + d_t exactly

The applied step doubles the delayed update and takes back the part of the previous one
that the delay had already applied; the virtual iterate y_t follows the synchronous
recursion while every gradient is taken at x_t, with r_t = ||x_t - y_t|| =
eta ||lmo(m_{t-1}) - lmo(m_{t-2})|| <= 2 eta for LMO methods (small when consecutive
directions agree, i.e. with high momentum). Memory: the delay queue d_{t-1} plus
exactly one extra model-sized buffer, d_{t-2}.

The inner optimizer's weight decay sees x_t (as in lmo.delay.delayed).

tau > 1 is refused: the analogue would be x_{t+1} = x_t + d_{t-tau} + (d_{t-tau} - d_{t-tau-1})
... i.e. extrapolating the pending updates, which needs tau + 1 buffers and has no
support in the paper; use lmo.delay.delayed for larger delays.

Mitigations as in lmo.delay: ``sync_start=K`` (the EF buffers start empty at t = K),
``sync_cooldown=K`` with ``total_steps`` (at the switch x jumps to y: x_{t+1} = y_t + d_t),
``dc_asgd=lambda`` (gradient corrected towards y_t: g + lambda g*g*(y_t - x_t)).

The state says what is applied next (``lmo.delay.next_applied``: 2 d_{t-1} - d_{t-2}) and
y_t - x_t (``lmo.delay.virtual_offset``: d_{t-1} - d_{t-2}); ``update`` calls the same.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lmo.base import Optimizer, check_same_keys, step_counter
from lmo.delay import _check_schedule_args, dc_correct, flush_applied, phase


class ErrorFeedbackState(NamedTuple):
    """inner state; d_{t-1} (the delay queue) and d_{t-2} (the EF buffer); step t."""

    inner: object
    prev: dict
    prev2: dict
    step: torch.Tensor

    def next_applied(self) -> dict:
        """a_t = 2 d_{t-1} - d_{t-2}: what an asynchronous step t applies (docs/design.md §4)."""
        return {k: self.prev[k].mul(2).sub_(self.prev2[k]) for k in self.prev}

    def offset(self) -> dict:
        """y_t - x_t = d_{t-1} - d_{t-2}: the part of the delayed update not applied yet."""
        return {k: self.prev[k] - self.prev2[k] for k in self.prev}


def error_feedback(opt: Optimizer, *, delay: int = 1, sync_start: int = 0, sync_cooldown: int = 0,
                   total_steps: int | None = None, dc_asgd: float = 0.0) -> Optimizer:
    """Wrap ``opt`` with the one-step-delay error feedback of the module docstring.

    >>> from lmo.steepest_descent import signum
    >>> opt, x = error_feedback(signum(0.1)), {"w": torch.zeros(1)}
    >>> state, applied = opt.init(x), []
    >>> for _ in range(3):
    ...     a, state = opt.update({"w": torch.tensor([1.0])}, state, x)
    ...     applied.append(a["w"].item())
    >>> [round(a, 4) for a in applied]          # 2 d_{t-1} - d_{t-2}, d = -0.1: 0, -0.2, -0.1
    [0.0, -0.2, -0.1]
    """
    if delay != 1:
        raise ValueError(f"delay: error_feedback is defined for a one-step delay only, got {delay!r} "
                         "(see the module docstring)")
    _check_schedule_args(sync_start, sync_cooldown, total_steps, dc_asgd)

    def init(params):
        z = lambda: {k: torch.zeros_like(v) for k, v in params.items()}  # noqa: E731
        return ErrorFeedbackState(opt.init(params), z(), z(), step_counter())

    def update(grads, state, params=None):
        check_same_keys(grads, state.prev, "grads and EF buffers")
        # finiteness is checked by the inner optimizer before it computes anything
        t = int(state.step)
        sync = phase(t, sync_start, sync_cooldown, total_steps) == "sync"
        off = state.offset() if (dc_asgd or sync) else None   # one buffer, only where it is used
        if dc_asgd:
            grads = dc_correct(grads, off, dc_asgd)
        d, inner = opt.update(grads, state.inner, params)
        if sync:   # flush: x_{t+1} = y_t + d_t
            zeros = {k: torch.zeros_like(v) for k, v in d.items()}
            return flush_applied(off, d), ErrorFeedbackState(inner, zeros, dict(zeros), state.step + 1)
        return state.next_applied(), ErrorFeedbackState(inner, dict(d), dict(state.prev), state.step + 1)

    def virtual(params, state):
        off = state.offset()
        return {k: v + off[k].to(v.dtype) for k, v in params.items()}

    return Optimizer(init, update, virtual=virtual, name=f"error_feedback({opt.name})",
                     hyper=dict(inner=opt.hyper, sync_start=sync_start, sync_cooldown=sync_cooldown,
                                total_steps=total_steps, dc_asgd=dc_asgd))

"""Update delay (PipeDream-2BW) and its mitigations, as a wrapper around any optimizer.

The gradient g_t is taken at the current x_t, the inner optimizer computes d_t at once
(its weight decay sees x_t, the iterate the gradient was taken at: a real pipeline must
compute its update from that same weight version), and step t applies the update
computed tau steps earlier (docs/design.md §4)::

    delayed:  x_{t+1} = x_t + d_{t-tau}            d_{<0} = 0 (the pipeline fills)
    virtual:  y_t = x_t + d_{t-tau} + ... + d_{t-1},   so   y_{t+1} = y_t + d_t

PipeDream-2BW has tau = 1 at any depth. Index alignment with a real pipeline: its first
optimizer step uses the gradient of x_0 and lands at x_1, which here is x_2 (step 0
applies d_{-1} = 0); after that shift the trajectories coincide (tests/lmo/test_pipedream.py).

``delay`` may be a mapping name -> tau (per-block delays). The pending updates are a
queue in the state (oldest first), so a checkpoint loses nothing.

Mitigations (the paper's baselines):

- ``sync_start=K``: steps t < K apply d_t at once. At t = K nothing is pending, so that
  step applies nothing (the pipeline refills) and the delay starts.
- ``sync_cooldown=K`` (needs ``total_steps=T``): from t = T - K on, updates apply at
  once. At the switch the queue is flushed, x_{t+1} = y_t + d_t = y_{t+1}: the iterate
  jumps to the virtual one, so no computed update is lost or applied twice.
- ``dc_asgd=lambda`` (Zheng et al. 2017, delay compensation): the gradient is corrected
  elementwise towards the point where its update will land, the virtual iterate::

      g~_t = g_t + lambda * g_t * g_t * (y_t - x_t)

  which is DC-ASGD's ``g + lambda g*g*(x_now - x_stale)`` after the index alignment
  above (the stale-point view evaluates g at x_{t-tau} and applies it at x_t).
"""
from __future__ import annotations

from typing import Mapping, NamedTuple

import torch

from lmo.base import Optimizer, check_nonneg, check_same_keys, step_counter, check_int


class DelayState(NamedTuple):
    """inner optimizer state; pending updates per name (tuple, oldest first); step t."""

    inner: object
    pending: dict
    step: torch.Tensor


def _check_delay(delay) -> None:
    items = delay.items() if isinstance(delay, Mapping) else [("", delay)]
    for k, tau in items:
        where = f"delay['{k}']" if k else "delay"
        check_int(tau, where)


def _check_schedule_args(sync_start, sync_cooldown, total_steps, dc_asgd) -> None:
    check_int(sync_start, "sync_start")
    check_int(sync_cooldown, "sync_cooldown")
    if sync_cooldown and (not isinstance(total_steps, int) or total_steps < sync_cooldown):
        raise ValueError(f"total_steps must be an int >= sync_cooldown when sync_cooldown > 0, got {total_steps!r}")
    check_nonneg(dc_asgd, "dc_asgd")


def phase(step: int, sync_start: int, sync_cooldown: int, total_steps) -> str:
    """'sync' or 'async' for step t under the sync-start / sync-cooldown mitigations."""
    if step < sync_start:
        return "sync"
    if sync_cooldown and step >= total_steps - sync_cooldown:
        return "sync"
    return "async"


def dc_correct(grads, offset, lam: float) -> dict:
    """DC-ASGD: g + lambda * g * g * offset, elementwise (offset = y_t - x_t)."""
    if not lam:
        return dict(grads)
    return {k: g + lam * g * g * offset[k].to(g.dtype) for k, g in grads.items()}


def delayed(opt: Optimizer, delay=1, *, sync_start: int = 0, sync_cooldown: int = 0,
            total_steps: int | None = None, dc_asgd: float = 0.0) -> Optimizer:
    """Wrap ``opt`` so that step t applies d_{t-tau} (module docstring)."""
    _check_delay(delay)
    _check_schedule_args(sync_start, sync_cooldown, total_steps, dc_asgd)

    def tau_of(name):
        if isinstance(delay, Mapping):
            if name not in delay:
                raise KeyError(f"delay: no entry for parameter '{name}'")
            return delay[name]
        return delay

    def init(params):
        pending = {k: tuple(torch.zeros_like(v) for _ in range(tau_of(k))) for k, v in params.items()}
        return DelayState(opt.init(params), pending, step_counter())

    def offset(state):
        """y_t - x_t = sum of the pending updates."""
        out = {}
        for k, q in state.pending.items():
            out[k] = None if not q else (q[0] if len(q) == 1 else sum(q[1:], q[0]))
        return out

    def update(grads, state, params=None):
        check_same_keys(grads, state.pending, "grads and delay queue")
        # finiteness is checked by the inner optimizer before it computes anything
        t = int(state.step)
        off = offset(state)   # views for tau = 1: no copy
        if dc_asgd:
            grads = dc_correct(grads, {k: o if o is not None else torch.zeros_like(grads[k])
                                       for k, o in off.items()}, dc_asgd)
        d, inner = opt.update(grads, state.inner, params)
        sync = phase(t, sync_start, sync_cooldown, total_steps) == "sync"
        applied, pending = {}, {}
        for k, q in state.pending.items():
            if not q:                                   # tau = 0 for this block
                applied[k], pending[k] = d[k], q
            elif sync:                                  # flush: x_{t+1} = y_t + d_t
                applied[k] = off[k] + d[k]
                pending[k] = tuple(torch.zeros_like(x) for x in q)
            else:
                applied[k] = q[0]
                pending[k] = q[1:] + (d[k],)
        return applied, DelayState(inner, pending, state.step + 1)

    def virtual(params, state):
        off = offset(state)
        return {k: (v + off[k].to(v.dtype)) if off[k] is not None else v for k, v in params.items()}

    return Optimizer(init, update, virtual=virtual, name=f"delayed({opt.name})",
                     hyper=dict(inner=opt.hyper, delay=dict(delay) if isinstance(delay, Mapping) else delay,
                                sync_start=sync_start, sync_cooldown=sync_cooldown,
                                total_steps=total_steps, dc_asgd=dc_asgd))

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

What is applied is a function of the state alone, the one formula that the wrapper's
``update``, the trainer and the pipeline (``gpu_runs.pipeline.delay``) all call:
:func:`next_applied` (a_t of an asynchronous step: d_{t-tau}; EF: 2 d_{t-1} - d_{t-2}),
:func:`virtual_offset` (y_t - x_t) and :func:`flush_applied` (a synchronous step:
a_t = (y_t - x_t) + d_t).

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
    """inner optimizer state; pending updates per name (tuple, oldest first); step t.

    After t updates ``pending[k]`` holds d_{t-tau}, ..., d_{t-1} (d_{<0} = 0)."""

    inner: object
    pending: dict
    step: torch.Tensor

    def next_applied(self) -> dict:
        """a_t = d_{t-tau}: the oldest pending update, what an asynchronous step t applies
        (docs/design.md §4); None for a block with tau = 0 (its a_t = d_t needs g_t)."""
        return {k: (q[0] if q else None) for k, q in self.pending.items()}

    def offset(self) -> dict:
        """y_t - x_t = d_{t-tau} + ... + d_{t-1} (the pending updates); None where tau = 0."""
        return {k: (None if not q else (q[0] if len(q) == 1 else sum(q[1:], q[0])))
                for k, q in self.pending.items()}


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


def next_applied(state) -> dict:
    """The displacement a_t that an asynchronous step t applies, from the state after t
    updates alone (docs/design.md §4), for the state of :func:`delayed` or
    :func:`lmo.ef_correction.error_feedback`::

        delayed:  a_t = d_{t-tau}                 EF:  a_t = 2 d_{t-1} - d_{t-2}

    It does not depend on g_t, so a pipeline can create x_{t+1} = x_t + a_t before step t's
    gradient exists (2BW calls it right after U(t-1)). A synchronous step (sync_start /
    sync_cooldown) applies :func:`flush_applied` instead, which needs d_t."""
    return _method(state, "next_applied")()


def virtual_offset(state) -> dict:
    """y_t - x_t from the state after t updates (docs/design.md §4)::

        delayed:  y_t - x_t = d_{t-tau} + ... + d_{t-1}      EF:  y_t - x_t = d_{t-1} - d_{t-2}

    None for a block with tau = 0 (y = x there). DC-ASGD corrects towards it, and
    ``opt.virtual_iterate(x, state)`` is x + this offset."""
    return _method(state, "offset")()


def flush_applied(offset, d) -> dict:
    """The step of a synchronous phase: x_{t+1} = y_t + d_t, i.e. a_t = (y_t - x_t) + d_t,
    the same for delayed and EF (the pending part is applied, nothing is lost or doubled)."""
    return {k: d[k] if offset[k] is None else offset[k] + d[k] for k in d}


def _method(state, name):
    fn = getattr(state, name, None)
    if not callable(fn):
        raise TypeError(f"state: expected the state of lmo.delayed or lmo.error_feedback, "
                        f"got {type(state).__name__}")
    return fn


def dc_correct(grads, offset, lam: float) -> dict:
    """DC-ASGD: g~ = g + lambda * g * g * offset, elementwise, with offset = y_t - x_t
    (:func:`virtual_offset`; None, a block with tau = 0, is y = x: a zero offset). The one
    correction of the trainer's wrappers and the pipeline's stages (``gpu_runs.pipeline.delay``)."""
    if not lam:
        return dict(grads)
    return {k: g + lam * g * g * (torch.zeros_like(g) if offset[k] is None else offset[k].to(g.dtype))
            for k, g in grads.items()}


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

    def update(grads, state, params=None):
        check_same_keys(grads, state.pending, "grads and delay queue")
        # finiteness is checked by the inner optimizer before it computes anything
        t = int(state.step)
        off = state.offset()   # views for tau = 1: no copy
        if dc_asgd:
            grads = dc_correct(grads, off, dc_asgd)
        d, inner = opt.update(grads, state.inner, params)
        if phase(t, sync_start, sync_cooldown, total_steps) == "sync":   # flush: x_{t+1} = y_t + d_t
            pending = {k: tuple(torch.zeros_like(x) for x in q) for k, q in state.pending.items()}
            return flush_applied(off, d), DelayState(inner, pending, state.step + 1)
        nxt = state.next_applied()
        applied = {k: d[k] if nxt[k] is None else nxt[k] for k in state.pending}   # tau = 0: d_t
        pending = {k: q[1:] + (d[k],) if q else q for k, q in state.pending.items()}
        return applied, DelayState(inner, pending, state.step + 1)

    def virtual(params, state):
        off = state.offset()
        return {k: (v + off[k].to(v.dtype)) if off[k] is not None else v for k, v in params.items()}

    return Optimizer(init, update, virtual=virtual, name=f"delayed({opt.name})",
                     hyper=dict(inner=opt.hyper, delay=dict(delay) if isinstance(delay, Mapping) else delay,
                                sync_start=sync_start, sync_cooldown=sync_cooldown,
                                total_steps=total_steps, dc_asgd=dc_asgd))

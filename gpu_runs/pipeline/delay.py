"""The trainer's 2bw update rule on one pipeline stage: ``lmo.variants.wrap(opt, variant)``
(2bw: ``lmo.delay.delayed(opt, 1)``, ef: ``lmo.ef_correction.error_feedback(opt)``) with
sync_start / sync_cooldown, wrapped around the stage's base optimizer and applied to the
stage's parameter block only.

The wrapper is elementwise in the parameters (its queue d_{t-1}, the EF buffer d_{t-2},
the step counter), so on each stage it holds exactly the trainer's state restricted to
that block, and a stage checkpoint is the trainer's checkpoint restricted to it.

What a pipeline needs beyond the wrapper's ``update`` (which returns the trainer's
applied step a_t, x_{t+1} = x_t + a_t):

- ``is_sync(t)``: a synchronous step's a_t depends on g_t (sync: a_t = y_t - x_t + d_t),
  so x_{t+1} can only exist after U(t): a flush.
- ``next_applied(state)``: for an asynchronous step t + 1 the applied step a_{t+1} is
  known right after U(t): ``lmo.delay.next_applied`` of the wrapper's state, the same
  function the wrapper's own ``update`` applies (``delayed``: d_t; EF: 2 d_t - d_{t-1});
  2BW creates x_{t+2} = x_{t+1} + a_{t+1} there, before step t + 2's first forward.
- ``offset(state, like)``: y_t - x_t (``lmo.delay.virtual_offset``: the pending part), for
  DC-ASGD's correction g~_t = g_t + lambda g_t * g_t * (y_t - x_t) (``lmo.delay.dc_correct``).
  The trainer corrects before clipping, so the engine corrects at R(t), before the squared norm.

Why DC-ASGD is the engine's here and the wrapper's in the trainer: the trainer's wrapper
corrects g_t inside ``update``, before its inner ``chain(clip, base)`` clips. A stage's
clip is the engine's (the global norm is an all-reduce over stages), between R(t) and
U(t), so the correction must come before it, outside the wrapper: ``wrap`` gets
``dc_asgd=0`` and :meth:`DelayRule.correct` applies the same ``lmo.delay.dc_correct``
to the same offset. Moving the cross-stage clip into the stage wrapper's chain would let
the wrapper correct, but reorders the engine's floating-point work; not done.

Nothing here re-derives a formula or reads the wrapper's fields: one delay path, the lmo one.
"""
from __future__ import annotations

import torch

from lmo.delay import dc_correct, next_applied, phase, virtual_offset
from lmo.variants import EF, TWO_BW, wrap


class DelayRule:
    """The trainer's ``build_optimizer`` for mode 2bw (``ef``, ``sync_start``,
    ``sync_cooldown``, ``dc_asgd``), minus the global-norm clip (the engine clips)."""

    def __init__(self, ef: bool = False, sync_start: int = 0, sync_cooldown: int = 0,
                 total_steps: int = 0, dc_asgd: float = 0.0):
        self.ef, self.sync_start, self.sync_cooldown = ef, sync_start, sync_cooldown
        self.total_steps, self.dc_asgd = total_steps, float(dc_asgd)
        self.opt = None

    def wrap(self, base):
        """The stage optimizer: ``lmo.variants.wrap`` around ``base`` (DC-ASGD stays with the
        engine, :meth:`correct`: see the module docstring)."""
        self.opt = wrap(base, EF if self.ef else TWO_BW, sync_start=self.sync_start,
                        sync_cooldown=self.sync_cooldown, total_steps=self.total_steps)
        return self.opt

    def is_sync(self, t: int) -> bool:
        return phase(t, self.sync_start, self.sync_cooldown, self.total_steps) == "sync"

    def next_applied(self, state) -> dict:
        """a_{t+1} for an asynchronous step t + 1, from the state after U(t)
        (``lmo.delay.next_applied``: d_t, or 2 d_t - d_{t-1} with EF)."""
        return next_applied(state)

    def offset(self, state, like: dict) -> dict:
        """y_t - x_t from the state after t updates (``lmo.delay.virtual_offset``), in the
        dtype of ``like``; zero for a block without a pending update."""
        off = virtual_offset(state)
        return {k: torch.zeros_like(v) if off[k] is None else off[k].to(v.dtype) for k, v in like.items()}

    def correct(self, grads: dict, state) -> dict:
        """DC-ASGD: g + lambda g * g * (y_t - x_t), elementwise (identity when lambda = 0)."""
        if not self.dc_asgd:
            return grads
        return dc_correct(grads, self.offset(state, grads), self.dc_asgd)

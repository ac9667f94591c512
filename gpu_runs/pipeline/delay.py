"""The trainer's 2bw update rule on one pipeline stage: ``Delay.wrap(opt)`` of the run's delay
(``lmo.variants.Delay``; 2bw: ``lmo.delay.delayed(opt, 1)``, ef: ``lmo.ef_correction.error_feedback(opt)``) with
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
- ``correct(grads, state)``: DC-ASGD's g~_t = g_t + lambda g_t * g_t * (y_t - x_t),
  ``lmo.delay.dc_correct`` at ``lmo.delay.virtual_offset`` of the wrapper's state: the two
  functions the wrapper's own ``update`` calls.

One step rule, two call sites. Trainer and stage take the same four steps in the same
order, each through the same ``lmo`` function:

    g~_t = dc_correct(g_t, virtual_offset(state), lambda)            lmo.delay
    c_t  = clip_coefficient(sqrt(squared_norm(g~_t)), max_norm)      lmo.clipping
    d_t, state = update(c_t g~_t, state, x_t)                        the wrapped optimizer
    x_{t+1} = x_t + a_t                                              lmo.delay.next_applied / flush_applied

The trainer's optimizer is the composition ``wrap(chain(clip_by_global_norm, base),
dc_asgd=lambda)``, so its wrapper corrects and its chain clips inside one ``update``. On a
stage ||g~_t||^2 is the sum over stages of each block's ``squared_norm``, an all-reduce
launched at R(t) and awaited at U(t) (``gpu_runs.pipeline.step_rule``), so the correction
and the clip run outside the stage's wrapper: ``wrap`` gets ``dc_asgd=0``, :meth:`correct`
corrects at R(t) and the step rule clips at U(t). Only the all-reduce is the pipeline's own
(the float64 sum is associated per stage: tests/lmo/test_partition_chain_schedules.py bounds
the difference; the trainer == pipeline tests compare the runs).

Nothing here re-derives a formula or reads the wrapper's fields: one delay path, the lmo one.
"""
from __future__ import annotations

from dataclasses import replace

from lmo.delay import dc_correct, next_applied, phase, virtual_offset
from lmo.variants import Delay


class DelayRule:
    """The trainer's ``build_optimizer`` for a one-step ``delay`` (``lmo.variants.Delay`` of kind
    2bw or ef, with its sync_start, sync_cooldown, dc_asgd), minus the global-norm clip (the
    engine clips); ``total_steps``: the horizon sync_cooldown counts back from."""

    def __init__(self, delay: Delay, total_steps: int = 0):
        if not delay.one_step:
            raise ValueError(f"DelayRule: a stage's delay rule is the one-step delay's (2bw, ef), got {delay.kind!r}")
        self.delay, self.total_steps = delay, total_steps
        self.sync_start, self.sync_cooldown, self.dc_asgd = delay.sync_start, delay.sync_cooldown, float(delay.dc_asgd)
        self.opt = None

    def wrap(self, base):
        """The stage optimizer: ``Delay.wrap`` around ``base``, DC-ASGD left out (it stays with
        the engine, :meth:`correct`: see the module docstring)."""
        self.opt = replace(self.delay, dc_asgd=0.0).wrap(base, total_steps=self.total_steps)
        return self.opt

    def is_sync(self, t: int) -> bool:
        return phase(t, self.sync_start, self.sync_cooldown, self.total_steps) == "sync"

    def next_applied(self, state) -> dict:
        """a_{t+1} for an asynchronous step t + 1, from the state after U(t)
        (``lmo.delay.next_applied``: d_t, or 2 d_t - d_{t-1} with EF)."""
        return next_applied(state)

    def correct(self, grads: dict, state) -> dict:
        """DC-ASGD: g + lambda g * g * (y_t - x_t), elementwise (identity when lambda = 0), the
        wrapper's own ``lmo.delay.dc_correct`` at the wrapper's own ``lmo.delay.virtual_offset``."""
        if not self.dc_asgd:
            return grads
        return dc_correct(grads, virtual_offset(state), self.dc_asgd)

"""The trainer's delayed update on one pipeline stage: ``Delay.wrap(opt, taus=...)`` of the run's
delay (``lmo.variants.Delay``: 2bw of any tau >= 1, with a corrector, the pipedream profile or
one delayed group; ef), with sync_start / sync_cooldown, wrapped around the stage's base
optimizer and applied to the stage's parameter block only. The block's delays are
``Delay.taus`` of the stage's own parameters (:meth:`DelayRule.taus_of`): every block tau, or
the stage's own tau_s = P - 1 - s (pipedream profile), or tau / 0 by
``lmo.combine.muon_labels`` (name and shape) of the stage's parameters (one delayed group).

The wrapper is elementwise in the parameters (its queue d_{t-tau} .. d_{t-1}, the EF buffer
d_{t-2}, a corrector's extrapolation, the step counter), so on each stage it holds exactly
the trainer's state restricted to that block, and a stage checkpoint is the trainer's
checkpoint restricted to it.

What a pipeline needs beyond the wrapper's ``update`` (which returns the trainer's
applied step a_t, x_{t+1} = x_t + a_t):

- ``is_sync(t)``: U(t) creates x_{t+1} = x_t + a_t from the wrapper's own output: a
  synchronous step of the mitigations (its a_t depends on g_t), every step of a delay that
  ``gpu_runs.parallelism.flushed_steps`` names (a group left synchronous, whose a_t = d_t),
  and every step of
  the pipedream profile's last stage (delay 0: ``parallelism.applies_at_once``, its U(t) comes
  right before step t + 1's first forward, no flush).
- ``next_applied(state)``: for an asynchronous step t + 1 the applied step a_{t+1} is
  known right after U(t): ``lmo.delay.next_applied`` of the wrapper's state, the same
  function the wrapper's own ``update`` applies (``delayed``: d_{t+1-tau}; EF: 2 d_t - d_{t-1};
  the correctors' states answer it through their DelayState); 2BW creates
  x_{t+2} = x_{t+1} + a_{t+1} there, before step t + 2's first forward.
- ``gradient_point(state, x)``: z_t = ``lmo.lookahead.gradient_point`` (x_t but for the
  look-ahead correctors) of the state after t updates, the weights step t's forward and
  backward run on (the stage stashes z_t); the update itself sees x_t, as the trainer's. On
  the 2BW stream step t's forward comes before U(t - 1): :meth:`DelayRule.advanced` gives the
  state's next extrapolation c a_{t-1} from a_{t-1} = next_applied alone (an update of zero
  gradients, the rest discarded), so the stream runs the look-ahead correctors without a flush.
- ``correct(grads, state)``: DC-ASGD's g~_t = g_t + lambda g_t * g_t * (y_t - x_t),
  ``lmo.delay.dc_correct`` at ``lmo.delay.virtual_offset`` of the wrapper's state: the two
  functions the wrapper's own ``update`` calls.

One step rule, two call sites. Trainer and stage take the same four steps in the same
order, each through the same ``lmo`` function:

    g~_t = dc_correct(g_t, virtual_offset(state), lambda)            lmo.delay
    c_t  = clip_coefficient(sqrt(squared_norm(g~_t)), max_norm)      lmo.clipping
    d_t, state = update(c_t g~_t, state, x_t)                        the wrapped optimizer
    x_{t+1} = x_t + a_t                                              lmo.delay.next_applied / the update's a_t

The trainer's optimizer is the composition ``wrap(chain(clip_by_global_norm, base),
dc_asgd=lambda)``, so its wrapper corrects and its chain clips inside one ``update``. On a
stage ||g~_t||^2 is the sum over stages of each block's ``squared_norm``, an all-reduce
launched at R(t) and awaited at U(t) (``gpu_runs.pipeline.step_rule``), so the correction
and the clip run outside the stage's wrapper: ``wrap`` gets ``dc_asgd=0``, :meth:`correct`
corrects at R(t) and the step rule clips at U(t). Only the all-reduce is the pipeline's own
(the float64 sum is associated per stage: tests/lmo/test_partition_chain_schedules.py bounds
the difference; the trainer == pipeline tests compare the runs). The correctors DC-ASGD-a /
-EMA correct inside their wrapper, before the trainer's clip, which then sees g~_t: the stage
calls the wrapper's two halves itself (``lmo.delay_compensation``): :meth:`compensate` at R(t)
gives g~_t and v_t (the EMA of g * g) from the state after t updates, the step rule clips
g~_t by the all-reduced norm, and :meth:`compensated_update` at U(t) runs the wrapper's inner
delayed update of c_t g~_t and stores v_t, the wrapper's own update with the clip inside::

    g~_t, v_t = compensate(g_t, state, comp)                         lmo.delay_compensation
    c_t  = clip_coefficient(sqrt(sum_s squared_norm(g~_t^s)), max_norm)
    a_t, state = compensated_update(delayed(base, taus), c_t g~_t, v_t, state, x_t)

Nothing here re-derives a formula or reads the wrapper's fields: one delay path, the lmo one.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from lmo.combine import muon_labels
from lmo.delay import dc_correct, delayed, next_applied, phase, virtual_offset
from lmo.delay_compensation import compensate, compensated_update, compensation_of
from lmo.lookahead import gradient_point
from lmo.variants import Delay

from gpu_runs.parallelism import COMPENSATING_CORRECTORS, applies_at_once, flushed_steps, looks_ahead


class DelayRule:
    """The trainer's ``build_optimizer`` for a wrapped ``delay`` (``lmo.variants.Delay`` of kind
    2bw or ef, with its tau, corrector, profile, group, sync_start, sync_cooldown, dc_asgd), minus
    the global-norm clip (the engine clips); ``total_steps``: the horizon sync_cooldown counts
    back from; ``at_once``: this stage's update applies at once (the pipedream profile's last
    stage, ``gpu_runs.parallelism.applies_at_once``)."""

    def __init__(self, delay: Delay, total_steps: int = 0, at_once: bool = False):
        if not delay.wrapped:
            raise ValueError(f"DelayRule: a stage's delay rule is a delayed update's (2bw, ef), got {delay.kind!r}")
        self.delay, self.total_steps = delay, total_steps
        self.sync_start, self.sync_cooldown, self.dc_asgd = delay.sync_start, delay.sync_cooldown, float(delay.dc_asgd)
        self.flushed = flushed_steps(delay)
        self.at_once = at_once   # this stage's U(t) precedes step t + 1 (parallelism.applies_at_once)
        self.lookahead = looks_ahead(delay)
        #: DC-ASGD-a / -EMA: the wrapper's two halves around the clip (:meth:`compensate`)
        self.compensates = delay.corrector in COMPENSATING_CORRECTORS
        self.opt = self.inner = self.compensation = None

    def taus_of(self, params, stage: int):
        """The delays of the stage's own ``params`` (``Delay.taus``): the stage's tau_s = tau - s
        for the pipedream profile (tau = P - 1), tau / 0 by ``muon_labels(params)`` for a group."""
        return self.delay.taus({k: stage for k in params}, muon_labels(params))

    def wrap(self, base, taus=None):
        """The stage optimizer: ``Delay.wrap`` around ``base`` with the block's ``taus``
        (:meth:`taus_of`; default: the delay's uniform tau), DC-ASGD left out (it stays with the
        engine, :meth:`correct`: see the module docstring)."""
        self.opt = replace(self.delay, dc_asgd=0.0).wrap(base, total_steps=self.total_steps, taus=taus)
        if self.compensates:   # the wrapper's own inner delayed update and correction
            self.inner = delayed(base, self.delay.taus() if taus is None else taus)
            self.compensation = compensation_of(self.opt)
        return self.opt

    def is_sync(self, t: int) -> bool:
        """U(t) creates x_{t+1} = x_t + a_t with the update's own a_t: a flushed step, or every
        step of a stage whose update applies at once (``at_once``)."""
        return self.flushed or self.at_once or phase(t, self.sync_start, self.sync_cooldown, self.total_steps) == "sync"

    def next_applied(self, state) -> dict:
        """a_{t+1} for an asynchronous step t + 1, from the state after U(t)
        (``lmo.delay.next_applied``: d_{t+1-tau}, or 2 d_t - d_{t-1} with EF)."""
        return next_applied(state)

    def gradient_point(self, state, params: dict) -> dict:
        """z_t = ``lmo.lookahead.gradient_point(state, x_t)`` from the state after t updates (x_t
        itself but for the look-ahead correctors), where step t's forward runs."""
        return gradient_point(state, params)

    def advanced(self, state, params: dict):
        """The wrapper's state after one more update, for its gradient point only: the update of
        zero gradients at ``params``. A look-ahead state's extrapolation c a_t depends on
        a_t = next_applied(state) alone (every block of a stream stage has tau >= 1), not on the
        gradient; the rest of the advanced state (its d_t) is discarded. Cost: one inner update."""
        return self.opt.update({k: torch.zeros_like(v) for k, v in params.items()}, state, params)[1]

    def correct(self, grads: dict, state) -> dict:
        """DC-ASGD: g + lambda g * g * (y_t - x_t), elementwise (identity when lambda = 0), the
        wrapper's own ``lmo.delay.dc_correct`` at the wrapper's own ``lmo.delay.virtual_offset``."""
        if not self.dc_asgd:
            return grads
        return dc_correct(grads, virtual_offset(state), self.dc_asgd)

    def compensate(self, grads: dict, state) -> tuple[dict, dict]:
        """DC-ASGD-a / -EMA at R(t): (g~_t, v_t) = ``lmo.delay_compensation.compensate`` of the
        wrapper's own correction, from the state after t updates."""
        return compensate(grads, state, self.compensation)

    def compensated_update(self, corrected: dict, sq_avg: dict, state, params: dict):
        """DC-ASGD-a / -EMA at U(t): the wrapper's inner delayed update of the clipped g~_t and
        the state with v_t (``lmo.delay_compensation.compensated_update``)."""
        return compensated_update(self.inner, corrected, sq_avg, state, params)


def wrap_stage(delay: Delay, total_steps: int, base, own: dict, stage: int, num_stages: int):
    """(stage optimizer, its DelayRule or None) of stage ``stage`` over its block ``own``: ``base``
    itself for an unwrapped delay (sync), else the trainer's delay wrapper around it with the
    block's delays (:meth:`DelayRule.taus_of`), as the worker and the checkpoint conversion build it."""
    if not delay.wrapped:
        return base, None
    rule = DelayRule(delay, total_steps, at_once=applies_at_once(delay, stage, num_stages))
    return rule.wrap(base, taus=rule.taus_of(own, stage)), rule

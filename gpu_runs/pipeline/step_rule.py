"""A stage's step rule: clip, DC-ASGD, update, apply, on this stage's parameter block.

The optimizer is the pure ``lmo`` protocol applied to the block only; the one cross-stage
quantity, the global gradient norm ``||g_t|| = sqrt(sum_s ||g_t^s||^2)`` for clipping, is an
all-reduce of the blocks' ``lmo.clipping.squared_norm`` on a separate process group,
launched asynchronously at R(t) (:meth:`StepRule.submit`) and awaited at U(t)
(:meth:`StepRule.clipped`). The order and the functions are the trainer's
(``gpu_runs.pipeline.delay``: one step rule, two call sites).

``rule`` (2bw): a :class:`gpu_runs.pipeline.delay.DelayRule` whose wrapper ``opt`` is; a
synchronous (flushed) step's U(t) creates x_{t+1} = x_t + a_t, an asynchronous one's creates
x_{t+2} = x_{t+1} + a_{t+1} (``apply=False``: none). With DC-ASGD step t's gradient is
first corrected by y_t - x_t (before the squared norm, as the trainer corrects before it
clips: ``gpu_runs.pipeline.delay``); with DC-ASGD-a / -EMA the wrapper's first half gives
g~_t and v_t at R(t) and its second half updates with the clipped g~_t at U(t).
"""
from __future__ import annotations

import math
from typing import Mapping

import torch.distributed as dist

from lmo.base import load_state_dict
from lmo.clipping import clip_coefficient as lmo_clip_coefficient
from lmo.clipping import squared_norm


def clip_coefficient(total_sq_norm: float, max_norm: float | None, eps: float = 1e-6) -> float:
    """``lmo.clipping.clip_coefficient`` of ||g|| = sqrt(sum over stages of squared norms);
    1 when the run does not clip (``max_norm`` None or <= 0)."""
    if max_norm is None or max_norm <= 0:
        return 1.0
    return lmo_clip_coefficient(math.sqrt(total_sq_norm), max_norm, eps)


class StepRule:
    """``opt`` (an ``lmo`` Optimizer over ``params``) with the cross-stage clip.

    ``max_norm``: global-norm clipping threshold (None: no clipping, no all-reduce);
    ``clip_group``: the stages' group of the all-reduce (only when ``num_stages`` > 1)."""

    def __init__(self, opt, params: Mapping, *, rule=None, max_norm: float | None = None,
                 clip_eps: float = 1e-6, clip_group=None, num_stages: int = 1, device="cpu"):
        self.opt, self.rule, self.P, self.device = opt, rule, num_stages, device
        self.max_norm, self.clip_eps, self.clip_group = max_norm, clip_eps, clip_group
        self.opt_state = opt.init(params)
        self.waiting: list = []  # (step, gradient) whose squared norm is not launched yet
        self.pending: dict = {}  # step -> (gradient, squared norm tensor, work)
        self.sq_avgs: dict = {}  # step -> v_t of DC-ASGD-a / -EMA (rule.compensates), stored at U(t)
        self.grad_norms: dict = {}  # step -> global gradient norm before clipping
        self.restored_step = None  # resumed 2bw: U(start - 1) only creates x_{start+1}
        self.updated_through = -1  # the last step whose U ran

    def gradient_point(self, step: int):
        """x_t -> z_t = ``lmo.lookahead.gradient_point`` of the state after t updates, for step t's
        forward (a look-ahead corrector); None where the gradient is taken at x_t itself. A flushed
        step or a stage whose update applies at once has that state (U(t - 1) ran); on the 2BW
        stream U(t - 1) comes after step t's forwards, and the state after t - 1 updates is
        advanced by one (``DelayRule.advanced``: its extrapolation c a_{t-1} needs a_{t-1} only)."""
        if self.rule is None or not self.rule.lookahead:
            return None
        behind = step - 1 - self.updated_through   # updates the state lacks: 0, or 1 on the 2BW stream
        if behind not in (0, 1):
            raise RuntimeError(f"StepRule: step {step}'s gradient point after U({self.updated_through})")

        def point(x):
            state = self.opt_state if behind == 0 else self.rule.advanced(self.opt_state, x)
            return self.rule.gradient_point(state, x)
        return point

    def submit(self, step: int, g: dict) -> None:
        """R(t): step t's gradient of this stage (its microbatches summed, reduced)."""
        self.waiting.append((step, g))
        self.launch_ready()

    def launch_ready(self) -> None:
        """Start the squared-norm all-reduce of the waiting steps, in step order. With
        DC-ASGD (or DC-ASGD-a / -EMA) step t's gradient is first corrected by y_t - x_t, known
        once U(t - 1) ran (on the last 2bw stage R(t) comes before U(t - 1): it waits until then)."""
        while self.waiting:
            t, g = self.waiting[0]
            if self.rule is not None and (self.rule.dc_asgd or self.rule.compensates):
                if self.updated_through < t - 1:
                    return
                if self.rule.compensates:
                    g, self.sq_avgs[t] = self.rule.compensate(g, self.opt_state)
                else:
                    g = self.rule.correct(g, self.opt_state)
            self.waiting.pop(0)
            sq = squared_norm(g).to(self.device)
            work = None
            if self.max_norm is not None and self.P > 1:
                work = dist.all_reduce(sq, group=self.clip_group, async_op=True)
            self.pending[t] = (g, sq, work)

    def clipped(self, step: int) -> dict:
        """U(t): step t's gradient times the clip coefficient of the global norm."""
        if step not in self.pending:
            self.launch_ready()
        g, sq, work = self.pending.pop(step)
        if work is not None:
            work.wait()
        total = float(sq)
        self.grad_norms[step] = math.sqrt(total)
        c = clip_coefficient(total, self.max_norm, self.clip_eps)
        if c != 1.0:
            g = {k: v * c for k, v in g.items()}
        return g

    def update(self, step: int, g: dict, base: dict, apply: bool) -> tuple[Mapping | None, bool]:
        """The update of step t from the clipped ``g`` at weights ``base``: (what to add to
        the current version, ahead). ahead=False: x_{t+1} = x_t + a_t (sync, pipedream,
        2bw's flushed steps); True (2bw): a_t was applied before step t + 1, this adds
        a_{t+1} to create x_{t+2} (None when ``apply`` is False)."""
        if step in self.sq_avgs:   # DC-ASGD-a / -EMA: g is the clipped g~_t of compensate
            updates, self.opt_state = self.rule.compensated_update(g, self.sq_avgs.pop(step), self.opt_state, base)
        else:
            updates, self.opt_state = self.opt.update(g, self.opt_state, base)
        self.updated_through = step
        if self.rule is None or self.rule.is_sync(step):
            return updates, False
        return (self.rule.next_applied(self.opt_state) if apply else None), True

    def resumed_update(self) -> Mapping:
        """A resumed 2bw stage's first U(start - 1) (at ``restored_step``): it only creates
        x_{start+1} = x_start + a_start, a_start from the restored state."""
        self.restored_step = None
        return self.rule.next_applied(self.opt_state)

    def restore(self, opt_flat: Mapping, step: int) -> None:
        """The optimizer state after ``step`` updates (2bw: the wrapper's, with the pending d_{step-1})."""
        self.opt_state = load_state_dict(self.opt_state, {k: v.to(self.device) for k, v in opt_flat.items()})
        self.restored_step = step - 1 if self.rule is not None else None
        self.updated_through = step - 1

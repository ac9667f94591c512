"""Learning-rate schedules: values and functions step -> lr (the step counter is a tensor in the state)."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from lmo.base import check_nonneg, check_int
from lmo.hyperparameters import check_lr


@dataclass(frozen=True)
class WarmupCosine:
    """The warmup-cosine lr as a value: ``lr(t)`` for t = 0, 1, ... (the optimizer's step counter,
    an int or a tensor), with W = round(warmup_frac T) and T = ``total_steps``::

        lr(t) = peak (t + 1) / W                                         t < W
        lr(t) = peak [f + (1 - f) (1 + cos(pi (t - W) / (T - W))) / 2]     W <= t <= T

    held at f peak after T. The optimizer receives it as its ``lr`` and evaluates it itself
    (``lmo.hyperparameters.resolve_lr``); ``lmo.registry.build`` gives every other parameter group the
    same shape from its own peak (:meth:`with_peak`). Checked once, at construction.

    >>> lr = WarmupCosine(1.0, 10)            # W = 1 warmup step, cosine to 0.1 at t = 10
    >>> lr(0), round(lr(5), 4), lr(10), lr.with_peak(2.0)(10)
    (1.0, 0.6281, 0.1, 0.2)
    """

    peak: float
    total_steps: int
    warmup_frac: float = 0.1
    final_frac: float = 0.1

    def __post_init__(self):
        check_lr(self.peak, "peak")
        check_int(self.total_steps, "total_steps", 1)
        check_nonneg(self.warmup_frac, "warmup_frac")
        check_nonneg(self.final_frac, "final_frac")
        if self.warmup_frac >= 1 or self.final_frac > 1:
            raise ValueError(f"warmup_frac must be < 1 and final_frac <= 1, got {self.warmup_frac}, {self.final_frac}")

    @property
    def warmup_steps(self) -> int:
        """W = round(warmup_frac T)."""
        return int(round(self.warmup_frac * self.total_steps))

    def __call__(self, step) -> float:
        t = int(step.item()) if isinstance(step, torch.Tensor) else int(step)
        W, T, peak, f = self.warmup_steps, self.total_steps, self.peak, self.final_frac
        if t < W:
            return peak * (t + 1) / W
        frac = min(1.0, (t - W) / max(1, T - W))
        return peak * (f + (1 - f) * 0.5 * (1 + math.cos(math.pi * frac)))

    def with_peak(self, peak: float) -> "WarmupCosine":
        """The same shape from another peak (another parameter group's lr)."""
        return replace(self, peak=peak)


def warmup_cosine(peak: float, total_steps: int, warmup_frac: float = 0.1, final_frac: float = 0.1):
    """lr(t) = :class:`WarmupCosine` ``(peak, total_steps, warmup_frac, final_frac)(t)``, as a plain
    function step -> lr (for an optimizer's ``lr=``). The paper's protocol: 10% warmup, cosine
    to 0.1 x peak.

    >>> lr = warmup_cosine(1.0, 10)
    >>> lr(0), lr(torch.tensor(10))
    (1.0, 0.1)
    """
    value = WarmupCosine(peak, total_steps, warmup_frac, final_frac)

    def schedule(step) -> float:
        return value(step)

    schedule.__doc__ = (f"warmup_cosine(peak={peak}, total_steps={total_steps}, warmup_frac={warmup_frac}, "
                        f"final_frac={final_frac})")
    return schedule


def constant(value: float):
    """lr(t) = value.

    >>> constant(0.1)(7)
    0.1
    """
    check_lr(value, "value")
    return lambda step: value

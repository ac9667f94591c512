"""Learning-rate schedules: functions step -> lr (the step counter is a tensor in the state)."""
from __future__ import annotations

import math

import torch

from lmo.base import check_lr, check_nonneg, check_int


def warmup_cosine(peak: float, total_steps: int, warmup_frac: float = 0.1, final_frac: float = 0.1):
    """lr(t) for t = 0, 1, ...: linear warmup over W = round(warmup_frac T) steps, then cosine
    from peak to final_frac * peak at t = T (held there afterwards)::

        lr(t) = peak (t + 1) / W                                         t < W
        lr(t) = peak [f + (1 - f) (1 + cos(pi (t - W) / (T - W))) / 2]     W <= t <= T

    The paper's protocol: 10% warmup, cosine to 0.1 x peak.
    """
    check_lr(peak, "peak")
    check_int(total_steps, "total_steps", 1)
    check_nonneg(warmup_frac, "warmup_frac")
    check_nonneg(final_frac, "final_frac")
    if warmup_frac >= 1 or final_frac > 1:
        raise ValueError(f"warmup_frac must be < 1 and final_frac <= 1, got {warmup_frac}, {final_frac}")
    W = int(round(warmup_frac * total_steps))
    T = total_steps

    def schedule(step) -> float:
        t = int(step.item()) if isinstance(step, torch.Tensor) else int(step)
        if t < W:
            return peak * (t + 1) / W
        frac = min(1.0, (t - W) / max(1, T - W))
        return peak * (final_frac + (1 - final_frac) * 0.5 * (1 + math.cos(math.pi * frac)))

    schedule.__doc__ = f"warmup_cosine(peak={peak}, total_steps={T}, warmup_frac={warmup_frac}, final_frac={final_frac})"
    return schedule


def constant(value: float):
    """lr(t) = value."""
    check_lr(value, "value")
    return lambda step: value

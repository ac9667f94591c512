"""Progress a user can see: the first step at once, then a line at least every ``every_s``
seconds with throughput and an ETA, and for multi-unit commands a line per unit.

Throughput is measured over the wall time since the previous line (evaluation and
checkpoints included); ETA = remaining steps x the mean wall time per step so far.
"""
from __future__ import annotations

import time

#: seconds between two progress lines of a long run (tests set it lower)
EVERY_S = 10.0


def fmt_duration(s: float) -> str:
    """``1h02m``, ``3m05s``, ``42s``."""
    s = max(0.0, float(s))
    if s >= 3600:
        return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    if s >= 60:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{s:.0f}s"


class StepProgress:
    """``due(step, force)`` says whether to print; ``line(step, tail)`` formats it."""

    def __init__(self, total: int, start: int, tokens_per_step: int, every_s: float | None = None,
                 clock=time.perf_counter):
        self.total, self.start, self.tokens_per_step = total, start, tokens_per_step
        self.every_s = EVERY_S if every_s is None else every_s
        self.clock = clock
        self.t0 = self.t_last = clock()
        self.step_last = start

    def due(self, step: int, force: bool = False) -> bool:
        return force or step == self.start + 1 or self.clock() - self.t_last >= self.every_s

    def line(self, step: int, tail: str = "") -> str:
        now = self.clock()
        n, dt = step - self.step_last, now - self.t_last
        tok_s = n * self.tokens_per_step / dt if dt > 0 and n > 0 else float("nan")
        done = step - self.start
        eta = (now - self.t0) / done * (self.total - step) if done > 0 else float("nan")
        self.t_last, self.step_last = now, step
        eta_s = fmt_duration(eta) if eta == eta else "?"
        return f"step {step:>6}/{self.total} {tail}{tok_s:,.0f} tok/s ETA {eta_s}"


class UnitProgress:
    """``[name i/n] what (elapsed, ETA)`` for commands made of units (runs, figures)."""

    def __init__(self, name: str, total: int, clock=time.perf_counter):
        self.name, self.total, self.clock = name, total, clock
        self.t0, self.done = clock(), 0

    def line(self, i: int, what: str, counted: bool = True) -> str:
        """Line for unit ``i`` (0-based); ``counted``: it cost time (a skipped unit does not)."""
        if counted:
            self.done += 1
        el = self.clock() - self.t0
        left = self.total - (i + 1)
        eta = f", ETA {fmt_duration(el / self.done * left)}" if self.done and left else ""
        return f"[{self.name} {i + 1}/{self.total}] {what} ({fmt_duration(el)} so far{eta})"

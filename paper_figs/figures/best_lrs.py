"""The best lr of a grid, and whether a verdict may rest on it (docs/protocol.md §6).

A best lr c* = argmin_c mean_seeds L_v(c) (``common.best_lr``) is usable only when it is
interior to its grid and resolved: the runner-up c2's loss exceeds c*'s by a margin
``L_v(c2) - L_v(c*)`` (paired by seed) whose 95 % interval lies above zero, under the
borrowed pool and under its conservative alternative. A verdict that rests on an unusable
best lr is inconclusive (:func:`rests_on`), and the report names the grid extension (one
factor of 2 beyond the edge) that would make an edge interior.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..statistics.verdicts import HOLDS, INCONCLUSIVE, Evidence, Verdict, lower_is_better, mean
from .common import Context, best_lr


@dataclass(frozen=True)
class Argmin:
    """A grid's best lr ``best`` (x preset), its runner-up, whether ``best`` is an edge of the
    grid, whether the margin is resolved, and the line that says so."""

    best: float
    second: float
    edge: str        # '' interior, else 'lowest' / 'highest'
    resolved: bool
    text: str

    @property
    def usable(self) -> bool:
        return not self.edge and self.resolved

    @property
    def extension(self) -> float | None:
        """The multiplier one factor of 2 beyond the edge (None when interior)."""
        return {"lowest": self.best / 2, "highest": self.best * 2}.get(self.edge)


def argmin(ctx: Context, cells: dict, kind: str, optimizer: str, config: str | None = None,
           name: str = "") -> Argmin:
    """The best lr of ``cells`` {c: {variant: per-seed losses}} for ``kind`` and its usability."""
    ok = {c: cells[c] for c in cells if math.isfinite(mean(cells[c][kind]))}
    what = f"{name or optimizer} {kind}"
    if len(ok) < 2:
        return Argmin(float("nan"), float("nan"), "", False, f"{what}: fewer than 2 lrs measured")
    best = best_lr(ok, kind)
    second = min((c for c in ok if c != best), key=lambda c: mean(ok[c][kind]))
    grid = sorted(cells)
    edge = "lowest" if best == grid[0] else "highest" if best == grid[-1] else ""
    margin = lower_is_better(ok[best][kind], ok[second][kind], f"x{best:g} below x{second:g}",
                             ctx.noise_for(optimizer, config, lr=(best, second)))
    t = margin.test
    m = (f"margin {t.est:.4f} [{t.lo:.4f}, {t.hi:.4f}]" if t is not None and math.isfinite(t.lo)
         else "margin unresolved (no SE)")
    where = f"at the grid's {edge} lr" if edge else "interior"
    res = margin.status == HOLDS
    text = (f"{what}: best lr x{best:g} ({where}; next x{second:g}, {m}, "
            f"{'resolved' if res else 'not resolved'} against the seed spread)")
    return Argmin(best, second, edge, res, text)


def rests_on(v: Verdict, argmins) -> Verdict:
    """``v``, or inconclusive when a best lr it uses is at a grid edge or unresolved (its
    p-values then say nothing: (1, 1) under both pools)."""
    bad = [a for a in argmins if not a.usable]
    if not bad:
        return v
    why = "; ".join(a.text for a in bad)
    t = v.test or Evidence()
    return Verdict(INCONCLUSIVE, f"rests on a best lr that is at a grid edge or unresolved ({why}); the numbers "
                                 f"alone would say {v.status}: {v.reason}",
                   replace(t, p=(1.0, 1.0), p_alt=(1.0, 1.0)), v.claim)

"""Verdicts of the paper's MoE claims (Table 3, Figures 1 and 5), on measured final losses.

Notation (docs/design.md §4 for the variants): per seed s, paired runs (same data order and
initialization) at one horizon,

    a_s = L_async,s - L_sync,s        the sync-async gap
    e_s = L_ef,s    - L_sync,s        the gap error feedback leaves

a = mean_s a_s, e = mean_s e_s, and the margin of :mod:`paper_figs.verdicts`,
m = max(RESOLUTION, 2 * the largest seed std among the samples compared) -- RESOLUTION
alone with one seed. Every threshold is a constant below, stated in the report.
"""
from __future__ import annotations

import math
from typing import Sequence

from .verdicts import FAILS, HOLDS, INCONCLUSIVE, RESOLUTION, Verdict, fmt, margin, mean

CLOSE_FRAC = 0.2        # EF "closes" the gap when it leaves at most this fraction of it ...
OPEN_FRAC = 0.5         # ... and fails to when it leaves more than this fraction
STABLE_REL_GAP = 0.012  # a / L_sync: the paper's "most optimizers within 0.03" at ~2.6 nats/token
UNSTABLE_REL_GAP = 0.05  # the paper's severely degraded runs: AdamW 0.278 / 2.612 = 10.6 % (360M)
SPIKE_REL = 0.10        # a validation loss this far above the run's running minimum is a divergence


def _gaps(base: Sequence[float], other: Sequence[float]) -> list[float]:
    """other_s - base_s per seed where both are finite."""
    return [y - x for x, y in zip(base, other) if math.isfinite(x) and math.isfinite(y)]


def ef_closes_gap(sync: Sequence[float], async_: Sequence[float], ef: Sequence[float],
                  name: str) -> Verdict:
    """Claim 'error feedback closes the sync-async gap' (Table 3: 1.906 / 1.911 / 1.906).

    m = margin(a_s, e_s). holds: a > m (there is a gap beyond seed noise) and
    e <= max(m, CLOSE_FRAC * a) (what EF leaves is within seed noise of 0, or at most 20 %
    of the gap); does not hold: e > max(2 m, OPEN_FRAC * a) (EF leaves more than half the
    gap, or opens one, beyond twice the noise); inconclusive otherwise, in particular when
    a <= m: no gap to close at this resolution (the paper's own 0.005 at 10B is such a case
    at RESOLUTION = 0.005).
    """
    ga, ge = _gaps(sync, async_), _gaps(sync, ef)
    if not ga or not ge:
        return Verdict(INCONCLUSIVE, f"{name}: missing runs")
    a, e, m = mean(ga), mean(ge), margin(ga, ge)
    desc = f"{name}: async gap {fmt(ga)}, EF gap {fmt(ge)}, margin {m:.3f}"
    if e > max(2 * m, OPEN_FRAC * a):
        return Verdict(FAILS, desc + f": EF leaves more than max(2 x margin, {OPEN_FRAC:.0%} of the gap)")
    if a > m and e <= max(m, CLOSE_FRAC * a):
        return Verdict(HOLDS, desc + f": EF gap within max(margin, {CLOSE_FRAC:.0%} of the gap)")
    if a <= m:
        return Verdict(INCONCLUSIVE, desc + ": no gap beyond the margin to close")
    return Verdict(INCONCLUSIVE, desc + ": EF narrows the gap only partly")


def diverges(steps: Sequence[float], losses: Sequence[float]) -> str:
    """Why a validation curve counts as diverged ('' if it does not): a non-finite value, or a
    value above (1 + SPIKE_REL) x the running minimum of the values before it."""
    low = math.inf
    for t, v in zip(steps, losses):
        if not math.isfinite(v):
            return f"non-finite loss at step {t}"
        if v > (1 + SPIKE_REL) * low:
            return f"loss {v:.3f} at step {t} exceeds {1 + SPIKE_REL:.2f} x the running minimum {low:.3f}"
        low = min(low, v)
    return ""


def async_stable(sync: Sequence[float], async_: Sequence[float], delayed_curves: Sequence[tuple],
                 name: str) -> Verdict:
    """Claim 'asynchronous training stays stable' (Figure 1: both async runs stable throughout).

    ``delayed_curves``: (steps, validation losses) of every delayed run (async and async + EF,
    every seed). r = a / mean(L_sync). does not hold: a curve diverges (:func:`diverges`) or
    r > UNSTABLE_REL_GAP (5 %); holds: no curve diverges and a <= max(m, STABLE_REL_GAP x
    mean(L_sync)) with m = margin(a_s); inconclusive in between.
    """
    for xs, ys in delayed_curves:
        why = diverges(xs, ys)
        if why:
            return Verdict(FAILS, f"{name}: a delayed run diverges: {why}")
    ga, s = _gaps(sync, async_), mean(sync)
    if not ga or not math.isfinite(s) or not delayed_curves:
        return Verdict(INCONCLUSIVE, f"{name}: missing runs")
    a, m = mean(ga), margin(ga)
    desc = f"{name}: no delayed run diverges; async gap {fmt(ga)} = {a / s:.1%} of the sync loss {s:.3f}"
    if a / s > UNSTABLE_REL_GAP:
        return Verdict(FAILS, desc + f" (> {UNSTABLE_REL_GAP:.0%})")
    if a <= max(m, STABLE_REL_GAP * s):
        return Verdict(HOLDS, desc + f" (<= max(margin {m:.3f}, {STABLE_REL_GAP:.1%}))")
    return Verdict(INCONCLUSIVE, desc + f" (between {STABLE_REL_GAP:.1%} and {UNSTABLE_REL_GAP:.0%})")


def gap_does_not_grow(horizons: Sequence[float], gaps: Sequence[Sequence[float]], name: str) -> Verdict:
    """Claim 'the sync-async gap does not grow with the horizon' (Figure 5), with seed noise.

    ``gaps[i]``: the per-seed gaps a_s at ``horizons[i]``; g_h = their mean, h0 the shortest
    and H the longest horizon measured, m = max(RESOLUTION, 2 x the largest per-horizon seed
    std). holds: g_h <= g_h0 + m at every horizon; does not hold: g_H > g_h0 + 2 m (the gap
    grew beyond twice the noise); inconclusive otherwise.
    """
    if len(horizons) != len(gaps):
        raise ValueError(f"gaps: one list per horizon expected, got {len(gaps)} for {len(horizons)} horizons")
    pts = sorted((h, [x for x in g if math.isfinite(x)]) for h, g in zip(horizons, gaps))
    pts = [(h, g) for h, g in pts if g]
    if len(pts) < 2:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 2 horizons measured")
    m = margin(*[g for _, g in pts])
    g0, gH = mean(pts[0][1]), mean(pts[-1][1])
    desc = f"{name}: gap " + " -> ".join(f"{fmt(g)} at {h}" for h, g in pts) + f" steps, margin {m:.3f}"
    if gH > g0 + 2 * m:
        return Verdict(FAILS, desc + ": grows beyond 2 x margin")
    if all(mean(g) <= g0 + m for _, g in pts):
        return Verdict(HOLDS, desc + ": no horizon's gap exceeds the shortest's by more than the margin")
    return Verdict(INCONCLUSIVE, desc + ": grows by between 1 and 2 margins")


__all__ = ["CLOSE_FRAC", "OPEN_FRAC", "STABLE_REL_GAP", "UNSTABLE_REL_GAP", "SPIKE_REL", "RESOLUTION",
           "ef_closes_gap", "diverges", "async_stable", "gap_does_not_grow"]

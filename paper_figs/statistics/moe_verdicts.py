"""Verdicts of the paper's MoE claims (Table 3, Figures 1 and 5), on measured final losses,
by the protocol (docs/protocol.md §3, §8).

Notation (docs/design.md §4 for the variants): per seed s, paired runs (same data order and
initialization) at one horizon,

    a_s = L_async,s - L_sync,s        the sync-async gap
    e_s = L_ef,s    - L_sync,s        the gap error feedback leaves

and S = mean_s L_sync,s. The margins are the protocol's, from the paper's own numbers:
M_SMALLEST (the 10B MoE's async gap 0.005 / 1.906, the smallest gap the paper reports) and
M_BENIGN (its "within 0.03", relative to the largest sync loss of its dense table).
"""
from __future__ import annotations

import math
from typing import Sequence

from .protocol import M_BENIGN, M_SMALLEST, SPIKE_REL
from .seed_stats import NO_NOISE, Noise, paired
from .verdicts import FAILS, INCONCLUSIVE, Evidence, Verdict, below_margin, equivalent, mean, no_growth


def ef_closes_gap(sync: Sequence[float], async_: Sequence[float], ef: Sequence[float],
                  name: str, noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'error feedback closes the sync-async gap entirely' (Table 3: 1.906 / 1.911 /
    1.906): EF's loss equivalent to sync's, |mean(e)| < M_SMALLEST x S, by two one-sided tests
    (holds when the 95 % interval of e lies inside the margins; "within 2 SE of zero" is not
    evidence of closing). The async gap is reported beside it."""
    a = paired(sync, async_)
    s = mean(sync)
    if not math.isfinite(s):
        return Verdict(INCONCLUSIVE, f"{name}: missing runs", Evidence(label=name))
    v = equivalent(paired(sync, ef), M_SMALLEST * s, f"{name}: EF gap (async gap {mean(a):+.4f})", noise)
    return Verdict(v.status, v.reason, v.test)


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
                 name: str, noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'asynchronous training stays stable' (Figure 1: both async runs stable throughout).

    ``delayed_curves``: (steps, validation losses) of every delayed run (async and async + EF,
    every seed). Does not hold outright when a curve diverges (:func:`diverges`); otherwise
    the async gap below M_BENIGN x S, one-sided (a delayed run better than sync is stable)."""
    for xs, ys in delayed_curves:
        why = diverges(xs, ys)
        if why:
            return Verdict(FAILS, f"{name}: a delayed run diverges: {why}", Evidence((1.0, 0.0), (1.0, 0.0), label=name))
    s = mean(sync)
    if not math.isfinite(s) or not delayed_curves:
        return Verdict(INCONCLUSIVE, f"{name}: missing runs", Evidence(label=name))
    v = below_margin(paired(sync, async_), M_BENIGN * s, f"{name}: no delayed run diverges; async gap", noise,
                     "async gap (claim < margin)")
    return v


def gap_does_not_grow(horizons: Sequence[float], gaps: Sequence[Sequence[float]], name: str,
                      noise: Noise = NO_NOISE, sync_first: float = float("nan")) -> Verdict:
    """Claim 'the sync-async gap does not grow with the horizon' (Figure 5): the growth from
    the shortest to the longest horizon below M_SMALLEST x ``sync_first`` (the mean sync loss
    at the shortest horizon), one-sided (:func:`paper_figs.statistics.verdicts.no_growth`)."""
    if len(horizons) != len(gaps):
        raise ValueError(f"gaps: one list per horizon expected, got {len(gaps)} for {len(horizons)} horizons")
    if not math.isfinite(sync_first):
        return Verdict(INCONCLUSIVE, f"{name}: no sync loss at the shortest horizon", Evidence(label=name))
    return no_growth(horizons, gaps, name, noise, M_SMALLEST * sync_first)


__all__ = ["ef_closes_gap", "diverges", "async_stable", "gap_does_not_grow"]

"""Verdicts of the paper's MoE claims (Table 3, Figures 1 and 5), on measured final losses.

Notation (docs/design.md §4 for the variants): per seed s, paired runs (same data order and
initialization) at one horizon,

    a_s = L_async,s - L_sync,s        the sync-async gap
    e_s = L_ef,s    - L_sync,s        the gap error feedback leaves

a = mean_s a_s, e = mean_s e_s, each with its standard error from the seeds
(:mod:`paper_figs.seed_stats`: the own SD from 3 seeds, else the pooled ``noise``); a
quantity is *resolved* beyond ``Z = 2`` standard errors. Every threshold is a constant
below, stated in the report.
"""
from __future__ import annotations

import math
from typing import Sequence

from .seed_stats import NO_NOISE, Z, Noise, estimate, paired
from .verdicts import FAILS, HOLDS, INCONCLUSIVE, Verdict, mean, no_growth

CLOSE_FRAC = 0.2        # EF "closes" the gap when it leaves at most this fraction of it ...
OPEN_FRAC = 0.5         # ... and fails to when it leaves more than this fraction
STABLE_REL_GAP = 0.012  # a / L_sync: the paper's "most optimizers within 0.03" at ~2.6 nats/token
UNSTABLE_REL_GAP = 0.05  # the paper's severely degraded runs: AdamW 0.278 / 2.612 = 10.6 % (360M)
SPIKE_REL = 0.10        # a validation loss this far above the run's running minimum is a divergence


def ef_closes_gap(sync: Sequence[float], async_: Sequence[float], ef: Sequence[float],
                  name: str, noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'error feedback closes the sync-async gap' (Table 3: 1.906 / 1.911 / 1.906).

    holds: a > Z SE(a) (a gap to close) and e <= max(Z SE(e), CLOSE_FRAC a) (what EF
    leaves is not resolved above 0, or is at most 20 % of the gap); does not hold:
    e - OPEN_FRAC a > Z sqrt(SE(e)^2 + OPEN_FRAC^2 SE(a)^2) (EF leaves more than half the
    gap, resolved); inconclusive otherwise, in particular when a is not resolved: no gap
    to close at this resolution (the paper's own 0.005 at 10B is such a case here).
    """
    ga, ge = paired(sync, async_), paired(sync, ef)
    a, e = estimate(ga, noise), estimate(ge, noise)
    if not ga or not ge:
        return Verdict(INCONCLUSIVE, f"{name}: missing runs")
    if not (math.isfinite(a.se) and math.isfinite(e.se)):
        return Verdict(INCONCLUSIVE, f"{name}: one seed and no pooled seed spread")
    desc = f"{name}: async gap {a}, EF gap {e}"
    if e.mean - OPEN_FRAC * a.mean > Z * math.hypot(e.se, OPEN_FRAC * a.se):
        return Verdict(FAILS, desc + f": EF leaves more than {OPEN_FRAC:.0%} of the gap, beyond {Z:g} SE")
    if a.mean > Z * a.se and e.mean <= max(Z * e.se, CLOSE_FRAC * a.mean):
        return Verdict(HOLDS, desc + f": EF gap within max({Z:g} SE, {CLOSE_FRAC:.0%} of the gap)")
    if a.mean <= Z * a.se:
        return Verdict(INCONCLUSIVE, desc + f": no gap beyond {Z:g} SE to close")
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
                 name: str, noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'asynchronous training stays stable' (Figure 1: both async runs stable throughout).

    ``delayed_curves``: (steps, validation losses) of every delayed run (async and async + EF,
    every seed). S = mean(L_sync). does not hold: a curve diverges (:func:`diverges`) or
    a - UNSTABLE_REL_GAP S > Z SE(a) (a gap above 5 % of the loss, resolved); holds: no curve
    diverges and a <= max(Z SE(a), STABLE_REL_GAP S); inconclusive in between.
    """
    for xs, ys in delayed_curves:
        why = diverges(xs, ys)
        if why:
            return Verdict(FAILS, f"{name}: a delayed run diverges: {why}")
    ga, s = paired(sync, async_), mean(sync)
    if not ga or not math.isfinite(s) or not delayed_curves:
        return Verdict(INCONCLUSIVE, f"{name}: missing runs")
    a = estimate(ga, noise)
    if not math.isfinite(a.se):
        return Verdict(INCONCLUSIVE, f"{name}: one seed and no pooled seed spread")
    desc = f"{name}: no delayed run diverges; async gap {a} = {a.mean / s:.1%} of the sync loss {s:.3f}"
    if a.mean - UNSTABLE_REL_GAP * s > Z * a.se:
        return Verdict(FAILS, desc + f" (> {UNSTABLE_REL_GAP:.0%}, beyond {Z:g} SE)")
    if a.mean <= max(Z * a.se, STABLE_REL_GAP * s):
        return Verdict(HOLDS, desc + f" (<= max({Z:g} SE, {STABLE_REL_GAP:.1%}))")
    return Verdict(INCONCLUSIVE, desc + f" (between {STABLE_REL_GAP:.1%} and {UNSTABLE_REL_GAP:.0%})")


def gap_does_not_grow(horizons: Sequence[float], gaps: Sequence[Sequence[float]], name: str,
                      noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'the sync-async gap does not grow with the horizon' (Figure 5): the rule of
    :func:`paper_figs.verdicts.no_growth` (longest against shortest horizon, with SEs)."""
    return no_growth(horizons, gaps, name, noise)


__all__ = ["CLOSE_FRAC", "OPEN_FRAC", "STABLE_REL_GAP", "UNSTABLE_REL_GAP", "SPIKE_REL",
           "ef_closes_gap", "diverges", "async_stable", "gap_does_not_grow"]

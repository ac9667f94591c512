"""Looks at the confirmatory family under the sequential plan (docs/plan.md §3).

The plan's looks are look 0 (the kept records when the plan was committed) and one look after
each of its batches, ``len(SPENDING)`` looks in all. Look j may spend the fraction ``f_j`` of
the family-wise level (``SPENDING``, sum f_j = 1). A claim's p-value at look j, p_j, is the
protocol's two-sided p of its line computed on the records through batch j; its *sequential*
p-value at look k is

    p*_k = min over j <= k of  min(1, p_j / f_j)

which is a valid p-value under any dependence between looks (Bonferroni over looks:
P(p*_K <= a) <= sum_j P(p_j <= a f_j) <= a). Holm's step-down on the claims' p* then holds the
family-wise error over all claims and all looks at alpha, and since p* never increases from look
to look, a claim decided at a look stays decided. The direction of a decided claim is that of the
look that attained the minimum.
"""
from __future__ import annotations

from typing import Sequence

#: the fraction of the level each look spends: look 0, then one per batch of the plan
SPENDING: tuple[float, ...] = (0.25, 0.15, 0.15, 0.15, 0.15, 0.15)


def sequential_p(ps: Sequence[float], spending: Sequence[float] = SPENDING) -> tuple[float, int]:
    """(p*, j*) of a claim whose looks 0..k gave two-sided p-values ``ps``: p* = min_j min(1, p_j / f_j)
    and the look j* that attains it (the earliest on a tie).

    >>> sequential_p([0.04, 0.003])
    (0.02, 1)
    >>> sequential_p([0.001])
    (0.004, 0)
    """
    if not ps:
        raise ValueError("ps: at least one look is needed")
    if len(ps) > len(spending):
        raise ValueError(f"ps: {len(ps)} looks, but the plan spends its level over {len(spending)}")
    scaled = [min(1.0, p / f) for p, f in zip(ps, spending)]
    j = min(range(len(scaled)), key=lambda i: (scaled[i], i))
    return scaled[j], j

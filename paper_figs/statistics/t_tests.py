"""The arithmetic of the verdict protocol (docs/protocol.md): Student-t statistics with their
degrees of freedom, one-sided p-values for the three kinds of claim, claims made of parts,
the decision rule and Holm's step-down.

A statistic is a linear combination of cell means; its variance is a sum of components, each
with the degrees of freedom of the variance estimate it rests on. Components that share one
estimate (two cells borrowing one pooled SD) are merged before counting (``source``), and

    nu = (sum_k V_k)^2 / sum_k (V_k^2 / nu_k)          (Welch-Satterthwaite)

Each test returns (p_hold, p_fail): one-sided p-values for and against the claim. At level
alpha a line holds when p_hold <= alpha / 2, does not hold when p_fail <= alpha / 2: exactly
when its (1 - alpha) two-sided interval lies on one side of the decision boundary.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from scipy import special

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"


@dataclass(frozen=True)
class Component:
    """One variance component of a statistic: ``var`` (its share of Var(estimate)), ``dof``
    (of the variance estimate it rests on; inf: known) and ``source`` (components with one
    source rest on one estimate; '' never merges)."""

    var: float
    dof: float
    source: str = ""


def satterthwaite(components: Sequence[Component]) -> tuple[float, float]:
    """(variance, Welch-Satterthwaite dof) of a sum of components, those of one source merged."""
    merged: dict = {}
    for i, c in enumerate(components):
        key = c.source or f"#{i}"
        v, d = merged.get(key, (0.0, c.dof))
        merged[key] = (v + c.var, d)
    var = sum(v for v, _ in merged.values())
    if not math.isfinite(var) or var <= 0:
        return var, float("nan") if not math.isfinite(var) else math.inf
    den = sum(v * v / d for v, d in merged.values() if v > 0 and math.isfinite(d) and d > 0)
    if any(v > 0 and not (d > 0) for v, d in merged.values()):
        return var, float("nan")
    return var, (var * var / den if den > 0 else math.inf)


@dataclass(frozen=True)
class TStat:
    """An estimate with its standard error and degrees of freedom."""

    est: float
    se: float
    dof: float
    components: tuple = field(default=(), compare=False)

    @classmethod
    def of(cls, est: float, components: Sequence[Component]) -> "TStat":
        var, dof = satterthwaite(components)
        se = math.sqrt(var) if math.isfinite(var) and var >= 0 else float("nan")
        return cls(est, se, dof, tuple(components))

    @property
    def usable(self) -> bool:
        return all(math.isfinite(v) for v in (self.est, self.se)) and self.se > 0 and self.dof > 0

    def t_crit(self, conf: float = 0.95) -> float:
        return t_quantile(0.5 + conf / 2, self.dof)

    def interval(self, conf: float = 0.95) -> tuple[float, float]:
        """est -+ t_{(1 + conf) / 2, dof} SE; (nan, nan) when unusable."""
        if not self.usable:
            return float("nan"), float("nan")
        h = self.t_crit(conf) * self.se
        return self.est - h, self.est + h

    def p_above(self, m: float = 0.0) -> float:
        """One-sided p-value for theta > m: P(t_dof > (est - m) / SE)."""
        return t_sf((self.est - m) / self.se, self.dof) if self.usable else 1.0

    def p_below(self, m: float = 0.0) -> float:
        """One-sided p-value for theta < m: P(t_dof < (est - m) / SE)."""
        return t_sf((m - self.est) / self.se, self.dof) if self.usable else 1.0


def sample_variance(xs: Sequence[float]) -> float:
    """sum (x - mean)^2 / (n - 1), both sums by math.fsum (statistics.variance's exact
    fractions are ~30x slower, and the engine's simulation computes it millions of times)."""
    n = len(xs)
    m = math.fsum(xs) / n
    return math.fsum((x - m) ** 2 for x in xs) / (n - 1)


def t_sf(x: float, dof: float) -> float:
    """P(t_dof > x); the normal tail for dof = inf (scipy.special's Student-t cdf: the
    simulation of the engine calls this hundreds of thousands of times)."""
    return float(special.ndtr(-x) if math.isinf(dof) else special.stdtr(dof, -x))


def t_quantile(q: float, dof: float) -> float:
    """The q-quantile of t_dof (normal for dof = inf)."""
    return float(special.ndtri(q) if math.isinf(dof) else special.stdtrit(dof, q))


# ---- the three kinds of claim: (p_hold, p_fail) -------------------------------------------

def superiority(s: TStat, at: float = 0.0) -> tuple[float, float]:
    """Claim theta > ``at``."""
    return s.p_above(at), s.p_below(at)


def noninferiority(s: TStat, margin: float) -> tuple[float, float]:
    """Claim theta < ``margin`` (one-sided against a margin: "does not grow", "stays stable")."""
    return s.p_below(margin), s.p_above(margin)


def equivalence(s: TStat, margin: float) -> tuple[float, float]:
    """Claim -margin < theta < margin, two one-sided tests (TOST): p_hold is the larger of the
    two one-sided p-values, p_fail the smaller p-value of theta beyond one margin."""
    if not margin > 0:
        raise ValueError(f"margin: must be > 0, got {margin}")
    return max(s.p_below(margin), s.p_above(-margin)), min(s.p_above(margin), s.p_below(-margin))


# ---- claims made of parts -------------------------------------------------------------------

def at_least(k: int, parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(p_hold, p_fail) of "at least k of the n parts hold" from the parts' (p_hold, p_fail):
    p_hold = (n - k + 1) p_hold_(k), p_fail = k p_fail_(n - k + 1) (ascending order
    statistics, capped at 1), valid under any dependence between the parts."""
    n = len(parts)
    if not 1 <= k <= n:
        raise ValueError(f"k: must be in [1, {n}], got {k}")
    ph = sorted(p for p, _ in parts)
    pf = sorted(p for _, p in parts)
    return min(1.0, (n - k + 1) * ph[k - 1]), min(1.0, k * pf[n - k])


def every(parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Every part holds: intersection-union (largest p_hold), Bonferroni for a failure."""
    return at_least(len(parts), parts) if parts else (1.0, 1.0)


def most(parts: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """More than half of the parts hold (k = floor(n / 2) + 1)."""
    return at_least(len(parts) // 2 + 1, parts) if parts else (1.0, 1.0)


def negated(p: tuple[float, float]) -> tuple[float, float]:
    """The claim "not ...": the roles of p_hold and p_fail swap."""
    return p[1], p[0]


# ---- decisions ------------------------------------------------------------------------------

def decide(p: tuple[float, float], alpha: float = 0.05) -> str:
    """holds if p_hold <= alpha / 2, does not hold if p_fail <= alpha / 2, else inconclusive."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: must be in (0, 1), got {alpha}")
    p_hold, p_fail = p
    if p_hold <= alpha / 2 and p_hold <= p_fail:
        return HOLDS
    if p_fail <= alpha / 2:
        return FAILS
    return INCONCLUSIVE


def line_p(p: tuple[float, float]) -> float:
    """A line's two-sided p-value: min(1, 2 min(p_hold, p_fail))."""
    return min(1.0, 2 * min(p))


def holm(ps: Sequence[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down: which of the hypotheses with p-values ``ps`` are rejected at
    family-wise ``alpha`` (sorted ascending, the i-th (from 0) needs p <= alpha / (k - i) and
    every earlier one rejected)."""
    k = len(ps)
    out = [False] * k
    for i, j in enumerate(sorted(range(k), key=lambda j: ps[j])):
        if ps[j] > alpha / (k - i):
            break
        out[j] = True
    return out


def holm_level(rank: int, k: int, alpha: float = 0.05) -> float:
    """The level Holm asks of the hypothesis of rank ``rank`` (0: smallest p) among k."""
    return alpha / (k - rank)


def bartlett_homogeneous(groups: Sequence[Sequence[float]], alpha: float = 0.05) -> bool:
    """Bartlett's test of equal variances across ``groups`` (each >= 2 values) not rejected at
    ``alpha``; True for fewer than two groups; False when a group has no spread (the test is
    undefined: the conservative answer)."""
    gs = [list(g) for g in groups if len(g) >= 2]
    if len(gs) < 2:
        return True
    if any(max(g) == min(g) for g in gs):
        return False
    return bartlett_p(gs) > alpha


def bartlett_p(groups: Sequence[Sequence[float]]) -> float:
    """Bartlett's test of equal variances (each group >= 2 values with some spread):
    T = [(N - k) ln s_p^2 - sum (n_i - 1) ln s_i^2] / [1 + (sum 1/(n_i - 1) - 1/(N - k)) / (3 (k - 1))],
    p = P(chi^2_{k-1} > T)."""
    k = len(groups)
    n = [len(g) for g in groups]
    var = [sample_variance(g) for g in groups]
    big_n = sum(n)
    sp2 = sum((ni - 1) * v for ni, v in zip(n, var)) / (big_n - k)
    num = (big_n - k) * math.log(sp2) - sum((ni - 1) * math.log(v) for ni, v in zip(n, var))
    den = 1 + (sum(1 / (ni - 1) for ni in n) - 1 / (big_n - k)) / (3 * (k - 1))
    return float(special.chdtrc(k - 1, num / den))


def fmt_p(p: float) -> str:
    return "1" if p >= 1 else f"{p:.2g}" if p >= 1e-4 else "<1e-4"

"""Seed statistics behind every training verdict: a pooled seed spread, standard errors, intervals.

A *paired difference* is the difference of two final losses of the same seed (same data
order and initialisation), e.g. a sync/async gap ``d_s = L_async,s - L_sync,s``. Its
seed-to-seed spread is measured on the cells that have several seeds (groups g of n_g
seeds, sample SD sd_g) and pooled:

    sd_pool = sqrt( sum_g (n_g - 1) sd_g^2 / sum_g (n_g - 1) ).

An estimate of a cell's mean difference from n seeds uses its own sample SD when n >= 3
and otherwise *borrows* sd_pool (said so wherever it is printed). The spread depends on the
optimizer and on the peak lr (AdamW's gap varies between seeds ~4x more at 4x its preset
lr than at it), so sd_pool is taken over the most specific groups measured: same
optimizer, model and lr multipliers, else same optimizer and model, else same optimizer
and lr multipliers, else same optimizer, else every optimizer at the same lr multipliers,
else every group (:class:`NoiseModel`):

    mean = (1/n) sum_s d_s,        SE = sd / sqrt(n).

Two cells are independent (different runs): SE(a - b) = sqrt(SE_a^2 + SE_b^2). A
difference *holds* beyond ``Z = 2`` standard errors. A ratio a / b gets Fieller's
interval, the set of k for which a - k b is within Z standard errors of 0:

    (a - k b)^2 <= Z^2 (v_a - 2 k c + k^2 v_b),      v = SE^2, c = covariance of the means,

bounded when b is resolved from 0 (b^2 > Z^2 v_b), else unbounded. "a >= 3 b" holds exactly
when the interval's lower end is >= 3. Nothing here is tuned to a result: Z and the
rules are fixed in advance and printed in the report.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

Z = 2.0
OWN_SD_MIN_N = 3  # a cell's own SD is used from this many seeds on; below it the pooled SD


@dataclass(frozen=True)
class Noise:
    """The pooled per-seed SD of a paired difference, and what it rests on."""

    sd: float
    dof: int
    groups: int
    source: str = ""

    def __str__(self) -> str:
        if not math.isfinite(self.sd):
            return "no pooled seed spread (no cell has 2 seeds)"
        return f"pooled seed SD {self.sd:.4f} ({self.groups} multi-seed cells, {self.dof} dof{self.source})"


NO_NOISE = Noise(float("nan"), 0, 0)


def lr_key(lr=1.0) -> tuple[float, float]:
    """The peak lrs of a paired difference's two runs as multipliers of each optimizer's preset,
    (c_sync, c_delayed); one multiplier c means (c, c). Preset lr: (1.0, 1.0)."""
    c = tuple(lr) if isinstance(lr, (tuple, list)) else (lr, lr)
    return tuple(round(float(x), 9) for x in c)


def lr_text(lr) -> str:
    a, b = lr_key(lr)
    return "the preset lr" if a == b == 1 else f"lr x{a:g}" if a == b else f"lr x{a:g} (sync) / x{b:g} (delayed)"


@dataclass(frozen=True)
class NoiseModel:
    """Pooled seed spreads at six levels; a cell borrows the most specific one measured.

    Spreads differ between optimizers (MARS's gap varies between seeds about 10x more than
    AdamW's) and with the peak lr, so a one-seed cell of optimizer o on model c at lr
    multipliers r borrows the SD pooled over o's multi-seed cells on c at r, else over o's
    cells on c at any lr, else over o's cells at r on any model, else over o's cells, else
    over every optimizer's cells at r, else over every cell."""

    cells: dict          # (optimizer, config, lr_key) -> Noise
    models: dict         # (optimizer, config) -> Noise
    optimizer_lrs: dict  # (optimizer, lr_key) -> Noise
    optimizers: dict     # optimizer -> Noise
    lrs: dict            # lr_key -> Noise
    overall: Noise = NO_NOISE

    def for_cell(self, optimizer: str, config: str, lr=1.0) -> Noise:
        r = lr_key(lr)
        for n in (self.cells.get((optimizer, config, r)), self.models.get((optimizer, config)),
                  self.optimizer_lrs.get((optimizer, r)), self.optimizers.get(optimizer), self.lrs.get(r)):
            if n is not None and n.dof:
                return n
        return self.overall

    def __str__(self) -> str:
        if not self.overall.dof:
            return str(self.overall)
        parts = ", ".join(f"{o} on {c} at {lr_text(r)} {n.sd:.4f} ({n.dof} dof)"
                          for (o, c, r), n in sorted(self.cells.items()))
        return (f"pooled seed SDs per optimizer, model and lr: {parts}; over every multi-seed cell "
                f"{self.overall.sd:.4f} ({self.overall.groups} cells, {self.overall.dof} dof)")


def noise_model(groups) -> NoiseModel:
    """:class:`NoiseModel` from (optimizer, config, lr multipliers, per-seed values) replicate
    groups (lr: as :func:`lr_key` takes it)."""
    groups = [(o, c, lr_key(r), g) for o, c, r, g in groups]

    def pools(key, where):
        """{key(group): Noise pooled over the groups sharing it}, each saying ``where(key)``."""
        by: dict = {}
        for o, c, r, g in groups:
            by.setdefault(key(o, c, r), []).append(g)
        return {k: pool(gs, source=f"; {where(k)}") for k, gs in by.items()}

    return NoiseModel(
        cells=pools(lambda o, c, r: (o, c, r), lambda k: f"{k[0]} on {k[1]} at {lr_text(k[2])}"),
        models=pools(lambda o, c, r: (o, c), lambda k: f"{k[0]} on {k[1]}, every lr"),
        optimizer_lrs=pools(lambda o, c, r: (o, r), lambda k: f"{k[0]} at {lr_text(k[1])}, every model"),
        optimizers=pools(lambda o, c, r: o, lambda k: f"{k}, every model and lr"),
        lrs=pools(lambda o, c, r: r, lambda k: f"every optimizer at {lr_text(k)}"),
        overall=pool([g for *_, g in groups], source="; every optimizer and model"))


EMPTY_MODEL = NoiseModel({}, {}, {}, {}, {})


def finite(xs: Sequence[float]) -> list[float]:
    return [x for x in xs if x is not None and math.isfinite(x)]


def pool(groups: Sequence[Sequence[float]], source: str = "") -> Noise:
    """:class:`Noise` from replicate groups (those with fewer than 2 finite values are skipped)."""
    ss, dof, k = 0.0, 0, 0
    for g in groups:
        g = finite(g)
        if len(g) >= 2:
            ss += (len(g) - 1) * statistics.variance(g)
            dof += len(g) - 1
            k += 1
    return Noise(math.sqrt(ss / dof) if dof else float("nan"), dof, k, source)


@dataclass(frozen=True)
class Estimate:
    """Mean of a paired difference over n seeds, its SD and standard error."""

    mean: float
    se: float
    n: int
    sd: float
    borrowed: bool = False

    @property
    def resolved_positive(self) -> bool:
        return self.mean > Z * self.se

    def __str__(self) -> str:
        if not math.isfinite(self.mean):
            return "n/a"
        if not math.isfinite(self.se):
            return f"{self.mean:.4f} (n={self.n}, no SE)"
        how = "pooled SD" if self.borrowed else "own SD"
        return f"{self.mean:.4f} ± {self.se:.4f} SE (n={self.n}, {how})"


def estimate(xs: Sequence[float], noise: Noise = NO_NOISE) -> Estimate:
    """Mean and SE of ``xs``: the own sample SD for n >= OWN_SD_MIN_N, else ``noise.sd``."""
    xs = finite(xs)
    n = len(xs)
    if n == 0:
        return Estimate(float("nan"), float("nan"), 0, float("nan"))
    own = n >= OWN_SD_MIN_N
    sd = statistics.stdev(xs) if own else noise.sd
    return Estimate(statistics.fmean(xs), sd / math.sqrt(n), n, sd, borrowed=not own)


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b of two independent estimates: SE = sqrt(SE_a^2 + SE_b^2)."""
    return Estimate(a.mean - b.mean, math.hypot(a.se, b.se), min(a.n, b.n), float("nan"),
                    a.borrowed or b.borrowed)


def paired(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """b_s - a_s per seed where both are finite (a paired difference of the same seeds' runs)."""
    return [y - x for x, y in zip(a, b) if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]


def paired_estimate(a: Sequence[float], b: Sequence[float], noise: Noise = NO_NOISE) -> Estimate:
    """Estimate of mean(b_s - a_s) over the seeds where both are finite."""
    return estimate(paired(a, b), noise)


def fieller(a: float, b: float, va: float, vb: float, cov: float = 0.0, z: float = Z) -> tuple[float, float]:
    """Interval for a / b: {k : (a - k b)^2 <= z^2 (va - 2 k cov + k^2 vb)}.

    Returns (lo, hi); (-inf, inf) when the set is the whole line or b = 0 (no information); of a set made of two rays (b unresolved, a resolved) the ray that
    holds a / b, with the other end infinite."""
    if not all(math.isfinite(v) for v in (a, b, va, vb, cov)):
        return -math.inf, math.inf
    qa = b * b - z * z * vb
    qb = -2 * (a * b - z * z * cov)
    qc = a * a - z * z * va
    disc = qb * qb - 4 * qa * qc
    if qa > 0:
        if disc < 0:  # cannot happen for valid variances; be safe
            return -math.inf, math.inf
        r = math.sqrt(disc)
        return (-qb - r) / (2 * qa), (-qb + r) / (2 * qa)
    if disc < 0 or qa == 0 or b == 0:
        return -math.inf, math.inf
    # the complement of a bounded interval: two rays; keep the one holding the estimate a / b
    r = math.sqrt(disc)
    k1, k2 = sorted(((-qb - r) / (2 * qa), (-qb + r) / (2 * qa)))
    return (k2, math.inf) if a / b >= k2 else (-math.inf, k1)


def seeds_to_resolve(distance: float, se: float, n: int) -> str:
    """What resolving an inconclusive comparison would take: SE scales as 1/sqrt(n), so the
    estimate's ``distance`` from the decision point clears Z SE from n' = n (Z se / distance)^2
    seeds per cell on (if the estimate stayed where it is)."""
    if n < 1 or not (math.isfinite(distance) and math.isfinite(se)) or se <= 0:
        return ""
    if distance == 0:
        return "; no number of seeds resolves an estimate that sits on the decision point"
    need = math.ceil(n * (Z * se / abs(distance)) ** 2 - 1e-9)
    return f"; about {max(need, n + 1)} seeds per cell would resolve it if the estimate held"


def fmt_interval(lo: float, hi: float, pct: bool = False) -> str:
    def f(v):
        if math.isinf(v):
            return "-inf" if v < 0 else "+inf"
        return f"{v:.0%}" if pct else f"{v:.2f}"
    return f"[{f(lo)}, {f(hi)}]"

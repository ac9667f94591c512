"""Seed statistics behind every training verdict (docs/protocol.md §2, §5, §7): estimates of
paired differences with their degrees of freedom, the seed spread a cell borrows, and the
machine component.

A *paired difference* is the difference of two final losses of one seed (same data order and
initialisation), e.g. a sync/async gap ``d_s = L_async,s - L_sync,s``. A cell's estimate is
the mean over its n seeds,

    mean = (1/n) sum_s d_s,        Var(mean) = sd^2 / n,

with the cell's own sample SD (n - 1 dof) from n >= OWN_SD_MIN_N seeds, else an SD pooled
over replicate groups g (multi-seed cells; sd_pool^2 = sum_g (n_g - 1) sd_g^2 / sum_g (n_g - 1),
dof = sum_g (n_g - 1)) by the rule of :class:`NoiseModel`. Where k of the n pairs mix
machine kinds, ``k rms^2 / n^2`` joins the variance (``paper_figs.statistics.machine_noise``).
A statistic is a linear combination of estimates (:func:`combine`); its dof are
Welch-Satterthwaite's (``paper_figs.statistics.t_tests``).

Final losses carry their run (:class:`Measured`: key, machine kind, regime) and a paired
difference both runs' (:class:`Paired`), so a verdict knows which runs it rests on and
whether a pair mixes machines.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Sequence

from .machine_noise import MachineSpread, same_kind
from .protocol import CONFIDENCE, OWN_SD_MIN_N
from .t_tests import Component, TStat, bartlett_homogeneous, sample_variance, t_quantile


class Measured(float):
    """A final loss that knows its run: ``key``, machine ``kind`` and ``regime`` (None when
    unknown). Arithmetic gives plain floats; :func:`paired` keeps the tags."""

    def __new__(cls, value, key=None, kind=None, regime=None):
        x = super().__new__(cls, value)
        x.key, x.kind, x.regime = key, kind, regime
        return x


class Paired(float):
    """One seed's paired difference b - a, with both runs' keys, machine kinds and regimes."""

    def __new__(cls, value, keys=(), kinds=(), regimes=()):
        x = super().__new__(cls, value)
        x.keys, x.kinds, x.regimes = tuple(keys), tuple(kinds), tuple(regimes)
        return x

    @property
    def mixed(self) -> bool:
        """The runs' known machine kinds are not one kind."""
        known = [k for k in self.kinds if k]
        return any(not same_kind(known[0], k) for k in known[1:])


def joined(value: float, *parts: float) -> float:
    """``value`` computed from the paired differences ``parts`` of one seed (e.g. (1 - low) g - h),
    tagged with every run they rest on; a plain float when no part is tagged."""
    tagged = [p for p in parts if isinstance(p, Paired)]
    if not tagged:
        return float(value)
    runs = dict.fromkeys((k, m, r) for p in tagged for k, m, r in zip(p.keys, p.kinds, p.regimes))
    return Paired(value, *(zip(*runs) if runs else ((), (), ())))


def scaled(x: float, factor: float) -> float:
    """x * factor, keeping a :class:`Paired`'s tags (a gap relative to its sync loss)."""
    return joined(x * factor, x)


@dataclass(frozen=True)
class Noise:
    """A seed SD a cell can borrow: ``sd`` with ``dof``, over ``groups`` multi-seed cells,
    ``source`` saying which; ``alt`` the conservative alternative (docs/protocol.md §5; None:
    itself), ``machine`` the measured cross-machine spread (None: not known)."""

    sd: float
    dof: int
    groups: int
    source: str = ""
    alt: "Noise | None" = field(default=None, compare=False)
    machine: MachineSpread | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if not math.isfinite(self.sd):
            return "no pooled seed spread (no cell has 2 seeds)"
        return f"pooled seed SD {self.sd:.4f} ({self.groups} multi-seed cells, {self.dof} dof{self.source})"

    @property
    def conservative(self) -> "Noise":
        return self.alt if self.alt is not None else self

    def width(self) -> float:
        """t_{0.975, dof} x sd: the half-width factor the protocol ranks pools by."""
        return t_quantile(0.5 + CONFIDENCE / 2, self.dof) * self.sd if self.dof and math.isfinite(self.sd) else math.inf


NO_NOISE = Noise(float("nan"), 0, 0)


def scaled_noise(n: Noise, factor: float) -> Noise:
    """``n`` for values scaled by ``factor`` (a gap relative to its sync loss), its alternative too."""
    alt = scaled_noise(n.alt, factor) if n.alt is not None else None
    return replace(n, sd=n.sd * abs(factor), source=n.source + f" (scaled x{factor:.4g})", alt=alt)


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
    """The seed spread a cell borrows, by one rule (docs/protocol.md §5).

    Candidate pools of a cell of optimizer o on model c at lr multipliers r, specific to broad:
    (o, c, r), (o, c), (o, r), (o); when o has no multi-seed cell, (every optimizer at r),
    (every cell). Criterion: Bartlett's test of equal variances across the groups of the
    broadest candidate; not rejected -> that pool (one SD fits them all), rejected -> the most
    specific non-empty candidate. Conservative alternative (``Noise.alt``): the non-empty
    candidate with the widest t_{0.975, dof} x sd."""

    groups: tuple = ()       # ((optimizer, config, lr_key, per-seed values), ...)
    machine: MachineSpread | None = None
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def candidates(self, optimizer: str, config: str, lr=1.0) -> list[tuple[str, list]]:
        """[(description, [groups])] of the non-empty candidate pools, specific to broad."""
        r = lr_key(lr)
        own = [g for g in self.groups if g[0] == optimizer]
        if own:
            levels = [(f"{optimizer} on {config} at {lr_text(r)}", lambda g: g[1] == config and g[2] == r),
                      (f"{optimizer} on {config}, every lr", lambda g: g[1] == config),
                      (f"{optimizer} at {lr_text(r)}, every model", lambda g: g[2] == r),
                      (f"{optimizer}, every model and lr", lambda g: True)]
        else:
            own = list(self.groups)
            levels = [(f"every optimizer at {lr_text(r)}", lambda g: g[2] == r),
                      ("every optimizer and model", lambda g: True)]
        out, seen = [], set()
        for desc, keep in levels:
            idx = frozenset(i for i, g in enumerate(own) if keep(g))
            if idx and idx not in seen:
                seen.add(idx)
                out.append((desc, [own[i][3] for i in sorted(idx)]))
        return out

    def for_cell(self, optimizer: str, config: str, lr=1.0) -> Noise:
        key = (optimizer, config, lr_key(lr))
        if key not in self.memo:
            self.memo[key] = self._borrow(*key)
        return self.memo[key]

    def _borrow(self, optimizer: str, config: str, r) -> Noise:
        cands = self.candidates(optimizer, config, r)
        if not cands:
            return Noise(float("nan"), 0, 0, machine=self.machine)
        pools = [pool(gs, source=f"; {desc}", machine=self.machine) for desc, gs in cands]
        homogeneous = bartlett_homogeneous([finite(g) for g in cands[-1][1]])
        primary = pools[-1] if homogeneous else pools[0]
        why = (f"; Bartlett: the {len(cands[-1][1])} cells of the broadest pool are "
               f"{'homogeneous' if homogeneous else 'not homogeneous'} at 5 %")
        widest = max(pools, key=Noise.width)
        primary = Noise(primary.sd, primary.dof, primary.groups, primary.source + why,
                        alt=widest if widest is not primary else None, machine=self.machine)
        return primary

    @property
    def overall(self) -> Noise:
        return pool([g[3] for g in self.groups], source="; every optimizer and model")

    def __str__(self) -> str:
        if not self.groups:
            return str(NO_NOISE)
        cells = sorted({(o, c, r) for o, c, r, _ in self.groups})
        parts = ", ".join(f"{o} on {c} at {lr_text(r)} {self.for_cell(o, c, r).sd:.4f} "
                          f"({self.for_cell(o, c, r).dof} dof)" for o, c, r in cells)
        return (f"seed SDs each cell borrows (protocol §5), per optimizer, model and lr: {parts}; over every "
                f"multi-seed cell {self.overall.sd:.4f} ({self.overall.groups} cells, {self.overall.dof} dof)")


def noise_model(groups, machine: MachineSpread | None = None) -> NoiseModel:
    """:class:`NoiseModel` from (optimizer, config, lr multipliers, per-seed values) replicate
    groups (lr: as :func:`lr_key` takes it)."""
    return NoiseModel(tuple((o, c, lr_key(r), list(g)) for o, c, r, g in groups), machine)


EMPTY_MODEL = NoiseModel()


def finite(xs: Sequence[float]) -> list[float]:
    return [x for x in xs if x is not None and math.isfinite(x)]


def pool(groups: Sequence[Sequence[float]], source: str = "", machine: MachineSpread | None = None) -> Noise:
    """:class:`Noise` from replicate groups (those with fewer than 2 finite values are skipped)."""
    ss, dof, k = 0.0, 0, 0
    for g in groups:
        g = finite(g)
        if len(g) >= 2:
            ss += (len(g) - 1) * sample_variance(g)
            dof += len(g) - 1
            k += 1
    return Noise(math.sqrt(ss / dof) if dof else float("nan"), dof, k, source, machine=machine)


@dataclass(frozen=True)
class Estimate:
    """A linear combination of cell means: ``mean``, its variance ``components``, the smallest
    cell's ``n``, ``sd`` (one cell: its SD), whether an SD was ``borrowed``, the run ``keys`` it
    rests on, the ``machine`` rule it followed, and ``why`` it is unusable ('' if usable)."""

    mean: float
    components: tuple = ()
    n: int = 0
    sd: float = float("nan")
    borrowed: bool = False
    keys: frozenset = frozenset()
    machine: str = ""
    why: str = ""

    @cached_property
    def stat(self) -> TStat:
        return TStat.of(self.mean, self.components)

    @property
    def se(self) -> float:
        return self.stat.se

    @property
    def dof(self) -> float:
        return self.stat.dof

    def interval(self) -> tuple[float, float]:
        return self.stat.interval(CONFIDENCE)

    def __str__(self) -> str:
        if not math.isfinite(self.mean):
            return "n/a"
        if self.why or not self.stat.usable:
            return f"{self.mean:.4f} (n={self.n}, no SE)"
        lo, hi = self.interval()
        how = "pooled SD" if self.borrowed else "own SD"
        return f"{self.mean:.4f} [{lo:.4f}, {hi:.4f}] (n={self.n}, {how}, {self.dof:.0f} dof)"


def estimate(xs: Sequence[float], noise: Noise = NO_NOISE) -> Estimate:
    """The mean of ``xs`` with its variance: the own sample SD (n - 1 dof) for n >= OWN_SD_MIN_N,
    else ``noise`` (its dof); plus the machine component where pairs mix machine kinds."""
    xs = finite(xs)
    n = len(xs)
    if n == 0:
        return Estimate(float("nan"), n=0, why="missing runs")
    keys = frozenset(k for x in xs for k in getattr(x, "keys", ()) if k)
    own = n >= OWN_SD_MIN_N
    if own:
        var = sample_variance(xs)
        sd, comp = math.sqrt(var), Component(var / n, n - 1)
    else:
        sd, comp = noise.sd, Component(noise.sd ** 2 / n, noise.dof, f"pool{noise.source}")
    why = "" if math.isfinite(sd) and (own or noise.dof) else "one seed and no pooled seed spread"
    comps, text, w = (comp,), "one machine kind", ""
    mixed = [x for x in xs if isinstance(x, Paired) and x.mixed]
    if mixed:
        extra, text, w = machine_component(mixed, n, noise.machine)
        comps += extra
    return Estimate(statistics.fmean(xs), comps, n, sd, not own, keys, text, why or w)


def machine_component(mixed: Sequence[Paired], n: int, spread: MachineSpread | None) -> tuple[tuple, str, str]:
    """((Component,), text, why-unusable) for ``mixed`` pairs of n: variance k rms^2 / n^2 with the
    regime's measured runs as dof (docs/protocol.md §7)."""
    k = len(mixed)
    regimes = sorted({r for x in mixed for r in x.regimes if r})
    if spread is None or not spread.present:
        return (), f"{k} of {n} pairs mix machine kinds", "cross-machine spread not measured"
    rms, dof, used = spread.rms_for(regimes)
    return ((Component(k * rms ** 2 / n ** 2, dof, f"machine:{used}"),),
            f"{k} of {n} pairs mix machine kinds: + cross-machine SD {rms:.4f} ({used}, n={dof})", "")


def combine(terms: Sequence[tuple[float, Estimate]]) -> Estimate:
    """sum_i c_i e_i of independent estimates (variance components scaled by c_i^2; one pool's
    components merge when the dof are counted)."""
    comps = tuple(Component(c * c * x.var, x.dof, x.source) for c, e in terms for x in e.components)
    es = [e for _, e in terms]
    machine = "; ".join(dict.fromkeys(e.machine for e in es if e.machine and e.machine != "one machine kind"))
    return Estimate(sum(c * e.mean for c, e in terms), comps, min((e.n for e in es), default=0), float("nan"),
                    any(e.borrowed for e in es), frozenset().union(*(e.keys for e in es)),
                    machine or "one machine kind", next((e.why for e in es if e.why), ""))


def difference(a: Estimate, b: Estimate) -> Estimate:
    """a - b of two independent estimates."""
    return combine([(1.0, a), (-1.0, b)])


def paired(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """b_s - a_s per seed where both are finite (:class:`Paired` when the runs are tagged)."""
    out = []
    for x, y in zip(a, b):
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            continue
        if isinstance(x, Measured) and isinstance(y, Measured):
            out.append(Paired(y - x, (x.key, y.key), (x.kind, y.kind), (x.regime, y.regime)))
        else:
            out.append(y - x)
    return out


def paired_estimate(a: Sequence[float], b: Sequence[float], noise: Noise = NO_NOISE) -> Estimate:
    """Estimate of mean(b_s - a_s) over the seeds where both are finite."""
    return estimate(paired(a, b), noise)


def fieller(a: float, b: float, va: float, vb: float, cov: float = 0.0, z: float = 2.0) -> tuple[float, float]:
    """Interval for a / b: {k : (a - k b)^2 <= z^2 (va - 2 k cov + k^2 vb)} (z: the t critical
    value of the estimates' dof).

    Returns (lo, hi); (-inf, inf) when the set is the whole line or b = 0 (no information); of a
    set made of two rays (b unresolved, a resolved) the ray that holds a / b, the other end infinite."""
    if not all(math.isfinite(v) for v in (a, b, va, vb, cov, z)):
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
    r = math.sqrt(disc)
    k1, k2 = sorted(((-qb - r) / (2 * qa), (-qb + r) / (2 * qa)))
    return (k2, math.inf) if a / b >= k2 else (-math.inf, k1)


def paired_ratio(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float] | None:
    """(mean(a) / mean(b), lo, hi) for per-seed values ``a``, ``b`` of the same seeds: the
    Fieller 95 % interval of the ratio of the two means, which covary (var = s^2 / n each,
    cov = cov_s(a, b) / n, z = t_{0.975, n - 1}); the first n = min(len) seeds; the interval
    widened to hold the point; an unresolved denominator gives an infinite end. None with fewer
    than 2 seeds or a zero denominator."""
    n = min(len(a), len(b))
    if n < 2:
        return None
    a, b = list(a[:n]), list(b[:n])
    ma, mb = sum(a) / n, sum(b) / n
    if not (mb and math.isfinite(ma) and math.isfinite(mb)):
        return None
    va, vb = statistics.variance(a) / n, statistics.variance(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (n - 1) / n
    lo, hi = fieller(ma, mb, va, vb, cov, t_quantile(0.5 + CONFIDENCE / 2, n - 1))
    point = ma / mb
    return point, min(lo, point), max(hi, point)


def seeds_to_resolve(distance: float, se: float, n: int, dof: float, level: float = 0.05) -> str:
    """What resolving an inconclusive comparison would take, if its estimate held: the smallest
    n' >= n seeds per cell at which ``distance`` (the estimate's distance from the decision point)
    clears the critical value at n''s own degrees of freedom (``paper_figs.statistics.power``:
    today's at today's n, n' - 1 once a cell has its own SD)."""
    from .power import seeds_to_clear
    if n < 1 or not (math.isfinite(distance) and math.isfinite(se) and math.isfinite(dof)) or se <= 0:
        return ""
    if distance == 0:
        return "; no number of seeds resolves an estimate that sits on the decision point"
    need = seeds_to_clear(distance, se, n, dof, level)
    if need is None:
        return "; more than 10000 seeds per cell would be needed to resolve it if the estimate held"
    return f"; about {max(need, n + 1)} seeds per cell would resolve it if the estimate held"


def fmt_interval(lo: float, hi: float, pct: bool = False) -> str:
    def f(v):
        if math.isinf(v):
            return "-inf" if v < 0 else "+inf"
        return f"{v:.0%}" if pct else f"{v:.2f}"
    return f"[{f(lo)}, {f(hi)}]"

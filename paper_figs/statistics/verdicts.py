"""Qualitative claims of the paper, judged on measured numbers by the protocol of
docs/protocol.md: holds / does not hold / inconclusive.

Every comparison is of final validation losses of runs that share data order and seed
(paired), in the run's own units. Each rule computes a statistic (:mod:`paper_figs.statistics.seed_stats`:
a cell's own SD from 3 seeds, else a borrowed one; machine component where pairs mix kinds),
a Student-t test of the claim's kind (:mod:`paper_figs.statistics.t_tests`) and its 95 % interval, once
under the pools the cells borrow and once under their conservative alternatives; the line's
p-values are the larger of the two, so a line decided under one pool only is inconclusive.
A line holds when p_hold <= ALPHA / 2, does not hold when p_fail <= ALPHA / 2 (its 95 %
interval on one side of the decision boundary). Claims made of parts combine the parts'
p-values (:func:`every`, :func:`most`, :func:`both`, :func:`negate`). Confirmatory lines are
then decided with Holm over the family (``paper_figs.report.confirmatory``); every other line is
exploratory and keeps its per-line decision.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Callable, NamedTuple, Sequence

from . import t_tests as tt
from .protocol import ALPHA, MONOTONE_SPEARMAN, MUCH_LARGER, RECOVERY_LOW
from .seed_stats import NO_NOISE, Estimate, Noise, estimate, fieller, fmt_interval, joined, paired, seeds_to_resolve
from .seed_stats import combine as linear
from .t_tests import FAILS, HOLDS, INCONCLUSIVE

__all__ = ["HOLDS", "FAILS", "INCONCLUSIVE", "Evidence", "Verdict", "mean", "spread", "fmt", "gate", "combine",
           "every", "most", "both", "negate", "much_larger_gap", "larger_gap", "ef_recovers", "spearman",
           "gap_shrinks_with", "no_growth", "below_margin", "equivalent", "lower_is_better", "reading_verdict"]


@dataclass(frozen=True)
class Evidence:
    """The numbers behind a verdict: (p_hold, p_fail) under the borrowed pools (``p``) and their
    conservative alternatives (``p_alt``), the statistic's estimate, 95 % interval, n and dof,
    a short ``label``, the run ``keys`` it rests on, the decision ``boundary`` the estimate must
    clear and on which ``side`` the claim holds (+1 above, -1 below, 0 within +-boundary); for a
    claim of parts its ``parts`` and rule (at least ``k`` of them hold); ``negated``: the claim
    is 'not' this evidence's."""

    p: tuple = (1.0, 1.0)
    p_alt: tuple = (1.0, 1.0)
    est: float = float("nan")
    lo: float = float("nan")
    hi: float = float("nan")
    n: int = 0
    dof: float = float("nan")
    label: str = ""
    keys: frozenset = frozenset()
    parts: tuple = ()
    k: int = 0
    boundary: float = 0.0
    side: int = 1
    negated: bool = False

    @property
    def p_eff(self) -> tuple[float, float]:
        """The line's p-values: the larger under the two pools (decided only if decided under both)."""
        return max(self.p[0], self.p_alt[0]), max(self.p[1], self.p_alt[1])

    def effect(self) -> str:
        """'+0.0123 [+0.0050, +0.0196] (n=4)', or for a claim of parts each part's (a part that is
        itself a claim of parts: its status and how many of its parts hold)."""
        if self.parts:
            return "; ".join(_part_effect(v) for v in self.parts) or "n/a"
        if not math.isfinite(self.est):
            return "n/a"
        if not math.isfinite(self.lo):
            return f"{self.est:.4f} (n={self.n}, no SE)"
        return f"{self.est:+.4f} [{self.lo:+.4f}, {self.hi:+.4f}] (n={self.n})"


def _part_effect(v: "Verdict") -> str:
    t = v.test
    if t is None:
        return v.status
    if t.parts:
        held = sum(p.status == HOLDS for p in t.parts)
        return f"{t.label}: {v.status} ({held} of {len(t.parts)} parts hold)"
    return f"{t.label}: {t.effect()}"


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str
    test: Evidence | None = None
    claim: str = ""   # the confirmatory claim's id (protocol.FAMILY); '' for an exploratory line

    def __str__(self) -> str:
        return f"**{self.status}** ({self.reason})"


def _p_of(v: Verdict, alt: bool = False) -> tuple[float, float]:
    """A verdict's (p_hold, p_fail): its test's, or from its status for a rule without one."""
    if v.test is not None:
        return v.test.p_alt if alt else v.test.p
    return {HOLDS: (0.0, 1.0), FAILS: (1.0, 0.0)}.get(v.status, (1.0, 1.0))


def mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.fmean(xs) if xs else float("nan")


def spread(xs: Sequence[float]) -> float:
    """Sample standard deviation over seeds; nan with fewer than 2."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    return statistics.stdev(xs) if len(xs) >= 2 else float("nan")


def fmt(xs: Sequence[float]) -> str:
    """'0.123' for one seed, '0.123 ± 0.004 (n=3)' for several (± = sample std)."""
    m, s = mean(xs), spread(xs)
    if not math.isfinite(m):
        return "n/a"
    return f"{m:.3f}" if not math.isfinite(s) else f"{m:.3f} ± {s:.3f} (n={len(xs)})"


def gate(v: Verdict, meaningful: bool) -> Verdict:
    """Replace ``v`` by 'inconclusive: micro profile' when the profile's verdicts mean nothing."""
    if meaningful:
        return v
    return Verdict(INCONCLUSIVE, f"micro profile; the numbers alone would say {v.status}", None, v.claim)


# ---- claims made of parts -----------------------------------------------------------------

def _composite(verdicts: Sequence[Verdict], what: str, k: int | None, rule: str) -> Verdict:
    """At least ``k`` (None: all) of the parts hold (t_tests.at_least on each pool's p-values)."""
    n = len(verdicts)
    if n == 0:
        return Verdict(INCONCLUSIVE, f"no part of '{what}'", Evidence(label=what))
    k = n if k is None else k
    p = tt.at_least(k, [_p_of(v) for v in verdicts])
    p_alt = tt.at_least(k, [_p_of(v, alt=True) for v in verdicts])
    keys = frozenset().union(*(v.test.keys for v in verdicts if v.test))
    test = Evidence(p, p_alt, label=what, keys=keys, parts=tuple(verdicts), k=k)
    status = tt.decide(test.p_eff, ALPHA)
    h = sum(v.status == HOLDS for v in verdicts)
    f = sum(v.status == FAILS for v in verdicts)
    desc = (f"{what}: {h} of {n} parts hold, {f} fail, {n - h - f} unresolved (each at 5 %); {rule}: p_hold "
            f"{tt.fmt_p(test.p_eff[0])}, p_fail {tt.fmt_p(test.p_eff[1])}")
    return Verdict(status, desc, test)


def every(verdicts: Sequence[Verdict], what: str) -> Verdict:
    """A claim about every part ("at every horizon", "for AdamW and Muon"): intersection-union
    (holds when every part holds), Bonferroni for a failure (one part resolved against it,
    at level ALPHA / n)."""
    return _composite(verdicts, what, None, "every part (intersection-union)")


combine = every   # the figures' name for a claim about every part


def most(verdicts: Sequence[Verdict], what: str) -> Verdict:
    """A claim about most parts (the paper's "for most optimizers"): more than half hold,
    k = floor(n / 2) + 1 (t_tests.at_least). :func:`every` is the stricter reading."""
    return _composite(verdicts, what, len(verdicts) // 2 + 1 if verdicts else None, "most parts")


def both(a: Verdict, b: Verdict, label: str = "") -> Verdict:
    """The conjunction 'a and b': every part of two (``label``: its short name)."""
    v = _composite([a, b], "both", None, "both")
    return Verdict(v.status, f"{a.reason}; {b.reason}", replace(v.test, label=label or f"{_lab(a)} and {_lab(b)}"))


def _lab(v: Verdict) -> str:
    return v.test.label if v.test and v.test.label else ""


def negate(v: Verdict, what: str) -> Verdict:
    """The claim 'not v': holds <-> does not hold (p_hold and p_fail swap)."""
    status = {HOLDS: FAILS, FAILS: HOLDS}.get(v.status, INCONCLUSIVE)
    t = v.test or Evidence(_p_of(v), _p_of(v, True))
    return Verdict(status, f"{what}: {v.reason}", replace(t, p=tt.negated(t.p), p_alt=tt.negated(t.p_alt),
                                                          label=f"not: {what}", negated=not t.negated))


# ---- one statistic ------------------------------------------------------------------------------

class Line(NamedTuple):
    """What a rule computes under one choice of pools: its description, the statistic, its
    (p_hold, p_fail), the statistic's name, the decision boundary and which side of it the claim
    is on (for the seeds line and ``paper_figs.seeds_needed``)."""

    desc: str
    est: Estimate
    p: tuple
    what: str
    boundary: float = 0.0
    side: int = 1        # the claim holds above the boundary (+1), below it (-1), within +-boundary (0)
    resolvable: bool = True   # False: a condition other than the seeds blocks the claim (no seeds line)


def _judge(build: Callable[..., Line], noises: Sequence[Noise], label: str) -> Verdict:
    """``build(*noises)`` under the pools and again under their conservative alternatives."""
    ln = build(*noises)
    e = ln.est
    if e.why or not e.stat.usable:
        why = e.why or "no standard error"
        return Verdict(INCONCLUSIVE, f"{ln.desc}: {why}", Evidence(label=label, n=e.n, keys=e.keys, est=e.mean))
    alts = tuple(n.conservative for n in noises)
    alt_used = e.borrowed and any(a != n for a, n in zip(alts, noises))
    ln_c = build(*alts) if alt_used else ln
    lo, hi = e.interval()
    test = Evidence(ln.p, ln_c.p if ln_c.est.stat.usable else (1.0, 1.0), e.mean, lo, hi, e.n, e.dof, label, e.keys,
                    boundary=ln.boundary, side=ln.side)
    status = tt.decide(test.p_eff, ALPHA)
    sds = "own SD" if not e.borrowed else "SD borrowed: " + "; ".join(dict.fromkeys(str(n) for n in noises))
    reason = (f"{ln.desc}; {ln.what} = {e.mean:.4f}, 95 % interval [{lo:.4f}, {hi:.4f}], n={e.n}, "
              f"{e.dof:.3g} dof ({sds}); p_hold {tt.fmt_p(ln.p[0])}, p_fail {tt.fmt_p(ln.p[1])}")
    if alt_used:
        s_p, s_c = tt.decide(ln.p, ALPHA), tt.decide(test.p_alt, ALPHA)
        alt_sd = "; ".join(dict.fromkeys(f"{a.sd:.4f}, {a.dof} dof{a.source}" for a in alts))
        reason += f"; under the conservative pool (SD {alt_sd}): {s_c}"
        if s_p != s_c:
            reason += f" (under the borrowed pool: {s_p}): the status depends on the pool"
    reason += f"; {e.machine}"
    if status == INCONCLUSIVE and ln.resolvable:
        reason += seeds_to_resolve(e.mean - ln.boundary, e.se, e.n, e.stat.dof)
    return Verdict(status, reason, test)


def _pair(noise) -> tuple[Noise, Noise]:
    """One Noise for both cells, or a (first's, second's) pair."""
    return tuple(noise) if isinstance(noise, tuple) else (noise, noise)


def _ratio(d: Estimate, r: Estimate, crit: float) -> str:
    lo, hi = fieller(d.mean, r.mean, d.se ** 2, r.se ** 2, z=crit)
    ratio = d.mean / r.mean if r.mean else math.inf
    return f"ratio {ratio:.1f}x, 95 % Fieller interval {fmt_interval(lo, hi)}"


def much_larger_gap(degraded: Sequence[float], robust: Sequence[float],
                    names: tuple[str, str] = ("AdamW", "Muon"), noise=NO_NOISE) -> Verdict:
    """Claim 'the gap of ``names[0]`` is at least MUCH_LARGER = 3 times that of ``names[1]``'
    (independent cells' per-seed gaps D, R): superiority of D - 3 R > 0. The reason also gives
    Fieller's interval for D / R. ``noise``: one :class:`Noise` or a pair, each cell's own."""
    k = MUCH_LARGER

    def build(nd, nr):
        d, r = estimate(degraded, nd), estimate(robust, nr)
        t = linear([(1.0, d), (-k, r)])
        desc = f"{names[0]} gap {d} vs {names[1]} {r}"
        if t.stat.usable:
            desc += "; " + _ratio(d, r, t.stat.t_crit())
        return Line(desc, t, tt.superiority(t.stat), f"D - {k:g} R")
    return _judge(build, _pair(noise), f"{names[0]} vs {k:g}x {names[1]}")


def larger_gap(degraded: Sequence[float], robust: Sequence[float],
               names: tuple[str, str] = ("AdamW", "Muon"), noise=NO_NOISE) -> Verdict:
    """The ordering reading of 'degrades more': D - R > 0 (Welch; a borrowed SD with its pool's dof)."""
    def build(nd, nr):
        d, r = estimate(degraded, nd), estimate(robust, nr)
        t = linear([(1.0, d), (-1.0, r)])
        return Line(f"{names[0]} gap {d} vs {names[1]} {r}", t, tt.superiority(t.stat), "D - R")
    return _judge(build, _pair(noise), f"{names[0]} - {names[1]}")


def ef_recovers(sync: Sequence[float], async_: Sequence[float], ef: Sequence[float],
                name: str, low: float = RECOVERY_LOW, by: str = "EF", noise: Noise = NO_NOISE) -> tuple[Verdict, float]:
    """Claim 'EF recovers at least ``low`` of the gap' for one optimizer; returns (verdict, fraction).

    ``ef`` may be any mitigation's runs; ``by`` names it. Per seed g_s = L_async - L_sync,
    h_s = L_ef - L_sync, c_s = (1 - low) g_s - h_s; fraction = 1 - mean(h) / mean(g). The
    claim presupposes a gap: it holds when c > 0 and g > 0 are both decided (p_hold =
    max(p_hold(c), p_hold(g))), fails when c < 0 and g > 0 are (p_fail = max(p_fail(c),
    p_hold(g))). A borrowed SD for c is sqrt((1 - low)^2 + 1) sd_pool (g and h share the sync
    run, so this overstates the noise: conservative)."""
    rows = [(a - s, e - s, (s, a, e)) for s, a, e in zip(sync, async_, ef)
            if all(v is not None and math.isfinite(v) for v in (s, a, e))]
    gs = paired([r[2][0] for r in rows], [r[2][1] for r in rows])
    hs = paired([r[2][0] for r in rows], [r[2][2] for r in rows])
    cs = [joined((1 - low) * g - h, g, h) for g, h in zip(gs, hs)]

    def scaled_noise(n: Noise) -> Noise:
        return replace(n, sd=n.sd * math.hypot(1 - low, 1), source=n.source + f" x {math.hypot(1 - low, 1):.3f}",
                       alt=None)

    def build(n):
        g, h, c = estimate(gs, n), estimate(hs, n), estimate(cs, scaled_noise(n))
        frac = 1 - h.mean / g.mean if g.mean else float("nan")
        desc = f"{name}: gap {g}, {by} recovers {frac:.0%}"
        if c.stat.usable and g.stat.usable:
            cov = 0.0
            if len(rows) >= 3 and not g.borrowed:
                cov = statistics.covariance(list(map(float, gs)), list(map(float, hs))) / len(rows)
            lo, hi = fieller(h.mean, g.mean, h.se ** 2, g.se ** 2, cov, z=c.stat.t_crit())
            desc += f" (95 % interval {fmt_interval(1 - hi, 1 - lo, pct=True)})"
        pg = tt.superiority(g.stat) if g.stat.usable else (1.0, 1.0)
        pc = tt.superiority(c.stat) if c.stat.usable else (1.0, 1.0)
        return Line(desc, c, (max(pc[0], pg[0]), max(pc[1], pg[0])), f"({1 - low:g}) g - h, with g > 0 required")

    frac = 1 - mean(hs) / mean(gs) if mean(gs) else float("nan")
    return _judge(build, (noise,), f"{name} {by} recovers >= {low:.0%}"), frac


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman rank correlation (average ranks for ties); nan for fewer than 3 points."""
    if len(xs) != len(ys):
        raise ValueError("xs, ys: lengths differ")
    if len(xs) < 3:
        return float("nan")

    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(v):
            j = i
            while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2
            i = j + 1
        return r

    rx, ry = ranks(list(xs)), ranks(list(ys))
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else float("nan")


def gap_shrinks_with(xs: Sequence[float], gaps: Sequence[Sequence[float]], name: str,
                     noise: Noise = NO_NOISE, sync: Sequence[Sequence[float]] | None = None) -> Verdict:
    """Claim 'a higher momentum shrinks the gap' on (momentum, per-seed gaps) points.

    D = gap(max momentum) - gap(min momentum) (independent cells), claim D < 0. It can hold
    only when Spearman(momentum, mean gap) <= MONOTONE_SPEARMAN. Given ``sync`` (the
    synchronous runs' per-seed losses at each momentum), a sweep over which the sync loss moves
    (the 95 % interval of L_sync(max) - L_sync(min) excludes 0, either way) decides nothing,
    neither "holds" nor "does not hold": the gap then changes with an lr that suits one momentum
    and not another, not with the momentum alone (confounded, docs/protocol.md §8)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    pts = [(xs[i], gaps[i], sync[i] if sync is not None else None) for i in order]
    pts = [p for p in pts if math.isfinite(mean(p[1]))]
    if len(pts) < 3:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 3 momenta measured", Evidence(label=name))
    rho = spearman([p[0] for p in pts], [mean(p[1]) for p in pts])

    def build(n):
        first, last = estimate(pts[0][1], n), estimate(pts[-1][1], n)
        d = linear([(1.0, last), (-1.0, first)])
        desc = (f"{name}: Spearman {rho:+.2f}, gap {first} at momentum {pts[0][0]} -> {last} at {pts[-1][0]}")
        p_hold, p_fail = tt.superiority(d.stat, 0.0)[::-1] if d.stat.usable else (1.0, 1.0)
        blocked = False
        if not rho <= MONOTONE_SPEARMAN:
            p_hold, blocked = 1.0, True
            desc += f" (not monotone: Spearman > {MONOTONE_SPEARMAN:g}, cannot hold)"
        if pts[0][2] is not None:
            s = estimate(paired(pts[0][2], pts[-1][2]), n)
            if s.stat.usable:
                slo, shi = s.interval()
                desc += f"; sync loss change {s.mean:+.4f} [{slo:+.4f}, {shi:+.4f}]"
                if slo > 0 or shi < 0:
                    p_hold, p_fail, blocked = 1.0, 1.0, True
                    desc += (f" (confounded: the sync loss moves by {s.mean:+.4f} over the sweep; "
                             "cannot be decided either way)")
        return Line(desc, d, (p_hold, p_fail), "change of the gap (claim < 0)", 0.0, -1, not blocked)
    return _judge(build, (noise,), name)


def no_growth(horizons: Sequence[float], gaps: Sequence[Sequence[float]], name: str,
              noise: Noise = NO_NOISE, margin: float = float("nan")) -> Verdict:
    """Claim 'the gap does not grow with the horizon': D = gap(longest) - gap(shortest)
    (independent cells) below ``margin`` (non-inferiority, docs/protocol.md §3; the margin in
    the losses' units, M_SMALLEST x the sync loss at the shortest horizon)."""
    if len(horizons) != len(gaps):
        raise ValueError(f"gaps: one list per horizon expected, got {len(gaps)} for {len(horizons)} horizons")
    if not margin > 0:
        raise ValueError(f"margin: a positive growth margin is needed, got {margin}")
    pts = sorted((h, g) for h, g in zip(horizons, gaps) if math.isfinite(mean(g)))
    if len(pts) < 2:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 2 horizons measured", Evidence(label=name))

    def build(n):
        es = [(h, estimate(g, n)) for h, g in pts]
        d = linear([(1.0, es[-1][1]), (-1.0, es[0][1])])
        desc = f"{name}: gap " + " -> ".join(f"{e} at {h}" for h, e in es) + f" steps; margin {margin:.4f}"
        return Line(desc, d, tt.noninferiority(d.stat, margin), "growth (claim < margin)", margin, -1)
    return _judge(build, (noise,), name)


def below_margin(xs: Sequence[float], margin: float, name: str, noise: Noise = NO_NOISE,
                 what: str = "mean (claim < margin)") -> Verdict:
    """Claim mean(xs) < ``margin`` (non-inferiority: 'stays within', 'stays stable')."""
    def build(n):
        e = estimate(xs, n)
        return Line(f"{name}: margin {margin:.4g}", e, tt.noninferiority(e.stat, margin), what, margin, -1)
    return _judge(build, (noise,), name)


def equivalent(xs: Sequence[float], margin: float, name: str, noise: Noise = NO_NOISE) -> Verdict:
    """Claim |mean(xs)| < ``margin`` (two one-sided tests: the 95 % interval inside the margins)."""
    def build(n):
        e = estimate(xs, n)
        return Line(f"{name}: margin +-{margin:.4g}", e, tt.equivalence(e.stat, margin),
                    "mean (claim within +-margin)", margin if e.mean >= 0 else -margin, 0)
    return _judge(build, (noise,), name)


def lower_is_better(better: Sequence[float], worse: Sequence[float], what: str,
                    noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'better < worse' on paired runs (same seeds): D = mean_s (worse_s - better_s) > 0."""
    def build(n):
        e = estimate(paired(better, worse), n)
        return Line(f"{what}: {fmt(better)} vs {fmt(worse)}", e, tt.superiority(e.stat), "paired difference")
    return _judge(build, (noise,), what)


#: verdicts about a reading of the paper's delayed bound (docs/design.md §5)
CANNOT_BE_A_BOUND, NOT_A_BOUND_ALONE = "cannot be a bound (units)", "not a bound by itself"


def reading_verdict(reading: str, *, scale_invariant: bool, implied: bool, checks: int,
                    violated: Sequence[str], alone: bool = False) -> Verdict:
    """Verdict on one reading of the paper's delayed bound.

    not a bound by itself: ``alone`` (the noise term without the drift and the transient);
    cannot be a bound (units): not invariant under f -> c f;
    holds: proved implied by the package's derived lemma (theory.results.implications) and violated in
    none of ``checks`` Monte Carlo checks / searches; does not hold: some check violated it;
    inconclusive: not proved and nothing violated.
    """
    if alone:
        return Verdict(NOT_A_BOUND_ALONE, f"{reading}: it leaves out the drift L eta (1-mu)/mu and the"
                                          " transient (1-mu)^t rho sigma; a comparison, not the paper's claim")
    if not scale_invariant:
        return Verdict(CANNOT_BE_A_BOUND, f"{reading}: 8 L eta^2 has units [F] where 2 mu rho^2 sigma^2 has [F/X]^2,"
                                          " so the statement changes with the units of f")
    if violated:
        return Verdict(FAILS, f"{reading}: violated in " + ", ".join(violated))
    if implied:
        seen = (f"not violated in {checks} Monte Carlo checks nor by the falsification search where it ran" if checks else
                "not checked by Monte Carlo in this run")
        return Verdict(HOLDS, f"{reading}: implied by the derived delayed lemma (sympy); {seen}")
    return Verdict(INCONCLUSIVE, f"{reading}: not proved here and not violated in {checks} checks")

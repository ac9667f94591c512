"""Qualitative claims of the paper, judged on measured numbers: holds / does not hold / inconclusive.

All comparisons are of final validation losses of runs that share data order and seed
(paired), in the run's own units. A difference counts only when it is resolved by the
seeds (:mod:`paper_figs.seed_stats`): beyond ``Z = 2`` standard errors, the standard error
from the cell's own seed spread (n >= 3) or from the spread pooled over every multi-seed
cell of the report (``noise``; n < 3, said so). There is no floor: with no measured spread
a one-seed comparison is inconclusive. Each rule is in its function's docstring and each
verdict's reason prints n, the estimate, its standard error and the rule.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

from .seed_stats import (NO_NOISE, Z, Estimate, Noise, difference, estimate, fieller, fmt_interval, paired_estimate,
                         seeds_to_resolve)

MUCH_LARGER = 3.0   # "much larger": at least this many times the other gap, resolved
GROWTH_TOL = 0.5    # "does not grow": the growth's upper bound below this fraction of the first gap
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str

    def __str__(self) -> str:
        return f"**{self.status}** ({self.reason})"


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
    return Verdict(INCONCLUSIVE, f"micro profile; the numbers alone would say {v.status}")


def combine(verdicts: Sequence[Verdict], what: str) -> Verdict:
    """One verdict for a claim made of several parts (optimizers, horizons, momenta).

    With n parts of which d are resolved (not inconclusive):
    holds if 2 d > n and every resolved part holds; does not hold if 2 d > n and every
    resolved part fails; otherwise inconclusive (mixed, or most parts unresolved: a claim
    "for every horizon" is not shown by one horizon of three).
    """
    n = len(verdicts)
    decided = [v for v in verdicts if v.status != INCONCLUSIVE]
    if not decided:
        return Verdict(INCONCLUSIVE, f"no part of '{what}' could be resolved")
    held = sum(v.status == HOLDS for v in decided)
    if held not in (0, len(decided)):
        return Verdict(INCONCLUSIVE, f"mixed: {held} of {len(decided)} resolved parts hold")
    word = "hold" if held else "fail"
    if 2 * len(decided) <= n:
        return Verdict(INCONCLUSIVE, f"only {len(decided)} of {n} parts resolved (they all {word});"
                                     " most parts are inside the noise or missing")
    if held:
        return Verdict(HOLDS, f"{len(decided)} of {n} parts resolved, all hold")
    return Verdict(FAILS, f"{len(decided)} of {n} parts resolved, none holds")


def every(verdicts: Sequence[Verdict], what: str) -> Verdict:
    """A claim about every part that one counterexample refutes ("no setting recovers
    >= 50 %"): does not hold as soon as one part is resolved against it; otherwise
    :func:`combine` (holds when most parts are resolved and all of those hold)."""
    failed = [v for v in verdicts if v.status == FAILS]
    if failed:
        return Verdict(FAILS, f"{len(failed)} of {len(verdicts)} parts resolved against '{what}'")
    return combine(verdicts, what)


def most(verdicts: Sequence[Verdict], what: str) -> Verdict:
    """One verdict for a claim 'for most parts' (the paper's "for most optimizers").

    With n parts of which h hold and f fail: holds if 2 h > n; does not hold if
    2 (n - f) <= n (even if every unresolved part held, they would not be most);
    otherwise inconclusive. :func:`combine` is the stricter 'for every part' reading.
    """
    n = len(verdicts)
    if n == 0:
        return Verdict(INCONCLUSIVE, f"no part of '{what}'")
    h = sum(v.status == HOLDS for v in verdicts)
    f = sum(v.status == FAILS for v in verdicts)
    desc = f"{h} of {n} parts hold, {f} fail, {n - h - f} unresolved"
    if 2 * h > n:
        return Verdict(HOLDS, desc + f": more than half ({what})")
    if 2 * (n - f) <= n:
        return Verdict(FAILS, desc + f": not most, even if every unresolved part held ({what})")
    return Verdict(INCONCLUSIVE, desc + f": the unresolved parts decide ({what})")


def both(a: Verdict, b: Verdict) -> Verdict:
    """The conjunction 'a and b': holds if both hold, does not hold if either fails, else inconclusive."""
    reason = f"{a.reason}; {b.reason}"
    if FAILS in (a.status, b.status):
        return Verdict(FAILS, reason)
    if a.status == b.status == HOLDS:
        return Verdict(HOLDS, reason)
    return Verdict(INCONCLUSIVE, reason)


def negate(v: Verdict, what: str) -> Verdict:
    """The claim 'not v': holds <-> does not hold; inconclusive stays inconclusive."""
    status = {HOLDS: FAILS, FAILS: HOLDS}.get(v.status, INCONCLUSIVE)
    return Verdict(status, f"{what}: {v.reason}")


def _unresolvable(*ests: Estimate) -> str:
    """Why no verdict can be given ('' if one can): a missing cell or no standard error."""
    if any(not math.isfinite(e.mean) for e in ests):
        return "missing runs"
    if any(not math.isfinite(e.se) for e in ests):
        return "one seed and no pooled seed spread: cannot be resolved"
    return ""


def _beyond(t: float, se: float, n: int, desc: str, what: str, fails_means: str = "") -> Verdict:
    """The three-way rule every difference test shares: holds when ``t`` > Z ``se``, does not
    hold when ``t`` < -Z ``se``, inconclusive in between (with the seeds that would resolve it).
    ``what`` names t in the reason (e.g. 'D - 3 R = 0.0223')."""
    if t > Z * se:
        return Verdict(HOLDS, f"{desc}: {what} > {Z:g} SE ({se:.4f})")
    if t < -Z * se:
        return Verdict(FAILS, f"{desc}: {what} < -{Z:g} SE ({se:.4f}){fails_means}")
    return Verdict(INCONCLUSIVE, f"{desc}: {what} within {Z:g} SE ({se:.4f})" + seeds_to_resolve(t, se, n))


def _two_cells(degraded, robust, names, noise) -> tuple[Estimate, Estimate, str, str]:
    """(D, R, the description, why no verdict ('' if one can be given)) of two independent
    cells' per-seed gaps; ``noise``: one :class:`Noise` or a (degraded's, robust's) pair."""
    nd, nr = _pair(noise)
    d, r = estimate(degraded, nd), estimate(robust, nr)
    return d, r, f"{names[0]} gap {d} vs {names[1]} {r}", _unresolvable(d, r)


def _pair(noise) -> tuple[Noise, Noise]:
    """One Noise for both cells, or a (degraded's, robust's) pair."""
    return tuple(noise) if isinstance(noise, tuple) else (noise, noise)


def much_larger_gap(degraded: Sequence[float], robust: Sequence[float],
                    names: tuple[str, str] = ("AdamW", "Muon"), noise=NO_NOISE) -> Verdict:
    """Claim 'the gap of ``names[0]`` is much larger than that of ``names[1]``' (per-seed gaps).

    D, R = the two cells' mean gaps (independent runs), k = MUCH_LARGER = 3:
    holds: D - k R > Z SE(D - k R) (at least 3x, resolved); does not hold: D - k R < -Z SE
    (resolved below 3x); otherwise inconclusive. SE(D - k R) = sqrt(SE_D^2 + k^2 SE_R^2).
    The reason also gives D - R with its SE and Fieller's interval for D / R. ``noise``: one
    :class:`Noise` or a pair, each cell's own pooled spread.
    """
    d, r, desc, why = _two_cells(degraded, robust, names, noise)
    if why:
        return Verdict(INCONCLUSIVE, f"{desc}: {why}")
    k = MUCH_LARGER
    t, se = d.mean - k * r.mean, math.hypot(d.se, k * r.se)
    diff = difference(d, r)
    lo, hi = fieller(d.mean, r.mean, d.se ** 2, r.se ** 2)
    desc += (f"; difference {diff.mean:.4f} ± {diff.se:.4f} SE; ratio {d.mean / r.mean if r.mean else math.inf:.1f}x, "
             f"{Z:g}-SE interval {fmt_interval(lo, hi)}")
    return _beyond(t, se, min(d.n, r.n), desc, f"D - {k:g} R = {t:.4f}", f", less than {k:g}x")


def larger_gap(degraded: Sequence[float], robust: Sequence[float],
               names: tuple[str, str] = ("AdamW", "Muon"), noise=NO_NOISE) -> Verdict:
    """The weaker reading of 'degrades more': the gap of ``names[0]`` exceeds that of ``names[1]``.

    D - R with SE(D - R) = sqrt(SE_D^2 + SE_R^2): holds beyond Z SE, does not hold below -Z SE,
    inconclusive otherwise. :func:`much_larger_gap` is the stronger (3x) reading.
    """
    d, r, desc, why = _two_cells(degraded, robust, names, noise)
    if why:
        return Verdict(INCONCLUSIVE, f"{desc}: {why}")
    diff = difference(d, r)
    return _beyond(diff.mean, diff.se, diff.n, desc,
                   f"difference D - R = {diff.mean:.4f} ({diff.mean / diff.se:.1f} SE)")


def ef_recovers(sync: Sequence[float], async_: Sequence[float], ef: Sequence[float],
                name: str, low: float = 0.5, by: str = "EF", noise: Noise = NO_NOISE) -> tuple[Verdict, float]:
    """Claim 'EF recovers at least ``low`` of the gap' for one optimizer; returns (verdict, fraction).

    ``ef`` may be any mitigation's runs; ``by`` names it in the reason. Per seed
    g_s = L_async - L_sync and h_s = L_ef - L_sync; fraction = 1 - mean(h) / mean(g).
    fraction >= low  <=>  c = (1 - low) g - h >= 0, tested per seed: holds when mean(c) >
    Z SE(c), does not hold when mean(c) < -Z SE(c), inconclusive otherwise and whenever the
    gap g itself is not resolved (mean(g) <= Z SE(g): a fraction of noise is noise). With
    fewer than 3 seeds SE(c) borrows the pooled SD as sqrt((1-low)^2 + 1) sd_pool / sqrt(n)
    (g and h share the sync run, so this overstates the noise: conservative).
    """
    rows = [(a - s, e - s) for s, a, e in zip(sync, async_, ef)
            if all(v is not None and math.isfinite(v) for v in (s, a, e))]
    g = estimate([x for x, _ in rows], noise)
    h = estimate([y for _, y in rows], noise)
    c = estimate([(1 - low) * x - y for x, y in rows], Noise(noise.sd * math.hypot(1 - low, 1), noise.dof, noise.groups))
    why = _unresolvable(g, h, c)
    if why:
        return Verdict(INCONCLUSIVE, f"{name}: {why}"), float("nan")
    frac = 1 - h.mean / g.mean if g.mean else float("nan")
    cov = 0.0
    if len(rows) >= 3 and not g.borrowed:
        cov = statistics.covariance([x for x, _ in rows], [y for _, y in rows]) / len(rows)
    lo, hi = fieller(h.mean, g.mean, h.se ** 2, g.se ** 2, cov)
    desc = (f"{name}: gap {g}, {by} recovers {frac:.0%} ({Z:g}-SE interval "
            f"{fmt_interval(1 - hi, 1 - lo, pct=True)}), n={len(rows)}")
    if not g.resolved_positive:
        return Verdict(INCONCLUSIVE, desc + f"; the gap is within {Z:g} SE of 0"), frac
    return _beyond(c.mean, c.se, c.n, desc, f"(1-{low:g}) g - h = {c.mean:.4f}"), frac


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
                     noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'higher momentum shrinks the gap' on (momentum, per-seed gaps) points.

    D = gap(max momentum) - gap(min momentum) (independent cells). holds: D < -Z SE(D) and
    Spearman(momentum, mean gap) <= -0.8; does not hold: D > Z SE(D) (the gap grew,
    resolved); inconclusive otherwise.
    """
    pts = sorted((x, estimate(g, noise)) for x, g in zip(xs, gaps))
    pts = [(x, e) for x, e in pts if math.isfinite(e.mean)]
    if len(pts) < 3:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 3 momenta measured")
    rho = spearman([p[0] for p in pts], [p[1].mean for p in pts])
    d = difference(pts[-1][1], pts[0][1])
    desc = (f"{name}: Spearman {rho:+.2f}, gap {pts[0][1]} at momentum {pts[0][0]} -> "
            f"{pts[-1][1]} at {pts[-1][0]}")
    why = _unresolvable(d)
    if why:
        return Verdict(INCONCLUSIVE, f"{desc}: {why}")
    desc += f"; change {d.mean:+.4f} ± {d.se:.4f} SE"
    if d.mean < -Z * d.se and rho <= -0.8:
        return Verdict(HOLDS, desc + f": shrinks beyond {Z:g} SE, monotone")
    if d.mean > Z * d.se:
        return Verdict(FAILS, desc + f": grows beyond {Z:g} SE")
    return Verdict(INCONCLUSIVE, desc + f": not resolved (|change| <= {Z:g} SE or not monotone)")


def no_growth(horizons: Sequence[float], gaps: Sequence[Sequence[float]], name: str,
              noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'the gap does not grow with the horizon': the longest horizon against the shortest.

    ``gaps[i]``: per-seed gaps at ``horizons[i]``. D = gap(longest) - gap(shortest)
    (independent cells), g0 = gap(shortest). does not hold: D > Z SE(D) (resolved growth);
    holds: D + Z SE(D) <= GROWTH_TOL g0 (any growth is resolved to be under half the first
    gap: an equivalence test); inconclusive otherwise.
    """
    if len(horizons) != len(gaps):
        raise ValueError(f"gaps: one list per horizon expected, got {len(gaps)} for {len(horizons)} horizons")
    pts = sorted((h, estimate(g, noise)) for h, g in zip(horizons, gaps))
    pts = [(h, e) for h, e in pts if math.isfinite(e.mean)]
    if len(pts) < 2:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 2 horizons measured")
    (h0, g0), (h1, g1) = pts[0], pts[-1]
    d = difference(g1, g0)
    desc = f"{name}: gap " + " -> ".join(f"{e} at {h}" for h, e in pts) + " steps"
    why = _unresolvable(d)
    if why:
        return Verdict(INCONCLUSIVE, f"{desc}: {why}")
    desc += f"; growth {d.mean:+.4f} ± {d.se:.4f} SE"
    if d.mean > Z * d.se:
        return Verdict(FAILS, desc + f": grows beyond {Z:g} SE")
    if d.mean + Z * d.se <= GROWTH_TOL * g0.mean:
        return Verdict(HOLDS, desc + f": growth + {Z:g} SE <= {GROWTH_TOL:g} x the first gap")
    room = GROWTH_TOL * g0.mean - d.mean
    more = seeds_to_resolve(room, d.se, d.n) if room > 0 else "; the growth estimate already exceeds the tolerance"
    return Verdict(INCONCLUSIVE, desc + f": not resolved (growth + {Z:g} SE > {GROWTH_TOL:g} x the first gap)" + more)


def lower_is_better(better: Sequence[float], worse: Sequence[float], what: str,
                    noise: Noise = NO_NOISE) -> Verdict:
    """Claim 'better < worse' on paired runs (same seeds): D = mean_s (worse_s - better_s).

    holds: D > Z SE(D); does not hold: D < -Z SE(D); else inconclusive.
    """
    d = paired_estimate(better, worse, noise)
    why = _unresolvable(d)
    if why:
        return Verdict(INCONCLUSIVE, f"{what}: {why}")
    return _beyond(d.mean, d.se, d.n, f"{what}: {fmt(better)} vs {fmt(worse)}", f"paired difference {d}")


#: verdicts about a reading of the paper's delayed bound (docs/design.md §5)
CANNOT_BE_A_BOUND, NOT_A_BOUND_ALONE = "cannot be a bound (units)", "not a bound by itself"


def reading_verdict(reading: str, *, scale_invariant: bool, implied: bool, checks: int,
                    violated: Sequence[str], alone: bool = False) -> Verdict:
    """Verdict on one reading of the paper's delayed bound.

    not a bound by itself: ``alone`` (the noise term without the drift and the transient);
    cannot be a bound (units): not invariant under f -> c f;
    holds: proved implied by the package's derived lemma (theory.implications) and violated in
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

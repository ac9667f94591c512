"""Qualitative claims of the paper, judged on measured numbers: holds / does not hold / inconclusive.

All comparisons are of final validation losses of runs that share data order and seed
(paired), in the run's own units. A difference counts only beyond a margin:

    margin = max(RESOLUTION, 2 * std_seeds(paired gap))     (std only with >= 2 seeds)

``RESOLUTION = 0.005`` nats is this package's choice (about the seed-to-seed spread of a
final loss at the CPU scale), stated in the report. Thresholds per claim are in each
function's docstring; a profile whose verdicts are not meaningful (micro) gets
"inconclusive: micro profile" whatever the numbers say.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

RESOLUTION = 0.005
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


def margin(*samples: Sequence[float]) -> float:
    """max(RESOLUTION, 2 * the largest seed spread among ``samples``)."""
    s = [spread(x) for x in samples]
    s = [v for v in s if math.isfinite(v)]
    return max([RESOLUTION] + [2 * v for v in s])


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


def much_larger_gap(degraded: Sequence[float], robust: Sequence[float],
                    names: tuple[str, str] = ("AdamW", "Muon")) -> Verdict:
    """Claim 'the gap of ``names[0]`` is much larger than that of ``names[1]``'.

    holds: mean(deg) - mean(rob) > margin and mean(deg) >= 3 * max(mean(rob), margin);
    does not hold: mean(deg) - mean(rob) <= margin and mean(deg) < 3 * max(mean(rob), RESOLUTION)
    (not larger, and not even 3x the robust gap: seed noise alone cannot explain that);
    otherwise inconclusive (larger but not 3x, or too noisy to tell).
    """
    d, r, m = mean(degraded), mean(robust), margin(degraded, robust)
    if not (math.isfinite(d) and math.isfinite(r)):
        return Verdict(INCONCLUSIVE, "missing runs")
    desc = f"{names[0]} gap {fmt(degraded)} vs {names[1]} {fmt(robust)}, margin {m:.3f}"
    if d - r > m and d >= 3 * max(r, m):
        return Verdict(HOLDS, desc + f": {d / max(r, m):.1f}x")
    if d - r <= m and d < 3 * max(r, RESOLUTION):
        return Verdict(FAILS, desc + ": not larger beyond the margin")
    if d - r <= m:
        return Verdict(INCONCLUSIVE, desc + ": the difference is inside the seed spread")
    return Verdict(INCONCLUSIVE, desc + ": larger, but less than 3x")


def ef_recovers(sync: Sequence[float], async_: Sequence[float], ef: Sequence[float],
                name: str, low: float = 0.5, by: str = "EF") -> tuple[Verdict, float]:
    """Claim 'EF recovers at least ``low`` of the gap' for one optimizer; returns (verdict, fraction).

    ``ef`` may be any mitigation's runs; ``by`` names it in the reason.

    fraction = (L_async - L_ef) / (L_async - L_sync) on seed means. Inconclusive when the
    gap is within the margin (a fraction of noise is noise); holds if fraction >= low;
    does not hold if fraction < low / 2; inconclusive in between.
    """
    s, a, e = mean(sync), mean(async_), mean(ef)
    gaps = [x - y for x, y in zip(async_, sync)]
    m = margin(gaps, [x - y for x, y in zip(ef, sync)])
    if not all(math.isfinite(v) for v in (s, a, e)):
        return Verdict(INCONCLUSIVE, f"{name}: missing runs"), float("nan")
    gap = a - s
    frac = (a - e) / gap if gap != 0 else float("nan")
    desc = f"{name}: gap {fmt(gaps)}, {by} recovers {frac:.0%}" if math.isfinite(frac) else f"{name}: gap 0"
    if gap <= m:
        return Verdict(INCONCLUSIVE, desc + f"; gap within the margin {m:.3f}"), frac
    if frac >= low:
        return Verdict(HOLDS, desc), frac
    if frac < low / 2:
        return Verdict(FAILS, desc), frac
    return Verdict(INCONCLUSIVE, desc + f" (between {low / 2:.0%} and {low:.0%})"), frac


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


def gap_shrinks_with(xs: Sequence[float], gaps: Sequence[float], name: str) -> Verdict:
    """Claim 'higher momentum shrinks the gap' on points (momentum, gap).

    holds: Spearman(momentum, gap) <= -0.8 and gap(max momentum) < gap(min momentum) - margin;
    does not hold: Spearman >= 0 or gap(max) > gap(min) + margin; else inconclusive.
    """
    pts = sorted((x, g) for x, g in zip(xs, gaps) if g is not None and math.isfinite(g))
    if len(pts) < 3:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 3 momenta measured")
    rho = spearman([p[0] for p in pts], [p[1] for p in pts])
    lo, hi = pts[0][1], pts[-1][1]
    desc = (f"{name}: Spearman {rho:+.2f}, gap {lo:.3f} at momentum {pts[0][0]} -> "
            f"{hi:.3f} at {pts[-1][0]}")
    if rho <= -0.8 and hi < lo - RESOLUTION:
        return Verdict(HOLDS, desc)
    if rho >= 0 or hi > lo + RESOLUTION:
        return Verdict(FAILS, desc)
    return Verdict(INCONCLUSIVE, desc)


def no_growth(horizons: Sequence[float], gaps: Sequence[float], name: str) -> Verdict:
    """Claim 'the gap does not grow with the horizon': compare the longest with the shortest.

    holds: gap(longest) <= gap(shortest) + margin; does not hold: > + 2 margin; else inconclusive.
    """
    pts = sorted((h, g) for h, g in zip(horizons, gaps) if g is not None and math.isfinite(g))
    if len(pts) < 2:
        return Verdict(INCONCLUSIVE, f"{name}: fewer than 2 horizons measured")
    (h0, g0), (h1, g1) = pts[0], pts[-1]
    desc = f"{name}: gap {g0:.3f} at {h0} steps -> {g1:.3f} at {h1}"
    if g1 <= g0 + RESOLUTION:
        return Verdict(HOLDS, desc)
    if g1 > g0 + 2 * RESOLUTION:
        return Verdict(FAILS, desc)
    return Verdict(INCONCLUSIVE, desc)


def lower_is_better(better: Sequence[float], worse: Sequence[float], what: str) -> Verdict:
    """Claim 'mean(better) < mean(worse)' beyond the margin (final losses or gaps).

    holds: mean(worse) - mean(better) > margin; does not hold: < -margin; else inconclusive.
    """
    b, w, m = mean(better), mean(worse), margin(better, worse)
    if not (math.isfinite(b) and math.isfinite(w)):
        return Verdict(INCONCLUSIVE, f"{what}: missing runs")
    desc = f"{what}: {fmt(better)} vs {fmt(worse)}, margin {m:.3f}"
    if w - b > m:
        return Verdict(HOLDS, desc)
    if w - b < -m:
        return Verdict(FAILS, desc)
    return Verdict(INCONCLUSIVE, desc + ": within the margin")


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

"""Seeds where the family needs them (issue 37, item 9): ``python -m paper_figs.seeds_needed``.

For each confirmatory claim: the seeds per cell that 80 % power needs at the measured effect,
and the CPU time that costs (the kept records' ``wall_s``). The claim's target is the decision
its measured effects imply (the engine at vanishing noise, ``error_rates``); its level is the
Bonferroni level ALPHA / k of the family (the strictest Holm ever asks: a sufficient n).

Power of one statistic at n seeds per cell, with its measured estimate's distance delta to the
decision boundary (on the target's side) and SE_n = SE (n_now / n)^(1/2):

    power(n) = P(t_nu > t_{1 - level/2, nu} - delta / SE_n)

with nu today's dof at today's n (a borrowed SD's pool dof, Welch's for a combination) and
n - 1 once a cell has its own SD (n >= 3): ``paper_figs.statistics.power``, the one power
computation ``seed_stats`` uses too.

A claim of parts (at least k of m hold) holds when at least k parts hold at level / (m - k + 1)
and fails when at least m - k + 1 parts fail at level / k (docs/protocol.md §3); its power is
the probability of that many successes among independent parts (Poisson binomial). 'not'
swaps the target. Cells are brought to n seeds each (a cell with more keeps them), so the extra
runs and CPU time are summed over the claim's cells.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys

import numpy as np

from .report import confirmatory
from . import error_rates
from .statistics.protocol import ALPHA, FAMILY
from .statistics.power import leaf_power as power_of
from .statistics.t_tests import FAILS, HOLDS, t_quantile

TARGET_POWER = 0.8
MAX_SEEDS = 200


def leaf_power(ev, n: int, level: float, target: str) -> float:
    """Probability that one statistic decides ``target`` at ``n`` seeds per cell
    (``paper_figs.statistics.power.leaf_power``: today's dof at today's n, own SDs from 3 seeds on)."""
    if not (math.isfinite(ev.est) and math.isfinite(ev.lo)) or ev.n < 1:
        return 0.0
    se_now = (ev.hi - ev.lo) / (2 * t_quantile(0.975, ev.dof))
    if ev.side == 0:   # equivalence: inside +-margin to hold, beyond it to fail
        m, e = abs(ev.boundary), abs(ev.est)
        delta = (m - e) if target == HOLDS else (e - m)
    else:
        delta = ev.side * (ev.est - ev.boundary)
        delta = delta if target == HOLDS else -delta
    return power_of(delta, se_now, ev.n, n, ev.dof, level)


def at_least(probs: list[float], k: int) -> float:
    """P(at least k successes) of independent events with ``probs`` (Poisson binomial)."""
    dist = np.zeros(len(probs) + 1)
    dist[0] = 1.0
    for q in probs:
        dist[1:] = dist[1:] * (1 - q) + dist[:-1] * q
        dist[0] *= 1 - q
    return float(dist[k:].sum())


def power(ev, n: int, level: float, target: str) -> float:
    """Probability that ``ev`` (a statistic or a claim of parts) decides ``target`` at ``n``."""
    if ev.negated:
        target = FAILS if target == HOLDS else HOLDS
    if not ev.parts:
        return leaf_power(ev, n, level, target)
    m, k = len(ev.parts), ev.k or len(ev.parts)
    need, split = (k, m - k + 1) if target == HOLDS else (m - k + 1, k)
    probs = [power(v.test, n, level / split, target) if v.test else 0.0 for v in ev.parts]
    return at_least(probs, need)


def seeds_for(ev, target: str, level: float, start: int) -> int | None:
    """The smallest n >= ``start`` with power >= TARGET_POWER (None: not within MAX_SEEDS)."""
    for n in range(max(start, 1), MAX_SEEDS + 1):
        if power(ev, n, level, target) >= TARGET_POWER:
            return n
    return None


def cost(d, keys, n: int) -> tuple[int, float]:
    """(extra runs, CPU seconds) to bring every cell of ``keys`` to n seeds."""
    cells: dict = {}
    for k in keys:
        s, rec = d.runs[k]
        cells.setdefault(error_rates._setting(s), []).append(float(rec.get("wall_s") or float("nan")))
    runs = sum(max(0, n - len(w)) for w in cells.values())
    secs = sum(max(0, n - len(w)) * statistics.fmean(w) for w in cells.values())
    return runs, secs


def smallest_n(ev) -> int:
    if not ev.parts:
        return ev.n
    return min((smallest_n(v.test) for v in ev.parts if v.test), default=0)


def rows(d) -> list[dict]:
    """Per claim: the target, its power now, the seeds per cell for 80 %, the extra runs and CPU time."""
    ctx = error_rates._context(d.profile, d.runs, d.keys, {k: float(rec["result"]["final_val_loss"])
                                                           for k, (_, rec) in d.runs.items()})
    from .figures.common import replicate_gaps
    from .statistics import machine_noise
    from .statistics.seed_stats import noise_model
    ctx.noise = noise_model(replicate_gaps(ctx, d.grids), machine=machine_noise.load())
    raw = confirmatory.judge_family(ctx)
    true = error_rates.replicate(d, "measured", np.random.default_rng(1), scale=1e-4)
    level = ALPHA / len(FAMILY)
    out = []
    for c in FAMILY:
        v = raw.get(c.id)
        target = true.get(c.id)
        row = {"claim": c.id, "target": target, "n_now": None, "power_now": None, "n": None, "runs": None,
               "cpu_h": None}
        if v is None or v.test is None or target not in (HOLDS, FAILS):
            out.append(row)
            continue
        n_now = max(smallest_n(v.test), 1)
        n = seeds_for(v.test, target, level, n_now)
        row.update(n_now=n_now, power_now=power(v.test, n_now, level, target), n=n)
        if n is not None:
            runs, secs = cost(d, v.test.keys, n)
            row.update(runs=runs, cpu_h=secs / 3600)
        out.append(row)
    return out


def table(rs: list[dict]) -> list[str]:
    L = [f"Seeds per cell for {TARGET_POWER:.0%} power at the measured effect, at the Bonferroni level "
         f"{ALPHA:g} / {len(FAMILY)} (CPU time from the kept records' wall_s, one run per core):", "",
         "| claim | measured effects imply | seeds now (smallest cell) | power now | seeds per cell for 80 % "
         "| extra runs | CPU hours |", "|---|---|---|---|---|---|---|"]
    for r in rs:
        if r["n_now"] is None:
            L.append(f"| {r['claim']} | {r['target'] or '-'} (no direction to power) | - | - | - | - | - |")
            continue
        n = r["n"] if r["n"] is not None else f"> {MAX_SEEDS}"
        runs = "-" if r["runs"] is None else r["runs"]
        hours = "-" if r["cpu_h"] is None else f"{r['cpu_h']:.1f}"
        L.append(f"| {r['claim']} | {r['target']} | {r['n_now']} | {r['power_now']:.2f} | {n} | {runs} | {hours} |")
    return L


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.seeds_needed", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="full", help="the design's profile (its runs must all be kept)")
    a = ap.parse_args(argv)
    print("\n".join(table(rows(error_rates.design(a.profile)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Seeds where the family needs them (issue 37, item 9): ``python -m paper_figs.seeds_needed``.

For each confirmatory claim: the seeds per cell that 80 % power needs at the measured effect,
and the CPU time that costs (the kept records' ``wall_s``). The claim's target is the decision
its measured effects imply (the engine at vanishing noise, ``error_rates``); its level is
``LEVEL``, the Bonferroni level of the family at a later look's share of alpha (docs/plan.md §3;
the strictest Holm ever asks there: a sufficient n). A cell is judged on its own spread, so a
count is at least 3 seeds; the pooled SDs only size the cells that have no spread yet.

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
from .statistics.protocol import ALPHA, FAMILY, OWN_SD_MIN_N
from .statistics.sequential import SPENDING
from .statistics.power import leaf_power as power_of
from .statistics.t_tests import FAILS, HOLDS, t_quantile

TARGET_POWER = 0.8
MAX_SEEDS = 200
#: the level a claim must reach: Holm's strictest (Bonferroni over the family) at a later look's
#: share of alpha (docs/plan.md §3): a count at this level suffices at any rank
LEVEL = ALPHA * min(SPENDING[1:]) / len(FAMILY)


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
    """The smallest n >= ``start`` with power >= TARGET_POWER (None: not within MAX_SEEDS); at
    least OWN_SD_MIN_N, since a confirmatory cell is judged on its own spread only."""
    for n in range(max(start, OWN_SD_MIN_N), MAX_SEEDS + 1):
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
    raw = confirmatory.judge_family(ctx, own_only=False)   # the pools give the unseeded cells an SD to plan by
    true = error_rates.replicate(d, "measured", np.random.default_rng(1), scale=1e-4, own_only=False)
    level = LEVEL
    out = []
    for c in FAMILY:
        v = raw.get(c.id)
        target = true.get(c.id)
        row = {"claim": c.id, "target": target, "n_now": None, "power_now": None, "n": None, "runs": None,
               "cpu_h": None, "max_n": MAX_SEEDS, "power_at_n": None}
        if v is None or v.test is None or target not in (HOLDS, FAILS):
            out.append(row)
            continue
        n_now = max(smallest_n(v.test), 1)
        n = seeds_for(v.test, target, level, n_now)
        now = power(v.test, n_now, level, target) if n_now >= OWN_SD_MIN_N else 0.0   # fewer seeds: no own SD
        row.update(n_now=n_now, power_now=now, n=n, power_at_n=power(v.test, n, level, target) if n else None)
        if n is not None:
            runs, secs = cost(d, v.test.keys, n)
            row.update(runs=runs, cpu_h=secs / 3600)
        out.append(row)
    return out


# ---- the power against the simulation (issue 47 item 5) ---------------------------------------

def with_seeds(p, claim: str, n: int):
    """``p`` with the cells of ``claim`` at ``n`` seeds (a cell with more keeps them), through the
    knobs the plan uses (docs/plan.md §2); None for a claim whose cells no knob sizes alone."""
    from .records.profiles import with_grid
    from .figures import fig2_table2, fig5, fig6, moe
    from .figures.grids import shared
    sh = shared(p)
    first = len(sh.seeds_main)
    extra = dict(sh.headline_extra)
    table1 = {"C2": ("muon", "mars"), "C4": ("muon", "adan")}
    if claim == "C1":
        return with_grid(p, "grids", seeds_main=tuple(range(max(n, first))))
    if claim in table1:
        for o in table1[claim]:
            extra[o] = tuple(sorted(set(extra.get(o, ())) | set(range(first, n))))
        return with_grid(p, "grids", headline_extra=tuple(extra.items()))
    if claim == "C7":
        have = dict(fig2_table2.spec(p).main_extra)
        return with_grid(p, "fig2_table2", main_extra=tuple(
            (o, tuple(sorted(set(have.get(o, ())) | set(range(1, n))))) for o in ("adan", "nadam")))
    if claim in ("C10", "C11"):
        return with_grid(p, "fig5", horizon_seeds=tuple(range(max(n, len(fig5.spec(p).horizon_seeds)))))
    if claim == "C12":
        return with_grid(p, "fig6", extra_seeds=tuple(sorted(set(fig6.spec(p).extra_seeds) | set(range(1, n)))))
    if claim in ("C14", "C15"):
        return with_grid(p, "moe", moe_seeds=tuple(range(max(n, len(moe.spec(p).moe_seeds)))))
    return None


def simulated_power(d, claim: str, target: str, reps: int, seed: int = 0, level: float = LEVEL) -> float:
    """The fraction of ``reps`` replicates of the design ``d`` (each run at its cell's measured
    mean, the simulation's noise: ``error_rates.draw``) in which ``claim``'s line, on its cells' own
    spreads, decides ``target`` at ``level`` (the decision seeds_needed powers: one line, Bonferroni's
    level; Holm's other lines and the looks left out)."""
    from .figures import CATALOG
    from .statistics import machine_noise
    from .statistics.protocol import CLAIMS_BY_ID
    from .statistics.seed_stats import noise_model
    from .statistics.t_tests import decide
    fig = CLAIMS_BY_ID[claim].figure
    rng, noise, hits = np.random.default_rng(seed), noise_model([], machine=machine_noise.load()), 0
    for _ in range(reps):
        ctx = error_rates._context(d.profile, d.runs, d.keys, error_rates.draw(d, "measured", rng))
        ctx.noise = noise
        v = next((v for v in CATALOG[fig].claims(ctx).values() if v.claim == claim), None)
        hits += v is not None and v.test is not None and decide(v.test.p_eff, level) == target
    return hits / reps


#: the knobs :func:`with_seeds` sets per claim: claims that share none are simulated on one design
KNOBS = {"C1": {"seeds_main"}, "C2": {"muon", "mars"}, "C4": {"muon", "adan"}, "C7": {"main_extra"},
         "C10": {"horizon_seeds"}, "C11": {"horizon_seeds"}, "C12": {"extra_seeds"}, "C14": {"moe_seeds"},
         "C15": {"moe_seeds"}}


def agreement(d, claims=None, reps: int = 30, seed: int = 0, max_n: int = MAX_SEEDS) -> list[dict]:
    """Per claim with a seed count (``rows``): the power seeds_needed predicts at its count n and
    the simulated rate of deciding its target at n seeds per cell (the design through ``with_seeds``,
    its new runs from stand-in records), with the rate's binomial SE at the predicted power. Claims
    whose knobs differ share a design; C1 (Figure 3's seeds are every headline cell's) has its own."""
    todo = [r for r in rows(d) if r["n"] is not None and r["n"] <= max_n and r["claim"] in KNOBS
            and (not claims or r["claim"] in claims)]
    groups: list[list[dict]] = []
    for r in todo:
        g = next((g for g in groups if r["claim"] != "C1" and all(x["claim"] != "C1" and
                                                                  not KNOBS[x["claim"]] & KNOBS[r["claim"]] for x in g)),
                 None)
        (g.append(r) if g is not None else groups.append([r]))
    out = []
    for g in groups:
        q = d.profile
        for r in g:
            q = with_seeds(q, r["claim"], r["n"])
        dn = error_rates.design(q, stand_ins=True)
        for r in g:
            sim = simulated_power(dn, r["claim"], r["target"], reps, seed)
            out.append({**r, "predicted": r["power_at_n"], "simulated": sim, "reps": reps,
                        "se": math.sqrt(max(r["power_at_n"] * (1 - r["power_at_n"]), 1e-12) / reps)})
    return sorted(out, key=lambda r: int(r["claim"][1:]))


def agreement_table(rs: list[dict]) -> list[str]:
    L = ["| claim | target | seeds per cell | power predicted | simulated (replicates) | difference / binomial SE |",
         "|---|---|---|---|---|---|"]
    for r in rs:
        L.append(f"| {r['claim']} | {r['target']} | {r['n']} | {r['predicted']:.2f} | {r['simulated']:.2f} "
                 f"({r['reps']}) | {(r['simulated'] - r['predicted']) / r['se']:+.1f} |")
    return L


def table(rs: list[dict]) -> list[str]:
    L = [f"Seeds per cell for {TARGET_POWER:.0%} power at the measured effect, at the level {LEVEL:.2g} "
         f"(alpha {ALPHA:g} x a later look's share {min(SPENDING[1:]):g} / {len(FAMILY)} claims; CPU time from the "
         f"kept records' wall_s, one run per core); every cell judged on its own spread (>= {OWN_SD_MIN_N} "
         "seeds):", "",
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
    ap.add_argument("--check", type=int, default=0, metavar="REPS",
                    help="also simulate every claim at its seed count (REPS replicates; new runs from stand-ins) and "
                         "compare the simulated rate of deciding with the predicted power")
    ap.add_argument("--max-n", type=int, default=MAX_SEEDS, help="--check: skip claims needing more seeds per cell")
    a = ap.parse_args(argv)
    d = error_rates.design(a.profile)
    print("\n".join(table(rows(d))))
    if a.check:
        print()
        print("\n".join(agreement_table(agreement(d, reps=a.check, max_n=a.max_n))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

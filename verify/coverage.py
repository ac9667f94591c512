"""Coverage of the one-sided confidence bounds of verify.check on skewed data.

``coverage(dist, R, alpha)`` draws ``reps`` samples of size R from a distribution with a known
mean and returns the fraction of samples whose bound covers the mean:

* t-LCB / t-UCB: verify.check.one_sided_t (used for the measured quantity Q);
* EB-LCB / EB-UCB: verify.check.empirical_bernstein (used for r_w, r_avg in [0, cap]).

Nominal coverage is 1 - alpha. ``python -m verify.coverage`` prints the table of
docs/design.md §6, step 3 (lognormal sigma = 1 and 2, exponential, and bounded skewed laws).
"""
from __future__ import annotations

import argparse

import numpy as np

from .check import empirical_bernstein, one_sided_t

#: name -> (draw(rng, shape), true mean, cap or None (unbounded))
DISTS = {
    "normal": (lambda g, s: g.normal(1.0, 1.0, s), 1.0, None),
    "exponential": (lambda g, s: g.exponential(1.0, s), 1.0, None),
    "lognormal(1)": (lambda g, s: g.lognormal(0.0, 1.0, s), float(np.exp(0.5)), None),
    "lognormal(2)": (lambda g, s: g.lognormal(0.0, 2.0, s), float(np.exp(2.0)), None),
    "beta(0.5,5)": (lambda g, s: g.beta(0.5, 5.0, s), 0.5 / 5.5, 1.0),
    "bernoulli(0.05)": (lambda g, s: (g.random(s) < 0.05).astype(float), 0.05, 1.0),
}


def coverage(dist: str, R: int, alpha: float = 0.01, reps: int = 4000, seed: int = 0) -> dict:
    """{t_lcb, t_ucb[, eb_lcb, eb_ucb]}: fraction of ``reps`` samples covering the mean."""
    if dist not in DISTS:
        raise ValueError(f"dist must be one of {sorted(DISTS)}, got {dist!r}")
    draw, m, cap = DISTS[dist]
    x = draw(np.random.default_rng(seed), (reps, R))
    _, lo, hi = one_sided_t(x, alpha)
    out = {"dist": dist, "R": R, "nominal": 1 - alpha, "t_lcb": float((lo <= m).mean()),
           "t_ucb": float((hi >= m).mean())}
    if cap is not None:
        _, lo, hi = empirical_bernstein(x, cap, alpha)
        out.update(eb_lcb=float((lo <= m).mean()), eb_ucb=float((hi >= m).mean()))
    return out


def table(Rs=(8, 16, 32, 64, 256), alpha: float = 0.01, reps: int = 4000) -> list[dict]:
    return [coverage(d, R, alpha, reps) for d in DISTS for R in Rs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verify.coverage", description=__doc__,
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--alpha", type=float, default=0.01, help="one-sided level: nominal coverage 1 - alpha")
    ap.add_argument("--reps", type=int, default=4000, help="samples per cell")
    a = ap.parse_args(argv)
    if not 0 < a.alpha < 1 or a.reps < 10:
        ap.error("--alpha must be in (0, 1) and --reps >= 10")
    print(f"| law | R | t-LCB | t-UCB | EB-LCB | EB-UCB |  (nominal {1 - a.alpha:.2f})\n|---|---|---|---|---|---|")
    for r in table(alpha=a.alpha, reps=a.reps):
        eb = (f"{r['eb_lcb']:.3f} | {r['eb_ucb']:.3f}" if "eb_lcb" in r else "n/a | n/a")
        print(f"| {r['dist']} | {r['R']} | {r['t_lcb']:.3f} | {r['t_ucb']:.3f} | {eb} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

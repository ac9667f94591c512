"""Limits and exact comparisons between the bounds.

* ``delay_penalty()``: derived delayed minus derived sync, for the lemma
  (L eta) and the theorem (2 L eta); both -> 0 as eta -> 0.
* the eta -> 0, r = 0 and mu = 1 limit identities and the exact corners that ``theory.check()``
  requires are checks, not results: theory.checks.limit_identities (`limit_checks`,
  `corner_checks`).
* ``paper_vs_derived()``: the paper's noise term ALONE, P = sqrt(2 mu rho^2 sigma^2
  + 8 L^2 eta^2), against the derived stationary delayed momentum error
  D = sqrt(mu) rho sigma + L eta/mu. A labelled comparison only: P is not a bound by
  itself (the paper keeps the drift and the transient outside it, readings C1/C2 of
  theory.records.paper_readings, which the derived lemmas imply: theory.results.implications). With
  u = sqrt(mu) rho sigma/(L eta): P^2 - D^2 = (L eta)^2 [u^2 - 2u/mu + 8 - 1/mu^2], so
  P < D exactly when mu <= 1/2 and |u - 1/mu| < sqrt(2/mu^2 - 8).
* ``compare_on_grid()``: the same numerically on a (mu, u) grid.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from ..checks.limit_identities import bound_expr
from ..records.registry import get
from ..records.symbols import L, eta, mu, rho, sigma, t

u = sp.Symbol("u", positive=True)  # sqrt(mu) rho sigma / (L eta): noise-to-drift ratio


def stationary(expr: sp.Expr) -> sp.Expr:
    """The t -> infinity part of a lemma: drop the transient (1-mu)^t rho sigma."""
    return sp.expand(expr).subs((1 - mu) ** t, 0)


def delay_penalty(bounds=None) -> dict[str, sp.Expr]:
    """Derived delayed (at y) minus derived sync, lemma and theorem (``bounds``: name -> expr
    overrides of the registry, as theory.check plants them)."""
    e = lambda n: bound_expr(n, bounds)  # noqa: E731
    return {
        "lemma": sp.simplify(e("derived_delayed_lemma") - e("derived_sync_lemma")),
        "theorem": sp.simplify(e("derived_delayed_theorem") - e("derived_sync_theorem")),
        "theorem_x": sp.simplify(e("derived_delayed_theorem_x") - e("derived_sync_theorem")),
    }


def paper_vs_derived() -> dict[str, sp.Expr]:
    """Exact comparison of the noise term alone P (not a bound by itself) with D (the derived
    stationary delayed error)."""
    P = get("paper_delayed_noise_consistent").expr
    D = stationary(get("derived_delayed_lemma").expr)
    gap_sq = sp.expand((P**2 - D**2) / (L * eta) ** 2)
    gap_u = sp.simplify(gap_sq.subs(rho, u * L * eta / (sp.sqrt(mu) * sigma)))
    roots = sp.solve(sp.Eq(gap_u, 0), u)
    return {"P": P, "D": D, "P2_minus_D2_over_Leta2": gap_u, "roots_u": roots,
            "half_width": sp.sqrt(2 / mu**2 - 8)}


def compare_on_grid(mus=None, us=None) -> dict:
    """P/D on a grid of mu and u = sqrt(mu) rho sigma/(L eta) (L eta = 1).

    Returns the grid, the ratio P/D, the fraction where the derived bound is tighter
    (D <= P), and the smallest P/D (how far the noise term alone falls below the attained
    value; a comparison, not a verdict on the paper).
    """
    mus = np.geomspace(1e-3, 1, 61) if mus is None else np.asarray(mus, float)
    us = np.geomspace(1e-3, 1e3, 61) if us is None else np.asarray(us, float)
    M, U = np.meshgrid(mus, us, indexing="ij")
    P = np.sqrt(2 * U**2 + 8.0)
    D = U + 1.0 / M
    ratio = P / D
    i = np.unravel_index(np.argmin(ratio), ratio.shape)
    return {"mu": mus, "u": us, "ratio": ratio, "frac_derived_tighter": float((D <= P).mean()),
            "min_ratio": float(ratio[i]), "argmin": {"mu": float(M[i]), "u": float(U[i])},
            "max_ratio": float(ratio.max())}

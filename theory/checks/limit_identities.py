"""The limit identities and exact corners that ``theory.check()`` requires of the registered
bounds (``limit_checks``; theory.checks.world runs it on every world, planted ones included):

* eta -> 0: the delay penalty of the lemma and of the theorem vanishes, the delayed lemma tends
  to the sync lemma; r = 0: the EF trajectory bounds equal the sync bounds; mu = 1 at every
  t >= 1 (symbolic t): the lemmas reduce to rho sigma (+ L eta, + L r_w); the derived delayed
  theorem is Kovalev's sync theorem minus L eta. Each is a sympy identity.
* ``corner_checks()``: two corners where the truth is known exactly: t = 0 (E_0 = E||xi_0||_* =
  rho sigma with aligned noise) and K = 1, sigma = 0, mu = 1 (||grad f(x_0)||_* <= sqrt(2 L
  Delta_0), attained by a one-dimensional quadratic).

What the bounds say in these limits (the delay penalty, the paper's noise term against the
derived one) is theory.results.limits, which reads this module.
"""
from __future__ import annotations

import functools

import sympy as sp

from ..records.registry import get
from .step import _nonneg, _nonneg_mu
from ..records.symbols import Delta_0, K, L, eta, mu, r_avg, r_w, rho, sigma, t

t1 = sp.Symbol("t1", integer=True, nonnegative=True)  # t = t1 + 1: every t >= 1
LEMMAS = ("derived_sync_lemma", "derived_delayed_lemma", "derived_delayed_lemma_x", "derived_ef_lemma_trajectory",
          "derived_ef_lemma_worst", "kovalev_sync_lemma")
THEOREMS = ("derived_sync_theorem", "derived_delayed_theorem", "derived_delayed_theorem_x",
            "derived_ef_theorem_trajectory", "derived_ef_theorem_worst", "kovalev_sync_theorem")


def bound_expr(name, bounds=None):
    """The expression of registered bound ``name``, or its override in ``bounds`` (name -> expr)."""
    e = (bounds or {}).get(name)
    return get(name).expr if e is None else e


def _safe(fn) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001  (a bound sympy cannot take the limit of fails the check)
        return False


def inf_over_eta(expr: sp.Expr) -> sp.Expr:
    """inf over eta > 0 of expr: the smallest of its values at the positive critical points and
    its limits at eta -> 0+ and eta -> oo."""
    cands = [sp.limit(expr, eta, 0, "+"), sp.limit(expr, eta, sp.oo)]
    cands += [expr.subs(eta, c) for c in sp.solve(sp.diff(expr, eta), eta) if c.is_positive]
    finite = [c for c in cands if c.is_finite is not False]
    return sp.Min(*finite) if finite else sp.oo


def _at(expr: sp.Expr, point: dict) -> sp.Expr:
    """expr at point, by substitution (a limit only where substitution is undefined)."""
    v = expr.subs(point)
    if v.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
        for s_, x in point.items():
            expr = sp.limit(expr, s_, x, "+")
        return expr
    return v


def corner_checks(bounds=None) -> dict[str, bool]:
    """Corners of the domain where the measured quantity is known exactly, so a bound below it
    is false (True = the bound is at least the truth there, proved in sympy):

    * t = 0: m_0 = g_0 and y_0 = x_0 (r_0 = 0), so E||m_0 - grad f||_* = E||xi_0||_*, which noise of
      constant modulus along the LMO direction makes rho sigma for EVERY mu, L, eta: each lemma at
      t = 0, r_w = 0, eta -> 0 must be >= rho sigma for all mu in (0, 1] (the mu = 1 identities
      below see t >= 1 only, where the transient (1-mu)^t vanishes);
    * K = 1, sigma = 0, mu = 1, r_avg = 0: the theorems bound ||grad f(x_0)||_*, which is at most
      sqrt(2 L Delta_0) (A2: f* <= f(x_0) - s ||g||_* + L s^2/2 at s = ||g||_*/L) with equality for
      f = L x^2/2 on one coordinate; the quantity does not depend on eta, so inf over eta > 0 of
      each theorem must be >= sqrt(2 L Delta_0) (the derived sync theorem attains it: Delta_0/eta
      + L eta/2 at eta = sqrt(2 Delta_0/L))."""
    e = lambda n: bound_expr(n, bounds)  # noqa: E731
    out = {}
    for n in LEMMAS:
        out[f"t=0: {n} >= rho sigma (E||xi_0||_*, every mu)"] = _lemma_t0_ok(e(n))
    for n in THEOREMS:
        out[f"K=1, sigma=0, mu=1: inf over eta of {n} >= sqrt(2 L Delta_0)"] = _theorem_k1_ok(e(n))
    return out


@functools.lru_cache(maxsize=None)
def _lemma_t0_ok(expr) -> bool:
    """A lemma at t = 0, r_w = 0, eta -> 0 is >= rho sigma for all mu in (0, 1] (corner_checks);
    cached on the expression, so a planted world recomputes only the bounds it changes."""
    return _safe(lambda: _nonneg_mu(_at(expr.subs({t: 0, r_w: 0}), {eta: 0}) - rho * sigma))


@functools.lru_cache(maxsize=None)
def _theorem_k1_ok(expr) -> bool:
    """inf over eta of a theorem at K = 1, sigma = 0, mu = 1, r_avg = 0 is >= sqrt(2 L Delta_0)
    (corner_checks); cached on the expression."""
    def gap():
        return sp.radsimp(inf_over_eta(expr.subs({K: 1, sigma: 0, mu: 1, r_avg: 0})) - sp.sqrt(2 * L * Delta_0))
    return _safe(lambda: (lambda g: g == 0 or _nonneg(g))(gap()))


@functools.lru_cache(maxsize=None)
def _is_zero(expr) -> bool:
    """sympy simplifies expr to 0 (cached on the expression)."""
    return sp.simplify(expr) == 0


@functools.lru_cache(maxsize=None)
def _limit_is_zero(expr) -> bool:
    """expr -> 0 as eta -> 0 (cached on the expression)."""
    return sp.limit(expr, eta, 0) == 0


def limit_checks(bounds=None) -> dict[str, bool]:
    """_limit_checks, computed once per set of overrides ``bounds`` (name -> expr)."""
    return dict(_limit_checks(tuple(sorted((bounds or {}).items(), key=lambda kv: kv[0]))))


@functools.lru_cache(maxsize=None)
def _limit_checks(bounds: tuple) -> tuple:
    """Each limit as an exact sympy identity (True = holds), then corner_checks. At mu = 1 (no
    momentum) m_t = g_t for every t >= 1 (checked at symbolic t = t1 + 1, not at t = 1 alone), so
    E||m_t - grad f(x_t)||_* <= rho sigma exactly (A3 + A4: attained by noise of constant modulus
    along the LMO direction); the derived lemmas must reduce to it."""
    bounds = dict(bounds)
    e = lambda n: bound_expr(n, bounds)  # noqa: E731
    sync_l, sync_t = e("derived_sync_lemma"), e("derived_sync_theorem")
    ef_l, ef_t = e("derived_ef_lemma_trajectory"), e("derived_ef_theorem_trajectory")
    dl = e("derived_delayed_lemma")
    return tuple({
        "eta->0: delay penalty of the lemma vanishes": _limit_is_zero(dl - sync_l),
        "eta->0: delay penalty of the theorem vanishes": _limit_is_zero(e("derived_delayed_theorem") - sync_t),
        "eta->0: delayed lemma -> sync lemma": _is_zero(dl.subs(eta, 0) - sync_l.subs(eta, 0)),
        "r=0: EF trajectory lemma == sync lemma": _is_zero(ef_l.subs(r_w, 0) - sync_l),
        "r=0: EF trajectory theorem == sync theorem": _is_zero(ef_t.subs(r_avg, 0) - sync_t),
        "mu=1: sync lemma == rho sigma (every t >= 1), no drift": _is_zero(
            sync_l.subs(t, t1 + 1).subs(mu, 1) - rho * sigma * 1),
        "mu=1: EF trajectory lemma == rho sigma + L r_w (every t >= 1)": _is_zero(
            ef_l.subs(t, t1 + 1).subs(mu, 1) - (rho * sigma + L * r_w)),
        "mu=1: delayed lemma == rho sigma + L eta (every t >= 1)": _is_zero(
            dl.subs(t, t1 + 1).subs(mu, 1) - (rho * sigma + L * eta)),
        "mu=1: Kovalev lemma == rho sigma + L eta (every t >= 1)": _is_zero(
            e("kovalev_sync_lemma").subs(t, t1 + 1).subs(mu, 1) - (rho * sigma + L * eta)),
        "derived delayed theorem == Kovalev sync theorem - L eta": _is_zero(
            e("derived_delayed_theorem") - e("kovalev_sync_theorem") + L * eta),
        **corner_checks(bounds),
    }.items())

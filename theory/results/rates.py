"""Optimised rates, Kovalev's parameter choice rechecked, and the price of the delay.

Theorems (theory.records.package_bounds) have the form, with c(mu) the drift coefficient,
  B(eta, mu) = Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + a L eta + 2 L eta c(mu)
(sync: a = 1/2, c = (1-mu)/mu; delayed: a = 1/2, c = 1/mu; EF worst: a = 9/2, c = (1-mu)/mu).

Leading order (K -> infinity, mu -> 0): B ~ Delta_0/(eta K) + 2 sqrt(mu) rho sigma + 2 L eta/mu,
minimised at eta* = sqrt(Delta_0 mu*/(2 L K)), mu* = sqrt(2 L Delta_0/K)/(rho sigma), with
  B* ~ 4 (2 L Delta_0)^(1/4) (rho sigma)^(1/2) K^(-1/4)
for all three variants: the delay changes only lower-order terms, so the price of the
delay (ratio of optimised bounds) tends to 1 as K grows:
  B*_delayed/B*_sync = 1 + mu*/4 + O(mu*^2),  K_delayed(eps)/K_sync(eps) = 1 + (eps/(4 rho sigma))^2 + ...
EF with a measured r_avg = kappa eta (variant "ef_kappa") costs 1 + kappa mu*/4: its bound beats the
delayed one exactly when kappa < 1, i.e. when consecutive LMO directions differ by less than 1 in norm
on (weighted) average.
"""
from __future__ import annotations

import numpy as np
import sympy as sp
from scipy import optimize

from ..records.bound import DELAYED, EF, SYNC
from ..records.registry import get
from ..records.symbols import Delta_0, K, L, eta, mu, rho, sigma

# variant (or rate key) -> theory.records.registry record name
THEOREMS = {SYNC: "derived_sync_theorem", DELAYED: "derived_delayed_theorem",
            EF: "derived_ef_theorem_worst", "kovalev": "kovalev_sync_theorem",
            "delayed_x": "derived_delayed_theorem_x", "ef_kappa": "derived_ef_theorem_trajectory"}


class _Subst:
    """A theorem with r_avg = kappa * eta substituted (EF with a measured perturbation ratio)."""

    def __init__(self, expr):
        self.expr = expr


def _theorem(variant: str, kappa: float | None = None):
    """The variant's theorem; "ef_kappa" is the EF trajectory theorem with r_avg = kappa eta,
    kappa = r_avg/eta in [0, 2] (kappa = 1 gives the delayed theorem, 2 the EF worst case)."""
    if variant not in THEOREMS:
        raise ValueError(f"variant must be one of {sorted(THEOREMS)}, got {variant!r}")
    b = get(THEOREMS[variant])
    if variant == "ef_kappa":
        if kappa is None or not 0 <= kappa <= 2:
            raise ValueError(f"kappa must be given in [0, 2] for variant 'ef_kappa', got {kappa!r}")
        from ..records.symbols import r_avg
        return _Subst(b.expr.subs(r_avg, sp.Float(kappa) * eta))
    return b


def leading_order() -> dict[str, sp.Expr]:
    """Symbolic optimum of the leading-order bound Delta_0/(eta K) + 2 sqrt(mu) rho sigma + 2 L eta/mu."""
    lead = Delta_0 / (eta * K) + 2 * sp.sqrt(mu) * rho * sigma + 2 * L * eta / mu
    eta_of_mu = sp.solve(sp.diff(lead, eta), eta)[0]
    inner = sp.simplify(lead.subs(eta, eta_of_mu))
    mu_star = [m for m in sp.solve(sp.diff(inner, mu), mu) if m.is_positive][0]
    b_star = sp.simplify(inner.subs(mu, mu_star))
    return {"bound": lead, "eta": sp.simplify(eta_of_mu.subs(mu, mu_star)), "mu": sp.simplify(mu_star),
            "value": b_star, "exponent": sp.simplify(sp.diff(sp.log(b_star), K) * K)}


def _check_positive(**c):
    for name, val in c.items():
        if not np.all(np.asarray(val, float) > 0):
            raise ValueError(f"{name} must be positive, got {val!r}")


def optimize_bound(K_, variant=SYNC, L_=1.0, sigma_=1.0, rho_=1.0, Delta_0_=1.0, kappa=None):
    """min over eta > 0, 0 < mu <= 1 of the variant's theorem at horizon K (scipy, in logs).

    Returns (value, eta*, mu*). The objective is a posynomial (minus a constant) in
    (eta, mu), hence convex in (log eta, log mu): the local optimum is global.
    """
    _check_positive(K=K_, L=L_, sigma=sigma_, rho=rho_, Delta_0=Delta_0_)
    f = sp.lambdify((eta, mu), _theorem(variant, kappa).expr.subs(
        {K: K_, L: L_, sigma: sigma_, rho: rho_, Delta_0: Delta_0_}), "numpy")
    mu0 = min(1.0, np.sqrt(2 * L_ * Delta_0_ / K_) / (rho_ * sigma_))
    eta0 = np.sqrt(Delta_0_ * mu0 / (2 * L_ * K_))
    obj = lambda z: float(np.log(f(np.exp(z[0]), np.exp(z[1]))))  # noqa: E731
    res = optimize.minimize(obj, [np.log(eta0), np.log(mu0)], method="L-BFGS-B",
                            bounds=[(None, None), (-60.0, 0.0)], options={"ftol": 1e-15, "gtol": 1e-12})
    return float(np.exp(res.fun)), float(np.exp(res.x[0])), float(np.exp(res.x[1]))


def rate_exponent(variant=SYNC, Ks=None, **constants) -> float:
    """Slope of log B*(K) against log K from numeric optima (-> -1/4)."""
    Ks = np.geomspace(1e8, 1e16, 9) if Ks is None else np.asarray(Ks, float)
    vals = [optimize_bound(k, variant, **_c(constants))[0] for k in Ks]
    return float(np.polyfit(np.log(Ks), np.log(vals), 1)[0])


def _c(constants):
    return {f"{k}_": float(v) for k, v in constants.items()}


def delay_price(K_, variant=DELAYED, baseline=SYNC, kappa=None, **constants):
    """B*_variant(K) / B*_baseline(K): how much larger the optimised delayed (or EF) bound is.

    K_ may be an array (returns an array). constants: L, sigma, rho, Delta_0 (default 1).
    variant "ef_kappa" with kappa = r_avg/eta uses the EF trajectory theorem (a measured r_avg).
    """
    Ks = np.atleast_1d(np.asarray(K_, float))
    out = np.array([optimize_bound(k, variant, **_c(constants), kappa=kappa)[0]
                    / optimize_bound(k, baseline, **_c(constants))[0] for k in Ks])
    return out if np.ndim(K_) else float(out[0])


def steps_needed(eps, variant=SYNC, **constants) -> float:
    """Smallest K with B*_variant(K) <= eps (continuous K, root of log B*(K) = log eps)."""
    _check_positive(eps=eps)
    g = lambda lk: np.log(optimize_bound(np.exp(lk), variant, **_c(constants))[0]) - np.log(eps)  # noqa: E731
    lo, hi = 0.0, 10.0
    while g(hi) > 0:
        hi *= 2
        if hi > 400:
            raise ValueError(f"eps={eps} not reachable")
    if g(lo) <= 0:
        return 1.0
    return float(np.exp(optimize.brentq(g, lo, hi, xtol=1e-10)))


def steps_ratio(eps, variant=DELAYED, baseline=SYNC, **constants):
    """K_variant(eps) / K_baseline(eps): how many more steps the delayed method needs for accuracy eps."""
    e = np.atleast_1d(np.asarray(eps, float))
    out = np.array([steps_needed(x, variant, **constants) / steps_needed(x, baseline, **constants)
                    for x in e])
    return out if np.ndim(eps) else float(out[0])


# ----------------------------------------------------------------- Kovalev's choice
eps = sp.Symbol("epsilon", positive=True)
z = sp.Symbol("z", positive=True)  # eps = 4 rho sigma z; z <= 1 is the noise-dominated regime


def kovalev_choice():
    """eta = min(eps/(16L), eps^3/(256 rho^2 sigma^2 L)), mu = min(1, eps^2/(16 rho^2 sigma^2)).
    Both minima switch at eps = 4 rho sigma. Returns {regime: (eta, mu)}, regime "noise"
    (eps <= 4 rho sigma) and "deterministic" (eps >= 4 rho sigma)."""
    return {"noise": (eps**3 / (256 * rho**2 * sigma**2 * L), eps**2 / (16 * rho**2 * sigma**2)),
            "deterministic": (eps / (16 * L), sp.Integer(1))}


def kovalev_recheck(variant="kovalev", budget=sp.Rational(31, 32)):
    """Plug Kovalev's choice into a theorem. Splits it into the K-free terms T and the K terms
    (Delta_0/eta + 2 rho sigma/mu)/K. Returns, per regime, sup over the regime of T/eps (exact,
    as a function of z = eps/(4 rho sigma)), and the K that makes the total exactly
    budget * eps: K = (Delta_0/eta + 2 rho sigma/mu) / ((budget - sup T/eps) eps)."""
    B = _theorem(variant).expr
    out = {}
    for regime, (e_, m_) in kovalev_choice().items():
        Bk = sp.expand(B.subs({eta: e_, mu: m_}))
        k_terms = sum(term for term in Bk.args if term.has(K))
        t_terms = sp.simplify(Bk - k_terms)
        ratio = sp.simplify((t_terms / eps).subs(rho, eps / (4 * z * sigma)))
        if regime == "noise":
            ends = [sp.limit(ratio, z, 0, "+"), ratio.subs(z, 1)]
            grid = np.linspace(1e-6, 1, 2001)
        else:
            ends = [ratio.subs(z, 1), sp.limit(ratio, z, sp.oo)]
            grid = np.geomspace(1, 1e6, 2001)
        sup = sp.Max(*ends)
        num = sp.lambdify(z, ratio, "numpy")(grid)
        K_need = sp.simplify(sp.expand(k_terms * K) / ((budget - sup) * eps))
        out[regime] = {"T_over_eps": ratio, "sup_T_over_eps": sup,
                       "grid_max": float(np.max(num)), "K": sp.expand(K_need),
                       "K_for_31_32": sp.expand(sp.simplify(sp.expand(k_terms * K) / ((budget - sup) * eps)))}
    return out


def delay_price_leading(K_, variant=DELAYED, L=1.0, sigma=1.0, rho=1.0, Delta_0=1.0):
    """Leading-order price of the delay, by the envelope theorem.

    B_delayed = B_sync + 2 L eta and B_ef,worst = B_sync + 4 L eta, so at the optimum
    B*_variant / B*_sync = 1 + extra L eta*/B* + O(mu*^2) with 2 L eta* / B* = mu*/4,
    mu* = sqrt(2 L Delta_0/K)/(rho sigma):
      delayed: 1 + mu*/4,   EF worst: 1 + mu*/2.
    In steps for accuracy eps (K ~ B^-4, mu* = (eps/(4 rho sigma))^2):
      K_delayed/K_sync ~ 1 + (eps/(4 rho sigma))^2,   K_ef/K_sync ~ 1 + 2 (eps/(4 rho sigma))^2.
    """
    extra = {DELAYED: 1.0, EF: 2.0}[variant]
    mu_star = np.sqrt(2 * L * Delta_0 / np.asarray(K_, float)) / (rho * sigma)
    return 1 + extra * mu_star / 4


def steps_ratio_leading(eps_, variant=DELAYED, sigma=1.0, rho=1.0):
    """Leading order of steps_ratio: 1 + c (eps/(4 rho sigma))^2, c = 1 (delayed), 2 (EF worst)."""
    extra = {DELAYED: 1.0, EF: 2.0}[variant]
    return 1 + extra * (np.asarray(eps_, float) / (4 * rho * sigma)) ** 2

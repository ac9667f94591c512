"""Every bound of the package as a `Bound` (docs/design.md §5; derivations in theory.proofs.package_derivations).

Shorthands (all in docs/design.md's notation, q = 1 - mu):

* noise(t)   = (1-mu)^t rho sigma + sqrt(mu) rho sigma          (momentum noise)
* drift      = L eta (1-mu)/mu        (momentum lags a moving gradient; steps <= eta)
* descent    = Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + L eta/2

Derived here (theory.proofs.package_derivations proves each step):

* sync lemma     E||m_t - grad f(x_t)||_* <= noise(t) + drift
* sync theorem   (1/K) sum E||grad f(x_t)||_* <= descent + 2 drift
* perturbed lemma (delayed, EF; gradient at x_t, virtual iterate y_t)
                 E||m_t - grad f(y_t)||_* <= noise(t) + drift + L r_w(t)
* perturbed theorem (1/K) sum E||grad f(y_t)||_* <= descent + 2 drift + 2 L r_avg
* delayed: r_t <= eta, so drift + L eta = L eta/mu (the sync drift with 1-mu -> 1)
* EF: r_t = eta ||lmo(m_{t-1}) - lmo(m_{t-2})|| <= 2 eta (worst case)

The readings of the paper's delayed bound are in theory.records.paper_readings.
"""
from __future__ import annotations

import sympy as sp

from .bound import DELAYED, EF, SOURCES, SYNC, Bound
from .symbols import Delta_0, K, L, eta, mu, r_avg, r_w, rho, sigma, t

A234 = ("A2", "A3", "A4")
A1234 = ("A1", "A2", "A3", "A4")


def noise(tt=t):
    """(1-mu)^t rho sigma + sqrt(mu) rho sigma."""
    return (1 - mu) ** tt * rho * sigma + sp.sqrt(mu) * rho * sigma


def drift():
    """L eta (1-mu)/mu = L eta sum_j w_{t,j} (t-j) bounded for all t."""
    return L * eta * (1 - mu) / mu


def descent():
    """Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + L eta/2."""
    return (Delta_0 / (eta * K) + 2 * rho * sigma / (mu * K)
            + 2 * sp.sqrt(mu) * rho * sigma + L * eta / 2)


def _b(name, expr, quantity, variant, source, status, valid, note, assumptions=A234):
    return Bound(name=name, expr=expr, quantity=quantity, variant=variant,
                 assumptions=assumptions, source=SOURCES[source], status=status,
                 valid=valid, note=note)


KOVALEV_SYNC_LEMMA = _b(
    "kovalev_sync_lemma",
    noise() + L * eta / mu,
    "momentum_error_x", SYNC, "kovalev", "restated", True,
    "Implied by derived_sync_lemma (L eta (1-mu)/mu <= L eta/mu), hence valid.")

KOVALEV_SYNC_THEOREM = _b(
    "kovalev_sync_theorem",
    descent() + L * eta + 2 * L * eta / mu,
    "avg_grad_norm_x", SYNC, "kovalev", "restated", True,
    "= Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + 3 L eta/2 + 2 L eta/mu;"
    " exceeds derived_sync_theorem by exactly 3 L eta, hence valid.", A1234)

DERIVED_SYNC_LEMMA = _b(
    "derived_sync_lemma", noise() + drift(),
    "momentum_error_x", SYNC, "derived", "derived", True,
    "E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma + L eta (1-mu)/mu.")

DERIVED_SYNC_THEOREM = _b(
    "derived_sync_theorem", descent() + 2 * drift(),
    "avg_grad_norm_x", SYNC, "derived", "derived", True,
    "Descent lemma at x_t summed over t < K; tighter than Kovalev's restated theorem by 3 L eta.",
    A1234)

DERIVED_DELAYED_LEMMA = _b(
    "derived_delayed_lemma", noise() + L * eta / mu,
    "momentum_error_y", DELAYED, "derived", "derived", True,
    "y_t = x_t + d_{t-1}, r_t <= eta: noise(t) + L eta (1-mu)/mu + L eta = noise(t) + L eta/mu.")

DERIVED_DELAYED_LEMMA_X = _b(
    "derived_delayed_lemma_x", noise() + drift(),
    "momentum_error_x", DELAYED, "derived", "derived", True,
    "The x_t of delayed training also move by <= eta per step, so the sync lemma holds at x_t.")

DERIVED_DELAYED_THEOREM = _b(
    "derived_delayed_theorem", descent() + 2 * L * eta / mu,
    "avg_grad_norm_y", DELAYED, "derived", "derived", True,
    "Descent lemma at the virtual iterate y_t (which follows the sync recursion) with"
    " r_avg <= eta. At x_t add L eta (derived_delayed_theorem_x).", A1234)

DERIVED_DELAYED_THEOREM_X = _b(
    "derived_delayed_theorem_x", descent() + 2 * L * eta / mu + L * eta,
    "avg_grad_norm_x", DELAYED, "derived", "derived", True,
    "||grad f(x_t)||_* <= ||grad f(y_t)||_* + L r_t with r_t <= eta.", A1234)

DERIVED_EF_LEMMA_TRAJECTORY = _b(
    "derived_ef_lemma_trajectory", noise() + drift() + L * r_w,
    "momentum_error_y", EF, "derived", "derived", True,
    "y_t = x_t + d_{t-1} - d_{t-2}; r_w(t) = sum_j w_{t,j} E r_j with"
    " r_t = eta ||lmo(m_{t-1}) - lmo(m_{t-2})||. Holds for any perturbed-gradient run.")

DERIVED_EF_LEMMA_WORST = _b(
    "derived_ef_lemma_worst", noise() + drift() + 2 * L * eta,
    "momentum_error_y", EF, "derived", "derived", True,
    "derived_ef_lemma_trajectory with r_t <= 2 eta.")

DERIVED_EF_THEOREM_TRAJECTORY = _b(
    "derived_ef_theorem_trajectory", descent() + 2 * drift() + 2 * L * r_avg,
    "avg_grad_norm_y", EF, "derived", "derived", True,
    "r_avg = (1/K) sum_{t<K} r_w(t); small when consecutive LMO directions agree.", A1234)

DERIVED_EF_THEOREM_WORST = _b(
    "derived_ef_theorem_worst", descent() + 2 * drift() + 4 * L * eta,
    "avg_grad_norm_y", EF, "derived", "derived", True,
    "derived_ef_theorem_trajectory with r_avg <= 2 eta.", A1234)

ALL = (
    KOVALEV_SYNC_LEMMA, KOVALEV_SYNC_THEOREM,
    DERIVED_SYNC_LEMMA, DERIVED_SYNC_THEOREM,
    DERIVED_DELAYED_LEMMA, DERIVED_DELAYED_LEMMA_X,
    DERIVED_DELAYED_THEOREM, DERIVED_DELAYED_THEOREM_X,
    DERIVED_EF_LEMMA_TRAJECTORY, DERIVED_EF_LEMMA_WORST,
    DERIVED_EF_THEOREM_TRAJECTORY, DERIVED_EF_THEOREM_WORST,
)

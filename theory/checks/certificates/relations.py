"""The PEP's data, pure numpy: momentum weights, the points each variant takes its gradients at,
and the package's derived deterministic terms (docs/design.md §3-§5).

Momentum (m_0 = g_0, the bounds' start theory.records.bound.INIT_MOMENTUM = lmo's
``init_momentum="grad"``): m_t = (1-mu) m_{t-1} + mu g_t, so m_t = sum_{j<=t} w_{t,j} g_j with
w_{t,0} = (1-mu)^t, w_{t,j} = mu (1-mu)^{t-j} (j >= 1). lmo's default ``"zero"`` (m_0 = mu g_0) has
w_{t,0} = mu (1-mu)^t (``weights(mu, t, "zero")``); the certificates are posed for "grad".

Points, written in the basis (y_0, d_0, ..., d_{t-1}) (y_0 = x_0 since d_{-1} = d_{-2} = 0; the
virtual iterate follows the sync recursion y_{j+1} = y_j + d_j, so y_j = y_0 + d_0 + ... + d_{j-1}):

* sync:    x_{j+1} = x_j + d_j                     x_j = y_j                      target x_t
* delayed: x_{j+1} = x_j + d_{j-1}, y_j = x_j + d_{j-1}         x_j = y_j - d_{j-1}   target y_t
* EF:      x_{j+1} = x_j + 2 d_{j-1} - d_{j-2}, y_j = x_j + d_{j-1} - d_{j-2}
                                                   x_j = y_j - d_{j-1} + d_{j-2}  target y_t

(d_s = 0 for s < 0), i.e. x_j = y_j - (y_j - x_j) with the wrapper's ``lmo.virtual_offset``.
Gradients are taken at x_0..x_t; the quantity is ||m_t - grad f(target)||. The steps d_s are
free vectors with ||d_s|| <= eta: the lemma's hypothesis (d_s = eta lmo(m_s) is one such
vector), so the certificate bounds the lemma, and the algorithm's own worst case is at most it.
"""
from __future__ import annotations

import numpy as np

from ...records.bound import DELAYED, EF, INIT_MOMENTA, INIT_MOMENTUM, SYNC, VARIANTS

#: the extra perturbation term of each variant's lemma, in units of eta: r_t <= R_MAX eta
#: (sync r = 0; delayed r_t = ||d_{t-1}|| <= eta; EF r_t = ||d_{t-1} - d_{t-2}|| <= 2 eta)
R_MAX = {SYNC: 0, DELAYED: 1, EF: 2}
#: the registered lemma whose sigma = 0 part each variant's certificate is compared with
LEMMA = {SYNC: "derived_sync_lemma", DELAYED: "derived_delayed_lemma", EF: "derived_ef_lemma_worst"}


def weights(mu: float, t: int, init_momentum: str = INIT_MOMENTUM) -> np.ndarray:
    """w_{t,0} = (1-mu)^t, w_{t,j} = mu (1-mu)^{t-j} for 1 <= j <= t (they sum to 1); with
    ``init_momentum="zero"`` (m_0 = mu g_0) w_{t,0} = mu (1-mu)^t (they sum to 1 - (1-mu)^{t+1})."""
    if init_momentum not in INIT_MOMENTA:
        raise ValueError(f"init_momentum must be one of {INIT_MOMENTA}, got {init_momentum!r}")
    w = np.array([mu * (1 - mu) ** (t - j) for j in range(t + 1)], dtype=float)
    if init_momentum == "grad":
        w[0] = (1 - mu) ** t
    return w


def _check(variant: str, t: int) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if not isinstance(t, (int, np.integer)) or t < 0:
        raise ValueError(f"t must be an int >= 0, got {t!r}")


def virtual(j: int, t: int) -> np.ndarray:
    """y_j = y_0 + d_0 + ... + d_{j-1} as coefficients over (y_0, d_0, ..., d_{t-1})."""
    c = np.zeros(t + 1)
    c[0] = 1.0
    c[1:j + 1] = 1.0
    return c


def offset(variant: str, j: int, t: int) -> np.ndarray:
    """y_j - x_j over (y_0, d_0, ..., d_{t-1}): 0 (sync), d_{j-1} (delayed), d_{j-1} - d_{j-2} (EF)."""
    _check(variant, t)
    c = np.zeros(t + 1)
    if variant in (DELAYED, EF) and j >= 1:
        c[j] += 1.0          # d_{j-1} is basis entry 1 + (j - 1)
    if variant == EF and j >= 2:
        c[j - 1] -= 1.0      # d_{j-2}
    return c


def points(variant: str, t: int) -> tuple[np.ndarray, np.ndarray]:
    """(X, target): X[j] = x_j = y_j - (y_j - x_j) for j = 0..t, and the point the momentum is
    compared at (x_t for sync, y_t otherwise), all over (y_0, d_0, ..., d_{t-1})."""
    _check(variant, t)
    X = np.array([virtual(j, t) - offset(variant, j, t) for j in range(t + 1)])
    return X, (X[t] if variant == SYNC else virtual(t, t))


def mean_lag(mu: float, t: int) -> float:
    """sum_j w_{t,j} (t-j) = (1-mu)(1-(1-mu)^t)/mu (perturbed_lemma: 'mean lag of the momentum')."""
    return (1 - mu) * (1 - (1 - mu) ** t) / mu


def derived_uniform(variant: str, mu: float, L: float = 1.0, eta: float = 1.0) -> float:
    """The registered lemma (LEMMA[variant]) at sigma = 0: L eta (1-mu)/mu (sync), L eta/mu
    (delayed), L eta (1-mu)/mu + 2 L eta (EF worst case); evaluated from its sympy expression."""
    from ...records import package_bounds as B
    bound = {b.name: b for b in B.ALL}[LEMMA[variant]]
    return float(bound.evaluate(L=L, eta=eta, mu=mu, sigma=0.0, rho=1.0, t=0))


def derived_finite(variant: str, mu: float, t: int, L: float = 1.0, eta: float = 1.0) -> float:
    """The derivation's bound at step t before its last step ('lag bounded uniformly in t'), at
    sigma = 0 with r_w <= R_MAX eta: L eta (1-mu)(1-(1-mu)^t)/mu + R_MAX[variant] L eta."""
    _check(variant, t)
    return L * eta * (mean_lag(mu, t) + R_MAX[variant])


def aligned_value(variant: str, mu: float, t: int, L: float = 1.0, eta: float = 1.0) -> float:
    """An explicit instance: f(x) = L x^2/2 on the line, every step d_s = eta (aligned), so
    |m_t - f'(target)| = L |sum_j w_{t,j} x_j - target| with the points of :func:`points`.
    It attains L eta mean_lag (sync) and L eta (mean_lag + 1 - (1-mu)^t) (delayed, t >= 1)."""
    X, target = points(variant, t)
    z = np.concatenate([[0.0], np.full(t, eta)])   # y_0 = 0 (translation invariance), d_s = eta
    return float(L * abs(weights(mu, t) @ (X @ z) - target @ z))

"""The sharper error-feedback lemma: the lag and the EF perturbation bounded jointly (issue 48, item 2).

The worst-case EF lemma (derived_ef_lemma_worst) bounds the drift D_t by L eta times
lag(t) + 2: the largest lag plus the largest perturbation r_t = 2 eta. Both cannot happen at once:
aligned steps give the lag but r_t = 0, opposed steps give r_t = 2 eta and fold the lag back. The
joint lemma keeps, for every j, the one vector y_t - x_j = d_{j-1} + ... + d_{t-1} - d_{j-2}
(lag and perturbation together) and bounds sum_j w_{t,j} ||y_t - x_j|| over all steps of norm
<= eta at once (theory.proofs.ef_joint). With q = 1 - mu and (z)_+ = max(z, 0):

* step t >= 2:  C(mu, t) = 2 sqrt(A_t B_t),
                A_t = mu (1 - q^{t-1}) + (1-2mu)_+ q (1 - q^{t-2}) / (2 mu) + q^t,
                B_t = (1 + mu - q^{t-1}) / (2 mu);
                C(mu, 0) = 0, C(mu, 1) = 1 (x_0 = x_1 = y_0, so D_1 <= L ||y_1 - y_0||);
* uniform:      C(mu) = lim_t C(mu, t) = sqrt((1+mu) (2 mu^2 + (1-2mu)_+ (1-mu))) / mu
                = sqrt(2 (1+mu)) for mu >= 1/2, sqrt((1+mu)(1 - 3mu + 4mu^2))/mu for mu <= 1/2;
                C(mu, t) <= C(mu) for every t (A_t and B_t increase in t; C(mu) >= 1).

The old constant is (1-mu)/mu + 2 = (1+mu)/mu; C(mu) <= (1+mu)/mu with equality only at mu = 1.

The proof's one geometric step is the parallelogram law, so the lemma is stated under
A5: ||.|| is the Euclidean norm (l_2, Frobenius for matrices; the PEP certificates' setting). For
the sign (l_inf) and spectral norms the star bound sum_j w_j ||y_t - x_j|| can reach the old
constant (each j on its own coordinate), so there the joint constant is a conjecture tested on
witnesses (theory.checks.ef_joint_witness), and derived_ef_lemma_worst stays the proved bound.
"""
from __future__ import annotations

import math

import sympy as sp

from .bound import EF, SOURCES, Bound
from .package_bounds import noise
from .symbols import L, eta, mu, t

#: A5, the assumption the joint lemma adds (theory.proofs.ef_joint's parallelogram step)
A5 = "A5: ||.|| is the Euclidean norm (l_2; Frobenius for matrices), so the parallelogram law holds"

q = 1 - mu
POS = sp.Max(1 - 2 * mu, 0)                      # (1 - 2 mu)_+


def a_t(tt=t):
    """A_t = mu (1 - q^{t-1}) + (1-2mu)_+ q (1 - q^{t-2}) / (2 mu) + q^t (t >= 2)."""
    return mu * (1 - q ** (tt - 1)) + POS * q * (1 - q ** (tt - 2)) / (2 * mu) + q ** tt


def b_t(tt=t):
    """B_t = (1 + mu - q^{t-1}) / (2 mu) (t >= 2)."""
    return (1 + mu - q ** (tt - 1)) / (2 * mu)


def c_step_expr(tt=t):
    """C(mu, t) = 2 sqrt(A_t B_t), t >= 2."""
    return 2 * sp.sqrt(a_t(tt) * b_t(tt))


def c_uniform_expr():
    """C(mu) = sqrt((1+mu)(2 mu^2 + (1-2mu)_+ (1-mu))) / mu, the limit of C(mu, t)."""
    return sp.sqrt((1 + mu) * (2 * mu**2 + POS * (1 - mu))) / mu


def c_step(m: float, tt: int) -> float:
    """C(mu, t) in numbers (units of L eta): 0 at t = 0, 1 at t = 1, 2 sqrt(A_t B_t) for t >= 2."""
    if tt < 0:
        raise ValueError(f"t must be >= 0, got {tt}")
    if not 0 < m <= 1:
        raise ValueError(f"mu must be in (0, 1], got {m}")
    if tt == 0:
        return 0.0
    if tt == 1:
        return 1.0
    qq, pos = 1 - m, max(1 - 2 * m, 0.0)
    a = m * (1 - qq ** (tt - 1)) + pos * qq * (1 - qq ** (tt - 2)) / (2 * m) + qq ** tt
    b = (1 + m - qq ** (tt - 1)) / (2 * m)
    return 2 * math.sqrt(a * b)


def c_uniform(m: float) -> float:
    """C(mu) in numbers (units of L eta)."""
    if not 0 < m <= 1:
        raise ValueError(f"mu must be in (0, 1], got {m}")
    return math.sqrt((1 + m) * (2 * m * m + max(1 - 2 * m, 0.0) * (1 - m))) / m


def c_old(m: float, tt: int | None = None) -> float:
    """The worst-case lemma's constant: lag + 2, (1-mu)(1-(1-mu)^t)/mu + 2 at step t, (1+mu)/mu uniform."""
    lag = (1 - m) / m if tt is None else (1 - m) * (1 - (1 - m) ** tt) / m
    return lag + 2


DERIVED_EF_LEMMA_JOINT = Bound(
    name="derived_ef_lemma_joint", expr=noise() + L * eta * c_uniform_expr(),
    quantity="momentum_error_y", variant=EF, assumptions=("A2", "A3", "A4", "A5"),
    source=SOURCES["derived"], status="derived", valid=True,
    note="EF worst case with the lag and the perturbation bounded jointly (theory.proofs.ef_joint): "
         "noise(t) + L eta C(mu), C(mu) = sqrt((1+mu)(2mu^2 + (1-2mu)_+(1-mu)))/mu <= (1+mu)/mu. " + A5 + ".")

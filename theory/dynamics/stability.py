"""The exact stability region of delayed EMA momentum on a 1-D quadratic (issue 48, item 4a).

The model, in the notation of docs/design.md §3-§4 (mu is the weight of the new gradient,
beta = 1 - mu; tau = 0 is the synchronous method)::

    f(x) = h x^2 / 2,   g_t = h x_t + xi_t
    m_t = (1 - mu) m_{t-1} + mu g_t                 (m_{-1} = 0, lmo's default start)
    u_t = m_t   (plain)   or   mu g_t + (1 - mu) m_t   (Nesterov, as lmo.muon)
    d_t = -eta u_t,   x_{t+1} = x_t + d_{t-tau}     (d_s = 0 for s < 0: the pipeline fills)

Substituting x_t = z^t (xi = 0) gives, with k = eta h (the step times the curvature), the
characteristic polynomial (tests/theory/test_dynamics_stability.py derives it in sympy)::

    p_k(z) = z^tau (z - 1)(z - beta) + k N(z),
    N(z) = mu z   (plain)   or   mu ((1 + beta) z - beta)   (Nesterov)

The iteration converges iff every root of p_k has |z| < 1. For small k > 0 the root at 1
moves inside; the region is 0 < k < k_c(tau, mu), and at k_c a pair of roots crosses the
unit circle at e^{+-i w_c} (w_c: the critical frequency; period 2 pi / w_c steps). On the
circle, p_k(e^{iw}) = 0 reads k = -e^{i w tau} (e^{iw} - 1)(e^{iw} - beta) / N(e^{iw}), the
boundary locus: k_c is its smallest positive real value.

Known closed forms (tests): mu = 1 (no momentum, x_{t+1} = x_t - k x_{t-tau}):
k_c = 2 sin(pi / (2 (2 tau + 1))), w_c = pi / (2 tau + 1); tau = 0, plain:
k_c = 2 (1 + beta) / mu (Cohen et al.'s adaptive edge of stability 38 / eta at beta = 0.9);
tau = 0, Nesterov: k_c = 2 (1 + beta) / (mu (1 + 2 beta)).

With noise xi_t of variance sigma^2 (independent over t) and 0 < k < k_c, x_t is stationary
with Var x = eta^2 sigma^2 S(k), S = sum_t r_t^2 where r is the impulse response of
X / Xi = -N(z) / p_k(z) at eta = 1; the mean excess loss is E h x^2 / 2 = eta sigma^2 k S / 2.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import linalg, signal

__all__ = ["char_poly", "spectral_radius", "critical_step", "critical_frequency", "boundary_locus",
           "plain_delay_critical_step", "simulate", "noise_floor", "edge_grid_markdown"]


def _check(tau: int, mu: float) -> None:
    if isinstance(tau, bool) or not isinstance(tau, (int, np.integer)) or tau < 0:
        raise ValueError(f"tau must be an int >= 0, got {tau!r}")
    if not 0.0 < mu <= 1.0:
        raise ValueError(f"mu must be in (0, 1], got {mu!r}")


def _numerator(mu: float, nesterov: bool) -> np.ndarray:
    """N(z) as coefficients, highest power first: mu z, or mu ((1 + beta) z - beta)."""
    beta = 1.0 - mu
    return np.array([mu * (1.0 + beta), -mu * beta]) if nesterov else np.array([mu, 0.0])


def char_poly(k: float, tau: int, mu: float, nesterov: bool = False) -> np.ndarray:
    """Coefficients (highest power first) of p_k(z) = z^tau (z - 1)(z - beta) + k N(z)."""
    _check(tau, mu)
    beta = 1.0 - mu
    lead = np.concatenate([np.polymul([1.0, -1.0], [1.0, -beta]), np.zeros(tau)])
    return np.polyadd(lead, k * _numerator(mu, nesterov))


def spectral_radius(k: float, tau: int, mu: float, nesterov: bool = False) -> float:
    """max |z| over the roots of p_k: the iteration's asymptotic contraction per step."""
    return float(np.max(np.abs(np.roots(char_poly(k, tau, mu, nesterov)))))


@lru_cache(maxsize=4096)
def critical_step(tau: int, mu: float, nesterov: bool = False, tol: float = 1e-12) -> float:
    """k_c(tau, mu) = sup{k : spectral_radius(k') < 1 for all 0 < k' < k}: the largest stable eta h.

    Bisection on the spectral radius between a stable k (small) and the first unstable k of a
    geometric scan; the scan's step (a factor 2^(1/8)) is below the width of the stable interval
    in every case the tests cover, and the result is cross-checked against the boundary locus."""
    _check(tau, mu)
    lo = 1e-6 * mu
    if spectral_radius(lo, tau, mu, nesterov) >= 1.0:
        raise ArithmeticError(f"k = {lo} is already unstable (tau={tau}, mu={mu})")
    hi = lo
    while spectral_radius(hi, tau, mu, nesterov) < 1.0:
        lo, hi = hi, hi * 2.0 ** 0.125
        if hi > 1e9:
            raise ArithmeticError("no instability below k = 1e9")
    while hi - lo > tol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if spectral_radius(mid, tau, mu, nesterov) < 1.0 else (lo, mid)
    return 0.5 * (lo + hi)


def critical_frequency(tau: int, mu: float, nesterov: bool = False) -> float:
    """w_c in [0, pi]: the angle of the root of p_{k_c} on the unit circle (period 2 pi / w_c)."""
    roots = np.roots(char_poly(critical_step(tau, mu, nesterov), tau, mu, nesterov))
    return float(abs(np.angle(roots[np.argmax(np.abs(roots))])))


def boundary_locus(w, tau: int, mu: float, nesterov: bool = False):
    """k(w) = -e^{i w tau} (e^{iw} - 1)(e^{iw} - beta) / N(e^{iw}): the (complex) k for which
    e^{iw} is a root of p_k; real and equal to k_c at w = w_c."""
    _check(tau, mu)
    z = np.exp(1j * np.asarray(w, dtype=float))
    return -(z ** tau) * (z - 1.0) * (z - (1.0 - mu)) / np.polyval(_numerator(mu, nesterov), z)


def plain_delay_critical_step(tau: int) -> float:
    """mu = 1 (x_{t+1} = x_t - k x_{t-tau}): k_c = 2 sin(pi / (2 (2 tau + 1))), the known closed form."""
    _check(tau, 1.0)
    return 2.0 * math.sin(math.pi / (2.0 * (2 * tau + 1)))


def simulate(k: float, tau: int, mu: float, nesterov: bool = False, steps: int = 1000, x0: float = 1.0,
             noise=None) -> np.ndarray:
    """x_0..x_steps of the model's update (module docstring); it depends on eta and h only
    through k = eta h (the recursion is linear), so eta = 1, h = k here. The step order written out as lmo's wrappers run it:
    m_t from g_t, d_t = -u_t queued, x_{t+1} = x_t + d_{t-tau}. ``noise``: xi_0.. (or None)."""
    _check(tau, mu)
    beta = 1.0 - mu
    x, m, queue = np.empty(steps + 1), 0.0, [0.0] * tau
    x[0] = x0
    for t in range(steps):
        g = k * x[t] + (0.0 if noise is None else noise[t])
        m = beta * m + mu * g
        u = mu * g + beta * m if nesterov else m
        queue.append(-u)
        x[t + 1] = x[t] + queue.pop(0)
    return x


def noise_floor(k: float, tau: int, mu: float, nesterov: bool = False) -> float:
    """S(k) = Var x / (eta sigma)^2 in the stationary state (module docstring), exact: the
    H2 norm of -N(z) / p_k(z) from the discrete Lyapunov equation of its state-space form.
    The mean excess loss is eta sigma^2 k S / 2. Infinite for k >= k_c."""
    a = char_poly(k, tau, mu, nesterov)
    if np.max(np.abs(np.roots(a))) >= 1.0:
        return math.inf
    A, B, C, D = signal.tf2ss(-_numerator(mu, nesterov), a)
    P = linalg.solve_discrete_lyapunov(A, B @ B.T)
    return float((C @ P @ C.T + D @ D.T)[0, 0])


def edge_grid_markdown(taus=(0, 1, 2, 4, 8, 16), mus=(1.0, 0.5, 0.1, 0.05, 0.01)) -> str:
    """k_c(tau, mu), plain / Nesterov, as a markdown table (docs/tau_law.md §2)."""
    lines = ["| mu | " + " | ".join(f"tau = {t}" for t in taus) + " |", "|" + "---|" * (len(taus) + 1)]
    for mu in mus:
        cells = [f"{critical_step(t, mu):.4g} / {critical_step(t, mu, True):.4g}" for t in taus]
        lines.append(f"| {mu:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)

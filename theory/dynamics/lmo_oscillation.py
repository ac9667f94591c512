"""Fixed-norm LMO steps under a delay: the limit cycle around a minimum (issue 48, item 4b).

The model, in the notation of docs/design.md §3-§4: f(x) = h x^2 / 2 in one coordinate, the
sign geometry (lmo(u) = -sign(u), so ||d_t|| = eta: the step cannot grow and the iterate
cannot diverge), no noise::

    m_t = (1 - mu) m_{t-1} + mu h x_t,   u_t = m_t  or  mu h x_t + (1 - mu) m_t  (Nesterov)
    d_t = eta lmo(u_t) = -eta sign(u_t),  x_{t+1} = x_t + d_{t-tau}

The same holds for every singular direction of a Muon step and every coordinate of a sign
step, so an LMO method on a quadratic is a sum of such one-dimensional cycles. h scales out
(sign(h x) = sign(x)): x / eta is a function of tau, mu and x_0 / eta only, and the excess
loss h x^2 / 2 is h eta^2 times a number.

**Exact, mu = 1 (no momentum).** Every step is +-eta, so x_t stays on the lattice x_0 + eta Z;
let -a (0 < a < eta) be its largest negative point. After the first pass through 0, x keeps
going tau more steps (the sign it acts on is tau steps old), turns, and settles in the cycle

    -(a + tau eta) -> ... -> (tau + 1) eta - a -> ... -> -(a + tau eta),

2 tau + 1 steps up and 2 tau + 1 down: period 2 (2 tau + 1), the period of the linear
method's critical oscillation at mu = 1 (theory.dynamics.stability: w_c = pi / (2 tau + 1)).
Its time average (sympy: tests/theory/test_dynamics_lmo_oscillation.py), with b = a/eta - 1/2:

    <x^2> = eta^2 ((4 tau^2 + 4 tau + 3) / 12 + b^2),   phase-averaged over a: eta^2 (tau^2 + tau + 1) / 3

so the delay's excess loss over sync (tau = 0) at the same start is exactly

    E_tau - E_0 = h <x^2>_tau / 2 - h <x^2>_0 / 2 = h eta^2 tau (tau + 1) / 6     (any a),

quadratic in tau: gap(8) / gap(2) = 12, gap(4) / gap(1) = 10.

**With momentum (mu < 1): describing function.** The loop x -> u -> sign -> delay -> sum
closes through a relay; its first harmonic has amplitude 4 / pi whatever the input's, so a
cycle of frequency w needs the linear part's phase at -pi: the phase condition of
theory.dynamics.stability's boundary locus. The cycle therefore runs at the critical
frequency w_c(tau, mu) of the linear method, with first-harmonic amplitude

    A_1 = (4 eta / pi) / |e^{i w_c} - 1| = 2 eta / (pi sin(w_c / 2)),   <x^2> ~ A_1^2 / 2.

At mu = 1 this gives A_1 = 8 A / pi^2 for the exact triangle wave of amplitude A = (tau + 1/2) eta
(the first harmonic of a triangle wave, 0.81 A). The approximation ignores the higher
harmonics and fails at tau = 0 with momentum (w_c = pi there); `simulated_mean_square` gives
the model's own value and the tests bound the ratio.
"""
from __future__ import annotations

import math

import numpy as np

from .stability import critical_frequency

__all__ = ["sign_descent", "cycle_mean_square", "phase_averaged_mean_square", "exact_gap",
           "df_amplitude", "df_mean_square", "simulated_mean_square", "noisy_gaps", "lmo_gap"]


def sign_descent(tau: int, mu: float, nesterov: bool = False, eta: float = 1.0, h: float = 1.0,
                 steps: int = 2000, x0=1.0, sigma: float = 0.0, seed: int = 0) -> np.ndarray:
    """x_0..x_steps (rows) of the module's model for every start in ``x0`` (columns), written
    in the step order of lmo's wrappers (m_{-1} = 0; d_t queued, d_{t-tau} applied; d_s = 0
    for s < 0). Vectorised over starts. ``sigma`` > 0: g_t = h x_t + sigma xi_t, xi_t standard
    normal drawn from ``seed`` (then x / eta depends on sigma / (h eta) as well)."""
    if isinstance(tau, bool) or int(tau) != tau or tau < 0:
        raise ValueError(f"tau must be an int >= 0, got {tau!r}")
    if not 0.0 < mu <= 1.0:
        raise ValueError(f"mu must be in (0, 1], got {mu!r}")
    if eta <= 0 or h <= 0:
        raise ValueError(f"eta and h must be > 0, got eta={eta!r}, h={h!r}")
    beta = 1.0 - mu
    x0 = np.atleast_1d(np.asarray(x0, dtype=float))
    x = np.empty((steps + 1,) + x0.shape)
    x[0] = x0
    m = np.zeros_like(x0)
    queue = [np.zeros_like(x0) for _ in range(int(tau))]
    rng = np.random.default_rng(seed) if sigma else None
    for t in range(steps):
        g = h * x[t] + (sigma * rng.standard_normal(x0.shape) if sigma else 0.0)
        m = beta * m + mu * g
        u = mu * g + beta * m if nesterov else m
        queue.append(-eta * np.sign(u))
        x[t + 1] = x[t] + queue.pop(0)
    return x


def cycle_mean_square(tau: int, a: float, eta: float = 1.0) -> float:
    """mu = 1, exact: <x^2> over the cycle = eta^2 ((4 tau^2 + 4 tau + 3)/12 + (a/eta - 1/2)^2)."""
    b = a / eta - 0.5
    return eta ** 2 * ((4 * tau * tau + 4 * tau + 3) / 12.0 + b * b)


def phase_averaged_mean_square(tau: int, eta: float = 1.0) -> float:
    """mu = 1, exact: cycle_mean_square averaged over a uniform in (0, eta): eta^2 (tau^2 + tau + 1)/3."""
    return eta ** 2 * (tau * tau + tau + 1) / 3.0


def exact_gap(tau: int, eta: float = 1.0, h: float = 1.0) -> float:
    """mu = 1, exact: the delay's excess loss over sync, h eta^2 tau (tau + 1) / 6 (any phase a)."""
    return h * eta ** 2 * tau * (tau + 1) / 6.0


def df_amplitude(tau: int, mu: float, nesterov: bool = False, eta: float = 1.0) -> float:
    """Describing function: A_1 = 2 eta / (pi sin(w_c / 2)), w_c = stability.critical_frequency."""
    return 2.0 * eta / (math.pi * math.sin(0.5 * critical_frequency(tau, mu, nesterov)))


def df_mean_square(tau: int, mu: float, nesterov: bool = False, eta: float = 1.0) -> float:
    """Describing function: <x^2> ~ A_1^2 / 2 (the first harmonic's power)."""
    return 0.5 * df_amplitude(tau, mu, nesterov, eta) ** 2


def simulated_mean_square(tau: int, mu: float, nesterov: bool = False, phases: int = 16,
                          steps: int = 12000, burn: int = 4000, start: float = 30.0) -> float:
    """<x^2> / eta^2 of the model, measured: the mean over ``phases`` starts x_0 = start + (j + 1/2)/phases
    (j = 0..phases-1: the lattice phase a uniform) of the time average of x_t^2 over t > burn."""
    x0 = start + (np.arange(phases) + 0.5) / phases
    x = sign_descent(tau, mu, nesterov, 1.0, 1.0, steps, x0)
    return float(np.mean(x[burn + 1:] ** 2))


def noisy_gaps(mu: float, nesterov: bool, noise: float, taus=(1, 2, 4, 8), phases: int = 12,
               steps: int = 12000, burn: int = 3000, seed: int = 0) -> dict:
    """{tau: gap} in units of h eta^2 with gradient noise sd ``noise`` x h eta (the same draws for
    every tau): (<x^2>_tau - <x^2>_0) / (2 eta^2), time average over t > burn and the phases.
    At noise = 0 this is lmo_gap's "simulated"; as noise grows the relay is dithered into the
    linear regime and the growth in tau flattens towards the bound's linear law."""
    x0 = (np.arange(phases) + 0.5) / phases
    ms = {tau: float(np.mean(sign_descent(tau, mu, nesterov, 1.0, 1.0, steps, x0, noise, seed)[burn + 1:] ** 2))
          for tau in (0,) + tuple(taus)}
    return {tau: 0.5 * (ms[tau] - ms[0]) for tau in taus}


def lmo_gap(tau: int, mu: float, nesterov: bool = False, method: str = "simulated") -> float:
    """The delay's excess loss over sync in units of h eta^2: (<x^2>_tau - <x^2>_0) / (2 eta^2).

    method: "exact" (mu = 1 only: tau (tau + 1) / 6), "simulated" (the model itself, any mu),
    "df" (the describing function; its sync term, which it gets wrong, is the simulated one)."""
    if method == "exact":
        if mu != 1.0:
            raise ValueError("the exact law holds at mu = 1 only")
        return exact_gap(tau)
    sync = simulated_mean_square(0, mu, nesterov)
    if method == "simulated":
        return 0.5 * (simulated_mean_square(tau, mu, nesterov) - sync)
    if method == "df":
        return 0.5 * (df_mean_square(tau, mu, nesterov) - sync)
    raise ValueError(f"method must be 'exact', 'simulated' or 'df', got {method!r}")

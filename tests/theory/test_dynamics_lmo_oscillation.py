"""theory.dynamics.lmo_oscillation: the delayed sign-descent limit cycle, derived in sympy, met
exactly by simulation at mu = 1 (property tests over tau, eta, h and the start), its scale
law, the describing function's accuracy with momentum, and the model against lmo's own
delayed sign-momentum optimizer."""
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

import lmo
from lmo.geometry import Sign
from theory.dynamics import lmo_oscillation as O


def _cycle_sum():
    """<x^2> over the cycle -(a + tau eta) .. (tau + 1) eta - a: the 2 tau + 2 lattice points
    n eta - a (n = -tau..tau+1), each visited twice a period but the two turning points once."""
    tau = sp.Symbol("tau", integer=True, nonnegative=True)
    a, eta = sp.symbols("a eta", positive=True)
    n = sp.Symbol("n", integer=True)
    total = 2 * sp.summation((n * eta - a) ** 2, (n, -tau, tau + 1)) - (tau * eta + a) ** 2 \
        - ((tau + 1) * eta - a) ** 2
    return total / (4 * tau + 2), tau, a, eta


def test_the_closed_forms_are_the_cycles_average():
    ms, tau, a, eta = _cycle_sum()
    b = a / eta - sp.Rational(1, 2)
    assert sp.simplify(ms - eta ** 2 * ((4 * tau ** 2 + 4 * tau + 3) / 12 + b ** 2)) == 0
    avg = sp.integrate(ms, (a, 0, eta)) / eta
    assert sp.simplify(avg - eta ** 2 * (tau ** 2 + tau + 1) / 3) == 0
    h = sp.Symbol("h", positive=True)
    gap = h * (ms - ms.subs(tau, 0)) / 2
    assert sp.simplify(gap - h * eta ** 2 * tau * (tau + 1) / 6) == 0      # the phase a drops out
    for t, av in ((0, 1 / 3), (2, 7 / 3), (8, 73 / 3)):
        assert math.isclose(O.phase_averaged_mean_square(t), av)
        assert math.isclose(O.cycle_mean_square(t, 0.3), float(ms.subs({tau: t, a: 0.3, eta: 1})))
    assert math.isclose(O.exact_gap(8) / O.exact_gap(2), 12.0) and math.isclose(O.exact_gap(4) / O.exact_gap(1), 10.0)


@given(tau=st.integers(0, 10), eta=st.floats(1e-3, 10.0), h=st.floats(1e-3, 1e3),
       n=st.integers(-40, 40), frac=st.floats(0.02, 0.98))
def test_no_momentum_settles_in_the_derived_cycle(tau, eta, h, n, frac):
    x0 = (n + frac) * eta
    a = (-x0) % eta                       # -a: the largest negative point of x0 + eta Z
    period = 2 * (2 * tau + 1)
    steps = abs(n) + 2 + 6 * period
    x = O.sign_descent(tau, 1.0, False, eta, h, steps, x0)[:, 0]
    tail = x[-period:]
    assert math.isclose(tail.min(), -(a + tau * eta), rel_tol=1e-9, abs_tol=1e-9 * eta * (abs(n) + tau + 2))
    assert math.isclose(tail.max(), (tau + 1) * eta - a, rel_tol=1e-9, abs_tol=1e-9 * eta * (abs(n) + tau + 2))
    assert np.allclose(x[-period:], x[-2 * period:-period], rtol=0, atol=1e-9 * eta * (abs(n) + tau + 2))
    assert math.isclose(np.mean(tail ** 2), O.cycle_mean_square(tau, a, eta), rel_tol=1e-7, abs_tol=1e-12)
    # a planted wrong law, amplitude tau eta instead of (tau + 1/2) eta, is told apart
    assert not math.isclose(np.mean(tail ** 2), eta ** 2 * (tau ** 2 + 1) / 3, rel_tol=1e-3)


@settings(max_examples=15)
@given(tau=st.integers(0, 6), mu=st.floats(0.05, 1.0), nesterov=st.booleans(), eta=st.floats(1e-2, 10.0),
       h=st.floats(1e-2, 1e2), x0=st.floats(0.5, 20.0))
def test_h_scales_out_and_eta_sets_the_length(tau, mu, nesterov, eta, h, x0):
    x = O.sign_descent(tau, mu, nesterov, eta, h, 300, x0 * eta)
    y = O.sign_descent(tau, mu, nesterov, 1.0, 1.0, 300, x0)
    steps = np.abs(np.diff(x[:, 0]))
    assert np.all(np.isclose(steps, 0.0) | np.isclose(steps, eta))   # fixed-norm steps (0 only while the pipeline fills)
    assert np.allclose(x / eta, y, rtol=0, atol=1e-9 * (x0 + 300))


@settings(max_examples=10)
@given(tau=st.integers(2, 8), mu=st.floats(0.02, 1.0), nesterov=st.booleans())
def test_the_describing_function_is_within_forty_percent_below_the_model(tau, mu, nesterov):
    ratio = O.simulated_mean_square(tau, mu, nesterov, phases=8, steps=6000, burn=2000) / \
        O.df_mean_square(tau, mu, nesterov)
    assert 1.0 <= ratio <= 1.4, ratio


def test_the_describing_function_is_the_triangle_waves_first_harmonic_at_mu_1():
    for tau in (1, 4, 16, 64):
        A = (tau + 0.5)                     # the exact cycle's amplitude at a = eta / 2
        assert math.isclose(O.df_amplitude(tau, 1.0), 8 * A / math.pi ** 2, rel_tol=0.3 / (tau + 0.5) ** 2)


def test_simulated_gap_meets_the_exact_law_at_mu_1_and_grows_with_tau_under_momentum():
    for tau in (1, 2, 4, 8):
        assert math.isclose(O.lmo_gap(tau, 1.0, method="simulated"), O.lmo_gap(tau, 1.0, method="exact"), rel_tol=0.01)
    g = [O.lmo_gap(t, 0.05, True) for t in (1, 2, 4, 8)]
    assert all(b > a for a, b in zip(g, g[1:]))
    with pytest.raises(ValueError, match="mu = 1"):
        O.lmo_gap(2, 0.5, method="exact")


@pytest.mark.parametrize("tau", [0, 1, 4])
@pytest.mark.parametrize("nesterov", [False, True])
def test_the_model_is_lmos_own_delayed_sign_momentum(tau, nesterov):
    mu, eta, h = 0.1, 0.25, 3.0
    starts = np.array([2.3, -1.7, 0.55, 7.9])
    opt = lmo.lmo_momentum(eta, Sign(event_ndim=1), mu=mu, nesterov=nesterov)
    opt = lmo.delayed(opt, tau) if tau else opt
    p = {"x": torch.tensor(starts, dtype=torch.float64)}
    state, xs = opt.init(p), [starts]
    for _ in range(120):
        d, state = opt.update({"x": h * p["x"]}, state, p)
        p = {"x": p["x"] + d["x"]}
        xs.append(p["x"].numpy().copy())
    assert np.allclose(np.array(xs), O.sign_descent(tau, mu, nesterov, eta, h, 120, starts), atol=1e-12)

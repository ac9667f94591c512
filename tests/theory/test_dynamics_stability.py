"""theory.dynamics.stability: the characteristic polynomial derived in sympy, the closed forms
it must meet, the boundary locus, simulation on both sides of the edge, the noise floor, and
the model's update against lmo's own delayed optimizer."""
import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

import lmo
from lmo.steepest_descent import LMOMomentumState
from lmo.combine import chain
from lmo.transforms import scale_by_learning_rate, scale_by_momentum
from theory.dynamics import stability as S


def _derived_poly(tau: int, nesterov: bool):
    """p_k(z) from the recursions by x_t = z^t, m_t = c z^t (docstring of the module)."""
    z, k, mu = sp.symbols("z k mu", positive=True)
    beta, c = 1 - mu, sp.Symbol("c")
    # m_t = beta m_{t-1} + mu h x_t at eta = 1, h = k: c z^t = beta c z^(t-1) + mu k z^t
    c_val = sp.solve(sp.Eq(c * z, beta * c + mu * k * z), c)[0]
    u = mu * k + beta * c_val if nesterov else c_val          # u_t / z^t
    # x_{t+1} = x_t - u_{t-tau}: z - 1 + u z^(-tau) = 0; clear the denominators z^tau (z - beta)
    lhs = sp.together((z - 1 + u * z ** -tau) * z ** tau * (z - beta))
    return sp.Poly(sp.expand(sp.numer(lhs) / sp.denom(lhs)), z), k, mu


@pytest.mark.parametrize("tau", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("nesterov", [False, True])
def test_char_poly_is_the_recursions_polynomial(tau, nesterov):
    poly, k, mu = _derived_poly(tau, nesterov)
    for kv, muv in ((0.3, 0.1), (2.0, 0.05), (0.7, 1.0)):
        want = [float(cf.subs({k: kv, mu: muv})) for cf in poly.all_coeffs()]
        got = S.char_poly(kv, tau, muv, nesterov)
        assert np.allclose(np.trim_zeros(got, "f"), want, atol=1e-12), (tau, nesterov, got, want)


def test_the_planted_wrong_polynomial_is_told_apart():
    # the check above can fail: the sync heavy-ball polynomial (no z^tau) is not the tau = 2 one
    poly, k, mu = _derived_poly(2, False)
    want = [float(cf.subs({k: 0.3, mu: 0.1})) for cf in poly.all_coeffs()]
    assert not np.allclose(np.trim_zeros(S.char_poly(0.3, 0, 0.1), "f"), want[:3])


@pytest.mark.parametrize("tau", range(13))
def test_no_momentum_meets_the_closed_form(tau):
    assert math.isclose(S.critical_step(tau, 1.0), S.plain_delay_critical_step(tau), rel_tol=1e-9)
    assert math.isclose(S.plain_delay_critical_step(tau), 2 * math.sin(math.pi / (2 * (2 * tau + 1))))
    assert math.isclose(S.critical_frequency(tau, 1.0), math.pi / (2 * tau + 1), rel_tol=1e-6)


@pytest.mark.parametrize("mu", [0.01, 0.05, 0.1, 0.5, 0.9])
def test_sync_and_one_step_closed_forms(mu):
    beta = 1 - mu
    # tau = 0: the root -1 crosses; plain: 2 (1 + beta) / mu (38 at beta = 0.9, Adam's edge of stability)
    assert math.isclose(S.critical_step(0, mu), 2 * (1 + beta) / mu, rel_tol=1e-9)
    assert math.isclose(S.critical_step(0, mu, True), 2 * (1 + beta) / (mu * (1 + 2 * beta)), rel_tol=1e-9)
    # tau = 1, plain: p = z (z^2 - (1 + beta) z + beta + k mu); at k = 1 the quadratic's roots are
    # complex (discriminant (1 + beta)^2 - 4 < 0) with |z|^2 = beta + mu = 1: k_c = 1 for every mu
    assert math.isclose(S.critical_step(1, mu), 1.0, rel_tol=1e-9)
    z, k, m = sp.symbols("z k mu", positive=True)
    poly, kk, mm = _derived_poly(1, False)
    quad = z ** 2 - (2 - m) * z + (1 - m) + k * m
    assert sp.expand(poly.as_expr().subs({kk: k, mm: m}) - z * quad) == 0
    assert sp.simplify(sp.discriminant(quad.subs(k, 1), z) - ((2 - m) ** 2 - 4)) == 0
    assert sp.simplify(quad.subs({k: 1, z: 0}) - 1) == 0   # product of the pair = |z|^2 = 1
    assert math.isclose(S.critical_step(0, 0.1), 38.0, rel_tol=1e-9)


@settings(max_examples=15)
@given(st.integers(0, 8), st.floats(0.02, 1.0), st.booleans())
def test_boundary_locus_is_real_at_the_edge_and_nothing_smaller_crosses(tau, mu, nesterov):
    kc, wc = S.critical_step(tau, mu, nesterov), S.critical_frequency(tau, mu, nesterov)
    at = S.boundary_locus(wc, tau, mu, nesterov)
    assert abs(at.imag) < 1e-6 * max(1.0, kc) and math.isclose(at.real, kc, rel_tol=1e-6)
    w = np.linspace(1e-4, math.pi, 20001)
    loc = S.boundary_locus(w, tau, mu, nesterov)
    cross = np.nonzero(np.sign(loc.imag[1:]) != np.sign(loc.imag[:-1]))[0]
    frac = loc.imag[cross] / (loc.imag[cross] - loc.imag[cross + 1])     # the zero of Im, interpolated
    reals = [r for r in loc.real[cross] + frac * (loc.real[cross + 1] - loc.real[cross]) if r > 0]
    if abs(loc.imag[-1]) < 1e-9 and loc.real[-1] > 0:   # w = pi, the scan's end: the root -1
        reals.append(loc.real[-1])
    assert min(reals) >= kc * (1 - 1e-5)


def _envelope_ratio(k, tau, mu, nesterov):
    """max |x| over the last 50 steps / max |x| over steps 50..100 of the model's simulation, long
    enough for the predicted rate to move the envelope by e^(+-12)."""
    rho = S.spectral_radius(k, tau, mu, nesterov)
    steps = int(min(60000, 100 + 12 / abs(math.log(rho))))
    x = S.simulate(k, tau, mu, nesterov, steps=steps)
    return np.max(np.abs(x[-50:])) / np.max(np.abs(x[50:100])), rho


@settings(max_examples=15)
@given(st.integers(0, 8), st.floats(0.05, 1.0), st.booleans())
def test_simulation_decays_below_the_edge_and_grows_above(tau, mu, nesterov):
    kc = S.critical_step(tau, mu, nesterov)
    below, rb = _envelope_ratio(0.9 * kc, tau, mu, nesterov)
    above, ra = _envelope_ratio(1.1 * kc, tau, mu, nesterov)
    assert rb < 1 < ra
    assert below < 1e-2 and above > 1e2, (below, above)


def test_noise_floor_is_the_impulse_responses_energy_and_sgds_closed_form():
    for k, tau, mu, nest in ((0.05, 2, 0.1, False), (0.2, 1, 0.05, True), (0.1, 4, 1.0, False)):
        r = S.simulate(k, tau, mu, nest, steps=30000, x0=0.0, noise=np.r_[1.0, np.zeros(29999)])
        assert math.isclose(float(np.sum(r ** 2)), S.noise_floor(k, tau, mu, nest), rel_tol=1e-6)
    for k in (0.1, 0.5, 1.5):   # sync SGD: Var x / (eta sigma)^2 = 1 / (k (2 - k))
        assert math.isclose(S.noise_floor(k, 0, 1.0), 1 / (k * (2 - k)), rel_tol=1e-9)
    assert S.noise_floor(1.01 * S.critical_step(3, 0.1), 3, 0.1) == math.inf


def test_noise_floor_against_monte_carlo():
    rng = np.random.default_rng(0)
    k, tau, mu = 0.1, 2, 0.1
    xs = [S.simulate(k, tau, mu, steps=6000, x0=0.0, noise=rng.standard_normal(6000))[1000:] for _ in range(8)]
    var = float(np.mean(np.concatenate(xs) ** 2))
    assert abs(var / S.noise_floor(k, tau, mu) - 1) < 0.15


@pytest.mark.parametrize("tau", [0, 1, 3])
@pytest.mark.parametrize("nesterov", [False, True])
def test_the_model_is_lmos_own_delayed_update(tau, nesterov):
    # lmo's momentum and learning-rate transforms under lmo.delayed, f = h x^2 / 2 in float64
    mu, eta, h = 0.2, 0.3, 1.5
    opt = chain(scale_by_momentum(mu, nesterov), scale_by_learning_rate(), name="sgdm", lr=eta,
                state=LMOMomentumState, hyper={})
    opt = lmo.delayed(opt, tau) if tau else opt
    p = {"x": torch.tensor([1.0], dtype=torch.float64)}
    state, xs = opt.init(p), [1.0]
    for _ in range(40):
        d, state = opt.update({"x": h * p["x"]}, state, p)
        p = {"x": p["x"] + d["x"]}
        xs.append(float(p["x"]))
    assert np.allclose(xs, S.simulate(eta * h, tau, mu, nesterov, steps=40), atol=1e-12)


@pytest.mark.parametrize("tau", [1, 2, 4, 8, 16])
def test_heavy_momentum_edges_one_over_tau_plain_and_one_over_tau_minus_one_nesterov(tau):
    assert math.isclose(S.critical_step(tau, 1e-4) * tau, 1.0, rel_tol=0.002)
    if tau == 1:   # Nesterov undoes the one-step delay: the edge grows without bound (about mu^(-1/2))
        assert S.critical_step(1, 1e-4, True) > 50
    else:
        assert math.isclose(S.critical_step(tau, 1e-4, True) * (tau - 1), 1.0, rel_tol=0.002)


def test_the_doc_prints_the_edge_grid():
    from pathlib import Path
    doc = (Path(__file__).resolve().parents[2] / "docs" / "tau_law.md").read_text()
    assert S.edge_grid_markdown() in doc


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="tau"):
        S.char_poly(0.1, -1, 0.1)
    with pytest.raises(ValueError, match="mu"):
        S.critical_step(1, 1.5)

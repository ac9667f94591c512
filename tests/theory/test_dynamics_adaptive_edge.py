"""theory.dynamics.adaptive_edge: delayed Adam's preconditioned step settles at the delayed edge
k_c(tau) of theory.dynamics.stability, the sharp direction's excess is h eta^2 / (2 k_c^2)
- sigma^2 / (2 h), and the model is lmo.adamw under lmo.delayed step for step."""
import math

import numpy as np
import pytest
import torch

import lmo
from theory.dynamics import adaptive_edge as A
from theory.dynamics.stability import critical_step


@pytest.mark.parametrize("tau", [1, 2, 4, 8])
def test_past_the_edge_adam_settles_on_it_and_pays_the_edge_excess(tau):
    kc = critical_step(tau, 0.1)
    r = A.simulate(tau, [3 * kc, 20 * kc], beta2=0.99, steps=8000, seeds=2)
    assert np.allclose(r["k_eff"] / kc, 1.0, atol=0.05), r["k_eff"] / kc
    want = [A.edge_excess(tau, 0.1, 3 * kc), A.edge_excess(tau, 0.1, 20 * kc)]
    assert np.allclose(r["excess"], want, rtol=0.1), (r["excess"], want)
    # a planted wrong law (the edge excess at the undelayed edge) is told apart
    assert not np.allclose(r["excess"], 0.5 / critical_step(0, 0.1) ** 2, rtol=0.5)


def test_with_the_presets_beta2_too():
    kc = critical_step(2, 0.1)
    r = A.simulate(2, [4 * kc], beta2=0.999, steps=20000, seeds=2)
    assert math.isclose(r["k_eff"][0] / kc, 1.0, abs_tol=0.05)


def test_below_the_edge_it_stays_below():
    kc = critical_step(4, 0.1)
    r = A.simulate(4, [0.5 * kc], beta2=0.99, steps=6000, seeds=2)
    assert r["k_eff"][0] < 0.6 * kc
    with pytest.raises(ValueError, match="below the edge"):
        A.edge_excess(4, 0.1, 0.5 * kc)


@pytest.mark.parametrize("tau", [0, 1, 3])
def test_the_model_is_lmos_delayed_adamw(tau):
    eta, h, K, steps, eps = 0.05, 2.0, 3.0, 60, 1e-8
    xi = np.random.default_rng(1).standard_normal((steps, 1))
    model = A.simulate(tau, [K], eta=eta, h=h, steps=steps, seeds=1, eps=eps, noise=xi)["x"][:, 0]
    opt = lmo.adamw(eta, betas=(0.9, 0.999), eps=eps, weight_decay=0.0)
    opt = lmo.delayed(opt, tau) if tau else opt
    p = {"x": torch.zeros(1, dtype=torch.float64)}
    state, xs, sigma = opt.init(p), [0.0], eta * h / K
    for t in range(steps):
        d, state = opt.update({"x": h * p["x"] + sigma * float(xi[t, 0])}, state, p)
        p = {"x": p["x"] + d["x"]}
        xs.append(float(p["x"]))
    assert np.allclose(xs, model, rtol=1e-9, atol=1e-12)

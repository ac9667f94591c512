"""Weight prediction and the delay-adjusted Nesterov look-ahead (lmo.lookahead) against
independent references:

- marin's delay harness (``experiments/grug/moe_delay/delay_optim.py``), re-written here as
  its own loop: a FIFO of gradients feeds the inner optimizer g_{t-tau} (zeros while it
  fills) and the forward pass runs at w_t + tau * pred_scale * (last applied update). With
  an inner optimizer that zero gradients leave at rest (SGD; Muon without decay at a
  constant lr) the two models coincide step for step, no index shift;
- the rule written out on the trajectory: z_t = x_t + c (x_t - x_{t-1});
- NAG's look-ahead for tau = 1: z_t = x_t + beta (x_t - x_{t-1});
- the perturbation of the theory: for tau = 1, weight prediction's z_t - y_t is
  d_{t-2} - d_{t-1}, error feedback's r_t (docs/correctors.md).
"""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from lmo.adam_family import adamw
from lmo.muon_family import muon
from lmo.base import apply_updates
from lmo.delay import delayed
from lmo.ef_correction import error_feedback
from lmo.lookahead import (gradient_point, lookahead_coefficient, nesterov_lookahead, stage_momentum,
                           weight_prediction)

from lmo_toy import make, run, run_at_point, sgd

SHAPES = (("a", (4, 3)), ("b", (3, 3)), ("c", (5, 2)))


def marin_weight_prediction_loop(inner, x0, grad, tau, steps, pred_scale=1.0):
    """marin's weight_pred corrector, transcribed: gradient FIFO, forward at predicted weights."""
    zeros = {k: torch.zeros_like(v) for k, v in x0.items()}
    x, s, fifo, last = dict(x0), inner.init(x0), [dict(zeros) for _ in range(tau)], dict(zeros)
    traj, points = [dict(x0)], []
    for _ in range(steps):
        w_hat = {k: x[k] + (tau * pred_scale) * last[k] for k in x}
        points.append(w_hat)
        g = grad(w_hat)
        history = [g] + list(reversed(fifo))          # history[d] = the gradient of d steps ago
        g_stale = history[tau]
        fifo = fifo[1:] + [g] if tau else []
        u, s = inner.update(g_stale, s, x)
        last = u
        x = {k: x[k] + u[k] for k in x}
        traj.append(x)
    return traj, points


@pytest.mark.parametrize("tau", [1, 2, 4, 8])
@pytest.mark.parametrize("inner", ["sgd", "muon"])
def test_weight_prediction_equals_marins_harness(tau, inner):
    x0, grad = make(11, shapes=SHAPES)
    make_inner = {"sgd": lambda: sgd(0.05),
                  "muon": lambda: muon(0.02, weight_decay=0.0, ns_dtype=torch.float64)}[inner]
    ours, z_ours, _ = run_at_point(weight_prediction(make_inner(), tau), x0, grad, 20)
    theirs, z_theirs = marin_weight_prediction_loop(make_inner(), x0, grad, tau, 20)
    for t in range(20):
        for k in x0:
            torch.testing.assert_close(z_ours[t][k], z_theirs[t][k], rtol=1e-13, atol=1e-13)
            torch.testing.assert_close(ours[t + 1][k], theirs[t + 1][k], rtol=1e-13, atol=1e-13)


def test_horizon_is_marins_pred_scale():
    x0, grad = make(12, shapes=SHAPES)
    ours, _, _ = run_at_point(weight_prediction(sgd(0.05), 4, horizon=0.5), x0, grad, 15)
    theirs, _ = marin_weight_prediction_loop(sgd(0.05), x0, grad, 4, 15, pred_scale=0.5)
    for k in x0:
        torch.testing.assert_close(ours[-1][k], theirs[-1][k], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("make_opt, coef", [
    (lambda tau: weight_prediction(adamw(0.01, weight_decay=0.1), tau), lambda tau: float(tau)),
    (lambda tau: nesterov_lookahead(adamw(0.01, weight_decay=0.1), tau, beta=0.9),
     lambda tau: sum(0.9 ** j for j in range(1, tau + 1))),
])
@pytest.mark.parametrize("tau", [1, 2, 4, 8])
def test_point_is_the_rule_on_the_trajectory(make_opt, coef, tau):
    """z_t = x_t + c (x_t - x_{t-1}), x_{-1} = x_0; and the iterates are the plain delay's
    recursion x_{t+1} = x_t + d_{t-tau} on the gradients taken at z_t."""
    x0, grad = make(13, shapes=SHAPES)
    traj, points, _ = run_at_point(make_opt(tau), x0, grad, 16)
    for t in range(16):
        prev = traj[t - 1] if t else traj[0]
        for k in x0:
            torch.testing.assert_close(points[t][k], traj[t][k] + coef(tau) * (traj[t][k] - prev[k]),
                                       rtol=1e-12, atol=1e-12)
    # the same iterates from the delayed wrapper driven by the same gradient points
    inner = adamw(0.01, weight_decay=0.1)
    opt, x = delayed(inner, tau), dict(x0)
    s = opt.init(x0)
    for t in range(16):
        u, s = opt.update(grad(points[t]), s, x)
        x = apply_updates(x, u)
        assert all(torch.equal(x[k], traj[t + 1][k]) for k in x)


@given(beta=st.floats(0.0, 1.0), tau=st.integers(0, 8))
def test_lookahead_coefficient_is_the_geometric_sum(beta, tau):
    c = lookahead_coefficient(tau, beta)
    if beta < 1:
        assert c == pytest.approx(beta * (1 - beta ** tau) / (1 - beta), rel=1e-12, abs=1e-15)
    else:
        assert c == tau
    assert lookahead_coefficient(1, beta) == beta                # NAG's own look-ahead
    assert lookahead_coefficient(0, beta) == 0.0


def test_tau_one_lookahead_is_nags_point():
    """z_t = x_t + beta (x_t - x_{t-1}): Nesterov's look-ahead (Sutskever et al. 2013's form)."""
    x0, grad = make(14, shapes=SHAPES)
    traj, points, _ = run_at_point(nesterov_lookahead(sgd(0.05), 1, beta=0.7), x0, grad, 12)
    for t in range(1, 12):
        for k in x0:
            torch.testing.assert_close(points[t][k], traj[t][k] + 0.7 * (traj[t][k] - traj[t - 1][k]),
                                       rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("tau", [1, 3])
def test_lookahead_limits(tau):
    """beta = 1 is weight prediction bit for bit; beta = 0 is the plain delay bit for bit."""
    x0, grad = make(15, shapes=SHAPES)
    a, _, _ = run_at_point(nesterov_lookahead(adamw(0.01), tau, beta=1.0), x0, grad, 10)
    b, _, _ = run_at_point(weight_prediction(adamw(0.01), tau), x0, grad, 10)
    c, _, _ = run_at_point(nesterov_lookahead(adamw(0.01), tau, beta=0.0), x0, grad, 10)
    d, _ = run(delayed(adamw(0.01), tau), x0, grad, 10)
    for t in range(11):
        assert all(torch.equal(a[t][k], b[t][k]) and torch.equal(c[t][k], d[t][k]) for k in x0)


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 500))
def test_tau_one_perturbation_is_error_feedbacks(seed):
    """Weight prediction at tau = 1: z_t - y_t = d_{t-2} - d_{t-1}, the negative of error
    feedback's y_t - x_t = d_{t-1} - d_{t-2} (lmo.ef_correction) for the same d's: r_t =
    ||z_t - y_t|| is exactly error feedback's r_t."""
    x0, grad = make(seed, shapes=SHAPES)
    opt = weight_prediction(muon(0.02, ns_dtype=torch.float64, weight_decay=0.1), 1)
    x, s, ds = dict(x0), opt.init(x0), []
    for _ in range(8):
        z, y = gradient_point(s, x), opt.virtual_iterate(x, s)
        if len(ds) >= 2:
            for k in x0:
                torch.testing.assert_close(z[k] - y[k], ds[-2][k] - ds[-1][k], rtol=1e-10, atol=1e-12)
        u, s = opt.update(grad(z), s, x)
        ds.append({k: q[-1] for k, q in s.delay.pending.items()})
        x = apply_updates(x, u)


def test_gradient_point_of_other_states_is_x():
    x0, grad = make(16, shapes=SHAPES)
    for opt in (adamw(0.01), delayed(adamw(0.01), 2), error_feedback(adamw(0.01))):
        s = opt.init(x0)
        z = gradient_point(s, x0)
        assert z == x0 and z is not x0


def test_stage_momentum_is_the_asyncpp_rule():
    """AsyncPP main_with_runtime.py: momentum + (num_versions - 1) * (0.99 - momentum) / num_stages."""
    P, beta = 8, 0.9
    for tau in range(P):
        num_versions = tau + 1
        assert stage_momentum(beta, tau, P) == pytest.approx(beta + (num_versions - 1) * (0.99 - beta) / P)
    assert stage_momentum(beta, 0, P) == beta
    with pytest.raises(ValueError, match="tau"):
        stage_momentum(beta, P, P)
    with pytest.raises(ValueError, match="beta"):
        stage_momentum(0.995, 1, P)


@pytest.mark.parametrize("bad", [-1.0, math.inf, True])
def test_refusals(bad):
    with pytest.raises(ValueError, match="horizon"):
        weight_prediction(adamw(0.01), 1, horizon=bad)
    with pytest.raises(ValueError, match="beta"):
        nesterov_lookahead(adamw(0.01), 1, beta=bad if bad is not True else 1.5)

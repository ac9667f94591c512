"""Error feedback: x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}; y_{t+1} = y_t + d_t exactly."""
import io

import pytest
import torch
from hypothesis import given, strategies as st

from lmo.adam_family import adamw
from lmo.base import apply_updates, load_state_dict, state_dict
from lmo.ef_correction import error_feedback
from lmo.geometry import Spectral
from lmo.steepest_descent import lmo_momentum
from lmo.steepest_descent import signum

from lmo_toy import make


@given(seed=st.integers(0, 200), mu=st.floats(0.05, 1.0))
def test_virtual_sequence_is_exactly_synchronous(seed, mu):
    x0, grad = make(seed, shapes=(("a", (4, 3)), ("b", (3, 5))))
    inner = lmo_momentum(0.05, Spectral(), mu=mu)
    opt = error_feedback(inner)
    x, s = dict(x0), opt.init(x0)
    y = opt.virtual_iterate(x, s)
    for _ in range(6):
        g = grad(x)
        d, _ = inner.update(g, s.inner, x)
        u, s = opt.update(g, s, x)
        x = apply_updates(x, u)
        y_new = opt.virtual_iterate(x, s)
        for k in x0:
            torch.testing.assert_close(y_new[k], y[k] + d[k], rtol=1e-12, atol=1e-12)
        y = y_new


def test_applied_update_against_hand_rolled_loop():
    x0, grad = make(1)
    inner = signum(0.05, momentum=0.7)
    opt = error_feedback(inner)
    x, s = dict(x0), opt.init(x0)
    xr, sr = dict(x0), inner.init(x0)
    z = {k: torch.zeros_like(v) for k, v in x0.items()}
    d1, d2 = z, z
    for _ in range(7):
        u, s = opt.update(grad(x), s, x)
        x = apply_updates(x, u)
        d, sr = inner.update(grad(xr), sr, xr)
        xr = {k: xr[k] + 2 * d1[k] - d2[k] for k in xr}
        d1, d2 = d, d1
        for k in x:
            torch.testing.assert_close(x[k], xr[k], rtol=1e-14, atol=1e-14)


def test_perturbation_is_at_most_two_eta_in_the_lmo_norm():
    x0, grad = make(2, shapes=(("a", (5, 4)),))
    geo = Spectral()
    opt = error_feedback(lmo_momentum(0.1, geo, mu=0.5))
    x, s = dict(x0), opt.init(x0)
    for _ in range(10):
        u, s = opt.update(grad(x), s, x)
        x = apply_updates(x, u)
        r = geo.norm(opt.virtual_iterate(x, s)["a"] - x["a"])
        assert float(r) <= 2 * 0.1 + 1e-9


def test_one_extra_buffer_only():
    x0, _ = make(0)
    inner = adamw(0.01)
    s = error_feedback(inner).init(x0)
    assert set(s._fields) == {"inner", "prev", "prev2", "step"}
    assert all(s.prev[k].shape == x0[k].shape and s.prev2[k].shape == x0[k].shape for k in x0)


def test_delay_other_than_one_is_refused():
    with pytest.raises(ValueError, match="delay"):
        error_feedback(adamw(0.01), delay=2)


def test_sync_cooldown_jumps_to_virtual_iterate_and_resume_is_identical():
    x0, grad = make(3)
    opt = error_feedback(adamw(0.01, weight_decay=0.0), sync_start=2, sync_cooldown=2, total_steps=8)
    x, s = dict(x0), opt.init(x0)
    saved = None
    traj = []
    for t in range(8):
        u, s_next = opt.update(grad(x), s, x)
        if t == 6:   # first cool-down step: x_{t+1} = y_t + d_t, hence x = y afterwards
            x_next = apply_updates(x, u)
            y_next = opt.virtual_iterate(x_next, s_next)
            for k in x:
                torch.testing.assert_close(x_next[k], y_next[k])
        if t == 4:
            buf = io.BytesIO()
            torch.save(state_dict(s), buf)
            saved = (dict(x), buf.getvalue())
        s = s_next
        x = apply_updates(x, u)
        traj.append(x)
    x, raw = saved
    s = load_state_dict(opt.init(x0), torch.load(io.BytesIO(raw), weights_only=True))
    for t in range(4, 8):
        u, s = opt.update(grad(x), s, x)
        x = apply_updates(x, u)
        for k in x:
            assert torch.equal(x[k], traj[t][k])

"""Delay semantics against hand-rolled loops (docs/design.md §4)."""
import pytest
import torch
from hypothesis import given, strategies as st

from lmo.adam_family import adamw
from lmo.base import apply_updates
from lmo.delay import delayed
from lmo.muon_family import muon
from lmo.steepest_descent import signum

from lmo_toy import assert_resumes_identically, make, run


@given(tau=st.integers(0, 3), seed=st.integers(0, 100))
def test_delayed_equals_hand_rolled_queue_loop(tau, seed):
    x0, grad = make(seed)
    inner = signum(0.05, momentum=0.8, weight_decay=0.1)
    traj, _ = run(delayed(inner, tau), x0, grad, 8)
    # hand-rolled: d_t computed from g(x_t) with the inner optimizer, applied tau steps later
    x, s, queue = dict(x0), inner.init(x0), []
    for t in range(8):
        d, s = inner.update(grad(x), s, x)
        queue.append(d)
        applied = queue[t - tau] if t - tau >= 0 else {k: torch.zeros_like(v) for k, v in x.items()}
        x = apply_updates(x, applied)
        for k in x:
            torch.testing.assert_close(traj[t + 1][k], x[k], rtol=0, atol=0)


def test_one_step_delay_is_gradient_at_previous_iterate_for_stateless_sgd_like_step():
    """With mu = 1 (no momentum) and no weight decay, x_{t+1} = x_t + eta lmo(g(x_{t-1}))."""
    x0, grad = make(3)
    opt = delayed(signum(0.05, mu=1.0), 1)
    traj, _ = run(opt, x0, grad, 6)
    for t in range(1, 6):
        expect = {k: traj[t][k] - 0.05 * torch.sign(grad(traj[t - 1])[k]) for k in x0}
        for k in x0:
            torch.testing.assert_close(traj[t + 1][k], expect[k])


def test_virtual_iterate_follows_sync_recursion():
    x0, grad = make(1)
    inner = adamw(0.01, weight_decay=0.0)
    opt = delayed(inner, 2)
    x, s = dict(x0), opt.init(x0)
    y = opt.virtual_iterate(x, s)
    for _ in range(6):
        g = grad(x)
        d, _ = inner.update(g, s.inner, x)   # the inner update computed this step
        u, s = opt.update(g, s, x)
        x = apply_updates(x, u)
        y_next = opt.virtual_iterate(x, s)
        for k in x0:
            torch.testing.assert_close(y_next[k], y[k] + d[k])
        y = y_next


def test_per_block_delays_hit_the_right_blocks():
    x0, grad = make(2)
    inner = signum(0.05, mu=1.0)
    opt = delayed(inner, {"a": 2, "b": 0, "c": 1})
    x, s = dict(x0), opt.init(x0)
    sync_d = []
    for t in range(5):
        d, _ = inner.update(grad(x), inner.init(x0), x)
        sync_d.append(d)
        u, s = opt.update(grad(x), s, x)
        for k, tau in (("a", 2), ("b", 0), ("c", 1)):
            expect = sync_d[t - tau][k] if t >= tau else torch.zeros_like(x[k])
            torch.testing.assert_close(u[k], expect)
        x = apply_updates(x, u)


def test_sync_start_and_cooldown_against_hand_rolled_loop():
    x0, grad = make(4)
    inner = signum(0.05, momentum=0.5)
    T, K1, K2 = 10, 3, 2
    traj, _ = run(delayed(inner, 1, sync_start=K1, sync_cooldown=K2, total_steps=T), x0, grad, T)
    x, s, pending = dict(x0), inner.init(x0), None
    for t in range(T):
        d, s = inner.update(grad(x), s, x)
        if t < K1:
            applied = d
        elif t >= T - K2:     # flush: pending + current
            applied = {k: (pending[k] if pending else 0) + d[k] for k in d}
            pending = None
        else:
            applied = pending if pending is not None else {k: torch.zeros_like(v) for k, v in d.items()}
            pending = d
        x = apply_updates(x, applied)
        for k in x:
            torch.testing.assert_close(traj[t + 1][k], x[k])


def test_dc_asgd_corrects_towards_the_virtual_iterate():
    x0, grad = make(5)
    inner = adamw(0.01, weight_decay=0.0)
    lam = 0.7
    traj, _ = run(delayed(inner, 1, dc_asgd=lam), x0, grad, 6)
    x, s, pending = dict(x0), inner.init(x0), {k: torch.zeros_like(v) for k, v in x0.items()}
    for t in range(6):
        g = grad(x)
        g = {k: g[k] + lam * g[k] * g[k] * pending[k] for k in g}   # y_t - x_t = d_{t-1}
        d, s = inner.update(g, s, x)
        x, pending = apply_updates(x, pending), d
        for k in x:
            torch.testing.assert_close(traj[t + 1][k], x[k])


@pytest.mark.parametrize("make_opt", [lambda: delayed(muon(0.02, ns_dtype=torch.float32), 1),
                                      lambda: delayed(adamw(0.01), {"a": 2, "b": 1, "c": 0}, dc_asgd=0.1)])
def test_save_restore_mid_run_gives_identical_trajectory(make_opt):
    x0, grad = make(6, shapes=(("a", (4, 3)), ("b", (3, 3)), ("c", (5, 2))))
    assert_resumes_identically(make_opt(), x0, grad, 8, 4)

"""What a delay wrapper applies next, from its state alone (docs/design.md §4), against
hand-rolled queues of the inner optimizer's updates; the pure PipeDream history."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

import lmo
from lmo.base import apply_updates
from lmo.pipedream import (ParamHistory, StaleHistory, history_init, history_load, history_push,
                           history_state_dict, mixed_point)
from lmo.steepest_descent import signum

from lmo_toy import make


def _wrapped_run(wrap, seed, steps):
    """``steps`` steps of ``wrap(inner)`` on a toy problem; returns (state after them, d_j):
    d_j = inner update at x_j, recomputed by the inner optimizer alone from the wrapper's
    trajectory, with d_{<0} = 0."""
    x0, grad = make(seed)
    inner = signum(0.05, momentum=0.8, weight_decay=0.1)
    opt = wrap(inner)
    x, s, xs = dict(x0), opt.init(x0), []
    for _ in range(steps):
        xs.append(x)
        u, s = opt.update(grad(x), s, x)
        x = apply_updates(x, u)
    s_in, d = inner.init(x0), []
    for x in xs:
        dj, s_in = inner.update(grad(x), s_in, x)
        d.append(dj)
    zero = {k: torch.zeros_like(v) for k, v in x0.items()}
    return s, (lambda j: d[j] if j >= 0 else zero)


@settings(deadline=None, max_examples=25)
@given(tau=st.integers(1, 3), seed=st.integers(0, 50), steps=st.integers(0, 7))
def test_delayed_next_applied_and_offset_are_the_pending_queue(tau, seed, steps):
    """After t updates: a_t = d_{t-tau}, y_t - x_t = d_{t-tau} + ... + d_{t-1} (d_{<0} = 0)."""
    s, at = _wrapped_run(lambda inner: lmo.delayed(inner, tau), seed, steps)
    nxt, off = lmo.next_applied(s), lmo.virtual_offset(s)
    for k in nxt:
        torch.testing.assert_close(nxt[k], at(steps - tau)[k], rtol=0, atol=0)
        want = sum((at(steps - j)[k] for j in range(1, tau + 1)), torch.zeros_like(nxt[k]))
        torch.testing.assert_close(off[k], want, rtol=1e-12, atol=1e-12)


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 50), steps=st.integers(0, 7))
def test_ef_next_applied_is_two_d_prev_minus_d_prev2(seed, steps):
    """After t updates: a_t = 2 d_{t-1} - d_{t-2}, y_t - x_t = d_{t-1} - d_{t-2}."""
    s, at = _wrapped_run(lmo.error_feedback, seed, steps)
    nxt, off = lmo.next_applied(s), lmo.virtual_offset(s)
    for k in nxt:
        torch.testing.assert_close(nxt[k], 2 * at(steps - 1)[k] - at(steps - 2)[k], rtol=0, atol=0)
        torch.testing.assert_close(off[k], at(steps - 1)[k] - at(steps - 2)[k], rtol=0, atol=0)


@pytest.mark.parametrize("wrap", [lambda o: lmo.delayed(o, 1), lambda o: lmo.error_feedback(o)])
def test_next_applied_is_what_the_next_asynchronous_step_applies(wrap):
    x0, grad = make(4)
    opt = wrap(signum(0.05, momentum=0.6))
    x, s = dict(x0), opt.init(x0)
    for _ in range(5):
        predicted = lmo.next_applied(s)
        u, s = opt.update(grad(x), s, x)
        assert all(torch.equal(u[k], predicted[k]) for k in x0)
        x = apply_updates(x, u)


def test_tau_zero_blocks_have_no_known_next_step():
    x0, grad = make(5)
    opt = lmo.delayed(signum(0.05), {"a": 1, "b": 0, "c": 2})
    s = opt.init(x0)
    _, s = opt.update(grad(x0), s, x0)
    nxt, off = lmo.next_applied(s), lmo.virtual_offset(s)
    assert nxt["b"] is None and off["b"] is None
    assert nxt["a"] is not None and off["c"] is not None


def test_non_wrapper_state_refused_naming_the_parameter():
    x0, _ = make(0)
    with pytest.raises(TypeError, match="state"):
        lmo.next_applied(signum(0.05).init(x0))
    with pytest.raises(TypeError, match="state"):
        lmo.virtual_offset({"a": torch.zeros(2)})


def test_flush_applied_is_offset_plus_update():
    off = {"a": torch.tensor([1.0, 2.0]), "b": None}
    d = {"a": torch.tensor([0.5, -1.0]), "b": torch.tensor([3.0])}
    out = lmo.flush_applied(off, d)
    assert torch.equal(out["a"], torch.tensor([1.5, 1.0])) and torch.equal(out["b"], torch.tensor([3.0]))


# ----------------------------------------------------------------------------- PipeDream history
def test_pure_history_matches_param_history_and_does_not_mutate():
    x0, _ = make(6)
    delays = {"a": 2, "b": 1, "c": 0}
    h, obj = history_init(delays), ParamHistory(delays)
    x = dict(x0)
    for t in range(4):
        before = h
        h = history_push(h, x, delays)
        obj.push(x)
        assert isinstance(h, StaleHistory) and before is not h
        assert len(before.past["a"]) == min(t, 2)          # the old state is untouched
        z, z_obj = mixed_point(h, x), obj.mixed_point(x)
        assert all(torch.equal(z[k], z_obj[k]) for k in x)
        x = {k: v + 1 for k, v in x.items()}


def test_history_checkpoint_layout_is_unchanged():
    """The trainer's checkpoint entry ``history`` keeps ParamHistory's {"k/i"} keys."""
    delays = {"a": 2, "b": 1, "c": 0}
    x = {k: torch.full((2,), float(i)) for i, k in enumerate(delays)}
    h = history_init(delays)
    for t in range(3):
        h = history_push(h, {k: v + t for k, v in x.items()}, delays)
    flat = history_state_dict(h)
    assert sorted(flat) == ["a/0", "a/1", "b/0"]
    assert torch.equal(flat["a/0"], x["a"] + 1) and torch.equal(flat["a/1"], x["a"] + 2)
    back = history_load(flat, delays)
    assert all(len(back.past[k]) == len(h.past[k]) for k in delays)
    with pytest.raises(ValueError, match="delay"):
        history_load(flat, {"a": 1, "b": 1, "c": 0})
    with pytest.raises(KeyError, match="params"):
        history_push(h, {"a": x["a"]}, delays)

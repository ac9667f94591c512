"""The stale-point model (original PipeDream) vs the update-delay model (lmo.delay)."""
import pytest
import torch

from lmo.base import apply_updates
from lmo.delay import delayed
from lmo.pipedream import ParamHistory, contiguous_stages, pipedream_delays
from lmo.steepest_descent import signum

from lmo_toy import make, run


def stale_run(opt, x0, grad, delays, steps):
    hist = ParamHistory(delays)
    x, s, traj, points = dict(x0), opt.init(x0), [dict(x0)], []
    for _ in range(steps):
        z = hist.mixed_point(x)
        points.append(z)
        u, s = opt.update(grad(z), s, x)
        hist.push(x)
        x = apply_updates(x, u)
        traj.append(x)
    return traj, points


def test_delays_from_stages():
    assert pipedream_delays({"e": 0, "l1": 1, "h": 2}, 3) == {"e": 2, "l1": 1, "h": 0}
    st = contiguous_stages(["a", "b", "c", "d", "e"], 2)
    assert st == {"a": 0, "b": 0, "c": 0, "d": 1, "e": 1}
    with pytest.raises(ValueError, match="num_stages"):
        contiguous_stages(["a"], 2)
    with pytest.raises(ValueError, match="stage_of"):
        pipedream_delays({"a": 3}, 2)


def test_mixed_point_takes_each_block_from_its_own_past():
    x0, grad = make(0)
    delays = {"a": 2, "b": 1, "c": 0}
    traj, points = stale_run(signum(0.05, momentum=0.5), x0, grad, delays, 6)
    for t, z in enumerate(points):
        for k, tau in delays.items():
            assert torch.equal(z[k], traj[max(0, t - tau)][k])


def test_uniform_delay_models_coincide_after_index_alignment():
    """x^{delayed}_{t+1} = x^{stale}_t for tau = 1 (no weight decay)."""
    x0, grad = make(1)
    inner = signum(0.05, momentum=0.7)
    stale, _ = stale_run(inner, x0, grad, {k: 1 for k in x0}, 8)
    dly, _ = run(delayed(inner, 1), x0, grad, 9)
    for t in range(9):
        for k in x0:
            torch.testing.assert_close(dly[t + 1][k], stale[t][k], rtol=0, atol=0)


def test_non_uniform_delays_models_differ():
    x0, grad = make(2)
    inner = signum(0.05, momentum=0.7)
    delays = {"a": 2, "b": 1, "c": 0}
    stale, _ = stale_run(inner, x0, grad, delays, 8)
    dly, _ = run(delayed(inner, delays), x0, grad, 8)
    gap = max(float((stale[t][k] - dly[t][k]).abs().max()) for t in range(9) for k in x0)
    assert gap > 1e-3


def test_history_round_trips():
    x0, grad = make(3)
    delays = {"a": 2, "b": 1, "c": 0}
    h = ParamHistory(delays)
    x = dict(x0)
    for _ in range(3):
        h.push(x)
        x = {k: v + 1 for k, v in x.items()}
    h2 = ParamHistory(delays)
    h2.load_state_dict(h.state_dict())
    z1, z2 = h.mixed_point(x), h2.mixed_point(x)
    assert all(torch.equal(z1[k], z2[k]) for k in x)

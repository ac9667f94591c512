"""Checks shared by the optimizer tests: ours stepped beside a torch.optim reference, and
a refused update that leaves the state as it was."""
import pytest
import torch

from lmo.base import apply_updates, state_dict


def step_beside_torch(opt, make_ref, p0: dict, draw_grads, steps: int):
    """Run ``opt`` and the torch optimizer ``make_ref(parameters)`` from ``p0`` on the same
    gradients ``draw_grads()`` (one dict per step); returns (ours, torch's) final params."""
    tp = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
    ref = make_ref(list(tp.values()))
    p, s = dict(p0), opt.init(p0)
    for _ in range(steps):
        g = draw_grads()
        for k in tp:
            tp[k].grad = g[k].clone()
        ref.step()
        u, s = opt.update(g, s, p)
        p = apply_updates(p, u)
    return p, {k: v.detach() for k, v in tp.items()}


def assert_refusals_keep_state(opt, shape, bad=float("nan")):
    """A gradient holding ``bad`` (FloatingPointError naming the entry) and, with weight
    decay on, a missing ``params`` (ValueError naming it) are refused, state unchanged."""
    p = {"w": torch.zeros(*shape)}
    s = opt.init(p)
    before = state_dict(s)
    with pytest.raises(FloatingPointError, match="w"):
        opt.update({"w": torch.full(shape, bad)}, s, p)
    with pytest.raises(ValueError, match="params"):
        opt.update({"w": torch.ones(*shape)}, s, None)
    assert all(torch.equal(before[k], v) for k, v in state_dict(s).items())

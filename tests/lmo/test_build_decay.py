"""lmo.build's weight decay is decoupled for every optimizer: d(lambda) - d(0) = -eta lambda x_t.

NAdam's constructor follows torch.optim.NAdam (coupled L2, g <- g + lambda x); build passes
lmo.presets.DECOUPLED_DECAY so the protocol's lambda means the same thing everywhere. The
planted case (NAdam with coupled L2 asked for explicitly) shows the check can fail.
"""
from __future__ import annotations

import pytest
import torch

from lmo.registry import OPTIMIZERS, build

ETA, LAM = 1e-3, 0.1


def _params_and_grads(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    shapes = {"embed.weight": (16, 8), "layers.0.w.weight": (8, 12), "norm.weight": (8,)}
    params = {k: torch.randn(s, generator=g, dtype=torch.float64) for k, s in shapes.items()}
    grads = [{k: torch.randn(s, generator=g, dtype=torch.float64) for k, s in shapes.items()}
             for _ in range(2)]
    return params, grads


def _decay_part(name: str, **kw) -> dict:
    """d_2(lambda) - d_2(0): the second step (SOAP's first only sets up its preconditioner),
    both steps at the same x and gradients. Decoupled decay leaves the moments alone, so
    only the -eta lambda x term differs."""
    params, grads = _params_and_grads()
    out = []
    for wd in (LAM, 0.0):
        opt = build(name, params, lr=ETA, weight_decay=wd, **kw)
        _, state = opt.update(grads[0], opt.init(params), params)
        d, _ = opt.update(grads[1], state, params)
        out.append(d)
    return {k: out[0][k] - out[1][k] for k in params}, params


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_build_weight_decay_is_decoupled(name):
    """Up to O(eta) corrections (Adan's proximal form, SOAP's decay of x_t + d_t), the decay
    adds -eta lambda x_t to the displacement, whatever the gradient's preconditioning."""
    diff, params = _decay_part(name)
    for k, x in params.items():
        want = -ETA * LAM * x
        err = (diff[k] - want).norm() / want.norm()
        assert err < 0.02, f"{name} {k}: |d(lambda) - d(0) + eta lambda x| / |eta lambda x| = {err:.3g}"


def test_planted_coupled_l2_is_caught():
    diff, params = _decay_part("nadam", decoupled_weight_decay=False)
    errs = [((diff[k] + ETA * LAM * x).norm() / (ETA * LAM * x).norm()).item() for k, x in params.items()]
    assert min(errs) > 0.5, errs  # coupled L2 goes through the moments: not -eta lambda x

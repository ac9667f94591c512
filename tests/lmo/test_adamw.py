"""``adamw`` against torch.optim.AdamW, step for step; and the LMO-momentum start options."""
import pytest
import torch
from hypothesis import given, strategies as st

from lmo.adam_family import adamw
from lmo.geometry import Sign
from lmo.steepest_descent import lmo_momentum
from side_by_side import step_beside_torch


@given(lr=st.floats(1e-4, 0.1), b1=st.floats(0.0, 0.99), b2=st.floats(0.5, 0.9999),
       wd=st.floats(0.0, 0.5), amsgrad=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_adamw_matches_torch(lr, b1, b2, wd, amsgrad, seed):
    g = torch.Generator().manual_seed(seed)
    init = {"a": torch.randn(5, 3, generator=g, dtype=torch.float64),
            "b": torch.randn(7, generator=g, dtype=torch.float64)}
    opt = adamw(lr, betas=(b1, b2), weight_decay=wd, amsgrad=amsgrad)
    params, ref = step_beside_torch(
        opt, lambda ps: torch.optim.AdamW(ps, lr=lr, betas=(b1, b2), weight_decay=wd, amsgrad=amsgrad), init,
        lambda: {k: torch.randn(v.shape, generator=g, dtype=v.dtype) for k, v in init.items()}, steps=5)
    for k in init:
        torch.testing.assert_close(params[k], ref[k], rtol=1e-10, atol=1e-12)


def test_adamw_schedule_lr_uses_step_counter():
    seen = []
    opt = adamw(lambda t: seen.append(int(t)) or 1e-3)
    p = {"w": torch.zeros(2)}
    s = opt.init(p)
    for _ in range(3):
        _, s = opt.update({"w": torch.ones(2)}, s, p)
    assert seen == [0, 1, 2]


@pytest.mark.parametrize("nesterov", [False, True])
def test_lmo_momentum_init_options(nesterov):
    p = {"w": torch.zeros(3, 3, dtype=torch.float64)}
    g0 = {"w": torch.randn(3, 3, dtype=torch.float64)}
    zero = lmo_momentum(0.1, Sign(), mu=0.25, nesterov=nesterov)
    first = lmo_momentum(0.1, Sign(), mu=0.25, nesterov=nesterov, init_momentum="grad")
    _, sz = zero.update(g0, zero.init(p), p)
    _, sf = first.update(g0, first.init(p), p)
    assert torch.allclose(sz.momentum["w"], 0.25 * g0["w"])     # m_0 = mu g_0
    assert torch.allclose(sf.momentum["w"], g0["w"])            # m_0 = g_0

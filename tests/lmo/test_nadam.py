"""NAdam: step-for-step against torch.optim.NAdam (coupled and decoupled decay), optax form, smoke."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch

from lmo.base import load_state_dict, state_dict
from lmo.adam_family import nadam
from lmo_toy import vector_lsq_excess
from side_by_side import step_beside_torch


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(5, 3, generator=g, dtype=torch.float64),
            "b": torch.randn(3, generator=g, dtype=torch.float64)}


@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_matches_torch_nadam(decoupled, wd):
    p0 = _params()
    opt = nadam(0.02, betas=(0.9, 0.99), weight_decay=wd, decoupled_weight_decay=decoupled)
    gen = torch.Generator().manual_seed(1)
    p, ref = step_beside_torch(
        opt, lambda ps: torch.optim.NAdam(ps, lr=0.02, betas=(0.9, 0.99), eps=1e-8, weight_decay=wd,
                                          decoupled_weight_decay=decoupled),
        p0, lambda: {k: torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in p0.items()}, steps=8)
    for k in p:  # torch keeps prod psi_i in float32; we keep it in float64
        torch.testing.assert_close(p[k], ref[k], rtol=1e-8, atol=1e-8)


def test_optax_variant_formula():
    """optax.adam(nesterov=True) first step: m_1 = (1-b1) g, v_1 = (1-b2) g^2, written out."""
    b1, b2, lr = 0.9, 0.999, 0.1
    g = torch.tensor([0.5, -2.0, 3.0], dtype=torch.float64)
    opt = nadam(lr, betas=(b1, b2), eps=0.0, variant="optax")
    u, _ = opt.update({"x": g}, opt.init({"x": torch.zeros(3, dtype=torch.float64)}), None)
    m, v = (1 - b1) * g, (1 - b2) * g * g
    expected = -lr * (b1 * m / (1 - b1 ** 2) + (1 - b1) * g / (1 - b1)) / (v / (1 - b2)).sqrt()
    torch.testing.assert_close(u["x"], expected)
    torch.testing.assert_close(expected, -lr * (b1 * (1 - b1) / (1 - b1 ** 2) + 1) * g.sign())


def test_mu_overrides_beta1_and_state_roundtrip():
    opt = nadam(0.01, mu=0.2)
    assert opt.hyper["betas"][0] == pytest.approx(0.8)
    p = _params()
    s = opt.init(p)
    _, s = opt.update({k: torch.ones_like(v) for k, v in p.items()}, s, p)
    s2 = load_state_dict(opt.init(p), state_dict(s))
    assert int(s2.step) == 1 and torch.equal(s2.exp_avg["w"], s.exp_avg["w"])
    assert float(s2.mu_product) == float(s.mu_product)


def test_least_squares_converges():
    assert vector_lsq_excess(nadam(0.05)) < 1e-3


def test_bad_input_names_parameter_and_keeps_state():
    with pytest.raises(ValueError, match="lr"):
        nadam(-1.0)
    with pytest.raises(ValueError, match=r"betas\[1\]"):
        nadam(0.1, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="mu"):
        nadam(0.1, mu=0.0)
    opt = nadam(0.1)
    p = _params()
    s = opt.init(p)
    before = state_dict(s)
    bad = {k: torch.ones_like(v) for k, v in p.items()}
    bad["w"][0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match="w"):
        opt.update(bad, s, p)
    after = state_dict(s)
    assert all(torch.equal(before[k], after[k]) for k in before)


@settings(max_examples=15)
@given(lr=st.floats(1e-4, 0.5), b1=st.floats(0.0, 0.99), b2=st.floats(0.5, 0.9999),
       wd=st.floats(0.0, 0.5), decoupled=st.booleans(), md=st.floats(0.0, 0.1), seed=st.integers(0, 99))
def test_matches_torch_nadam_random_hyperparameters(lr, b1, b2, wd, decoupled, md, seed):
    p0 = _params(seed)
    opt = nadam(lr, betas=(b1, b2), weight_decay=wd, momentum_decay=md, decoupled_weight_decay=decoupled)
    gen = torch.Generator().manual_seed(seed + 1)
    p, ref = step_beside_torch(
        opt, lambda ps: torch.optim.NAdam(ps, lr=lr, betas=(b1, b2), weight_decay=wd, momentum_decay=md,
                                          decoupled_weight_decay=decoupled),
        p0, lambda: {k: torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in p0.items()}, steps=4)
    for k in p:
        torch.testing.assert_close(p[k], ref[k], rtol=1e-6, atol=1e-7)

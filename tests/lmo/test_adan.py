"""Adan: against the official code's recursion written out independently; beta order matters."""
import math

import pytest
import torch

from lmo.adam_family import adan
from lmo.base import apply_updates, state_dict
from lmo_toy import vector_lsq_excess


def _reference_adan(grads, x0, lr, b1, b2, b3, eps, wd):
    """Official sail-sg/Adan ``_single_tensor_adan`` (code convention), re-typed as a plain loop."""
    x = x0.clone()
    m = torch.zeros_like(x); v = torch.zeros_like(x); n = torch.zeros_like(x)
    prev = None
    for k, g in enumerate(grads, start=1):
        diff = torch.zeros_like(g) if prev is None else g - prev
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * diff
        n = b3 * n + (1 - b3) * (g + b2 * diff) ** 2
        denom = n.sqrt() / math.sqrt(1 - b3 ** k) + eps
        x = x - lr / (1 - b1 ** k) * m / denom - lr * b2 / (1 - b2 ** k) * v / denom
        x = x / (1 + lr * wd)
        prev = g
    return x


def _grads(n=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(4, 3, generator=gen, dtype=torch.float64) for _ in range(n)]


def _run(opt, grads, x0):
    p = {"x": x0.clone()}
    s = opt.init(p)
    for g in grads:
        u, s = opt.update({"x": g}, s, p)
        p = apply_updates(p, u)
    return p["x"]


def test_matches_reference_recursion_and_beta_order_matters():
    grads, x0 = _grads(), torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
    betas, lr, wd = (0.98, 0.92, 0.99), 0.01, 0.05
    ours = _run(adan(lr, betas=betas, weight_decay=wd), grads, x0)
    ref = _reference_adan(grads, x0, lr, *betas, 1e-8, wd)
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)
    for swapped in [(0.92, 0.98, 0.99), (0.98, 0.99, 0.92), (0.02, 0.08, 0.01)]:
        assert not torch.allclose(_run(adan(lr, betas=swapped, weight_decay=wd), grads, x0), ref, atol=1e-6)


def test_no_prox_decay_form():
    grads, x0 = _grads(1), torch.ones(4, 3, dtype=torch.float64)
    u_prox = _run(adan(0.1, weight_decay=0.5), grads, x0) - x0
    u_lin = _run(adan(0.1, weight_decay=0.5, no_prox=True), grads, x0) - x0
    plain = _run(adan(0.1), grads, x0) - x0
    torch.testing.assert_close(u_lin, plain - 0.1 * 0.5 * x0)
    torch.testing.assert_close(u_prox, (x0 + plain) / 1.05 - x0)


def test_least_squares_converges():
    assert vector_lsq_excess(adan(0.05)) < 1e-3


def test_bad_input():
    with pytest.raises(ValueError, match="betas"):
        adan(0.1, betas=(0.9, 0.9))
    with pytest.raises(ValueError, match=r"betas\[2\]"):
        adan(0.1, betas=(0.9, 0.9, 1.5))
    assert adan(0.1, mu=0.1).hyper["betas"] == (pytest.approx(0.9), 0.92, 0.99)
    opt = adan(0.1)
    p = {"x": torch.zeros(3)}
    s = opt.init(p)
    _, s = opt.update({"x": torch.ones(3)}, s, p)
    before = state_dict(s)
    with pytest.raises(FloatingPointError, match="x"):
        opt.update({"x": torch.tensor([1.0, float("inf"), 0.0])}, s, p)
    with pytest.raises(KeyError):
        opt.update({"y": torch.ones(3)}, s, {"y": torch.zeros(3)})
    assert all(torch.equal(before[k], v) for k, v in state_dict(s).items())

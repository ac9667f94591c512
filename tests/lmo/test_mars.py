"""MARS-AdamW: gamma=0 without clipping is AdamW (torch.optim.AdamW); correction and clip written out."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch

from lmo.base import apply_updates
from lmo.adam_family import mars
from side_by_side import assert_refusals_keep_state, step_beside_torch


def test_gamma_zero_no_clip_is_torch_adamw():
    gen = torch.Generator().manual_seed(0)
    p0 = {"w": torch.randn(6, 4, generator=gen, dtype=torch.float64),
          "b": torch.randn(4, generator=gen, dtype=torch.float64)}
    opt = mars(0.01, betas=(0.95, 0.99), weight_decay=0.1, gamma=0.0, max_norm=None, betas_1d=(0.95, 0.99))
    p, ref = step_beside_torch(
        opt, lambda ps: torch.optim.AdamW(ps, lr=0.01, betas=(0.95, 0.99), eps=1e-8, weight_decay=0.1), p0,
        lambda: {k: 3 * torch.randn(v.shape, generator=gen, dtype=v.dtype) for k, v in p0.items()}, steps=6)
    for k in p:
        torch.testing.assert_close(p[k], ref[k], rtol=1e-10, atol=1e-12)


def test_first_two_steps_written_out():
    """c_1 = (1 + gamma b1/(1-b1)) g_1 (g_0 = 0), clipped to norm 1; c_2 uses g_2 - g_1."""
    b1, b2, gamma, lr = 0.9, 0.99, 0.5, 0.1
    g1 = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    g2 = torch.tensor([[0.1, -0.2]], dtype=torch.float64)
    opt = mars(lr, betas=(b1, b2), eps=0.0, gamma=gamma)
    s = opt.init({"w": torch.zeros(1, 2, dtype=torch.float64)})
    u1, s = opt.update({"w": g1}, s, None)
    c1 = (1 + gamma * b1 / (1 - b1)) * g1
    c1 = c1 / c1.norm()
    torch.testing.assert_close(s.exp_avg["w"], (1 - b1) * c1)
    torch.testing.assert_close(u1["w"], -lr * c1.sign())  # Adam's first step is -lr sign(c)
    u2, s = opt.update({"w": g2}, s, None)
    c2 = g2 + gamma * b1 / (1 - b1) * (g2 - g1)
    c2 = c2 / c2.norm() if c2.norm() > 1 else c2
    m2 = b1 * (1 - b1) * c1 + (1 - b1) * c2
    v2 = b2 * (1 - b2) * c1 ** 2 + (1 - b2) * c2 ** 2
    torch.testing.assert_close(u2["w"], -lr * (m2 / (1 - b1 ** 2)) / (v2 / (1 - b2 ** 2)).sqrt())


def test_batch_dims_clip_per_seed():
    """Stacked seeds with batch_dims=1 give the same update as each seed alone."""
    gen = torch.Generator().manual_seed(3)
    gs = [torch.randn(3, 4, 5, generator=gen) * s for s in (0.01, 10.0)]
    single = mars(0.01)
    batched = mars(0.01, batch_dims=1)
    sb = batched.init({"w": torch.zeros(3, 4, 5)})
    ss = [single.init({"w": torch.zeros(4, 5)}) for _ in range(3)]
    for g in gs:
        ub, sb = batched.update({"w": g}, sb, None)
        for i in range(3):
            ui, ss[i] = single.update({"w": g[i]}, ss[i], None)
            torch.testing.assert_close(ub["w"][i], ui["w"])


def test_least_squares_converges():
    g = torch.Generator().manual_seed(0)
    A, b = torch.randn(20, 5, generator=g), torch.randn(20, 3, generator=g)
    x_star = torch.linalg.lstsq(A, b).solution
    loss = lambda x: 0.5 * ((A @ x - b) ** 2).sum()  # noqa: E731
    opt = mars(0.05)
    p = {"x": torch.zeros(5, 3)}
    s = opt.init(p)
    for _ in range(400):
        u, s = opt.update({"x": A.T @ (A @ p["x"] - b)}, s, p)
        p = apply_updates(p, u)
    assert loss(p["x"]) - loss(x_star) < 1e-2 * loss(torch.zeros(5, 3))


def test_bad_input():
    with pytest.raises(ValueError, match="max_norm"):
        mars(0.1, max_norm=0.0)
    with pytest.raises(ValueError, match="gamma"):
        mars(0.1, gamma=-1.0)
    with pytest.raises(ValueError, match="lr"):
        mars(float("nan"))
    assert_refusals_keep_state(mars(0.1, weight_decay=0.1), (2, 2))


@settings(max_examples=15)
@given(lr=st.floats(1e-4, 0.3), b1=st.floats(0.0, 0.99), b2=st.floats(0.5, 0.9999),
       wd=st.floats(0.0, 0.5), seed=st.integers(0, 99))
def test_gamma_zero_is_adamw_random_hyperparameters(lr, b1, b2, wd, seed):
    gen = torch.Generator().manual_seed(seed)
    x0 = torch.randn(4, 3, generator=gen, dtype=torch.float64)
    x = x0.clone().requires_grad_(True)
    ref = torch.optim.AdamW([x], lr=lr, betas=(b1, b2), weight_decay=wd)
    opt = mars(lr, betas=(b1, b2), weight_decay=wd, gamma=0.0, max_norm=None)
    p, s = {"w": x0}, opt.init({"w": x0})
    for _ in range(4):
        g = torch.randn(4, 3, generator=gen, dtype=torch.float64)
        x.grad = g.clone()
        ref.step()
        u, s = opt.update({"w": g}, s, p)
        p = apply_updates(p, u)
    torch.testing.assert_close(p["w"], x.detach(), rtol=1e-9, atol=1e-11)


def test_matches_official_code_recursion_both_branches():
    """AGI-Arena/MARS ``update_fn`` (mars-adamw, is_approx) re-typed: 2-D MARS, 1-D AdamW branch."""
    lr, b1, b2, eps, wd, gamma, f1d, bb, wd1 = 0.02, 0.9, 0.99, 1e-8, 0.1, 0.3, 0.5, (0.8, 0.9), 0.05
    gen = torch.Generator().manual_seed(11)
    W, b = torch.randn(4, 3, generator=gen, dtype=torch.float64), torch.randn(3, generator=gen, dtype=torch.float64)
    grads = [(torch.randn(4, 3, generator=gen, dtype=torch.float64) * 2,
              torch.randn(3, generator=gen, dtype=torch.float64)) for _ in range(5)]
    opt = mars(lr, betas=(b1, b2), eps=eps, weight_decay=wd, gamma=gamma, lr_1d_factor=f1d,
               betas_1d=bb, weight_decay_1d=wd1)
    p = {"W": W.clone(), "b": b.clone()}
    s = opt.init(p)
    mW, vW, mb, vb, last = (torch.zeros_like(W), torch.zeros_like(W), torch.zeros_like(b),
                            torch.zeros_like(b), torch.zeros_like(W))
    for step, (gW, gb) in enumerate(grads, start=1):
        c = (gW - last) * (gamma * b1 / (1 - b1)) + gW
        if c.norm() > 1:
            c = c / c.norm()
        mW = b1 * mW + (1 - b1) * c
        vW = b2 * vW + (1 - b2) * c * c
        denom = (vW.sqrt() / (1 - b2 ** step) ** 0.5 + eps) * (1 - b1 ** step)
        W = W - lr * (W * wd + mW / denom)
        last = gW
        mb = bb[0] * mb + (1 - bb[0]) * gb
        vb = bb[1] * vb + (1 - bb[1]) * gb * gb
        denom = (vb.sqrt() / (1 - bb[1] ** step) ** 0.5 + eps) * (1 - bb[0] ** step)
        b = b - lr * f1d * (b * wd1 + mb / denom)
        u, s = opt.update({"W": gW, "b": gb}, s, p)
        p = apply_updates(p, u)
        torch.testing.assert_close(p["W"], W)
        torch.testing.assert_close(p["b"], b)

"""AdaMuon: documented RMS 0.2, first step = 0.2 sign(polar(g)), per-matrix batching, smoke."""
import pytest
import torch

from lmo.muon_family import adamuon
from lmo.base import apply_updates
from lmo.polar_factor import polar
from lmo_toy import gaussian as _g, run_lsq
from side_by_side import assert_refusals_keep_state


def test_update_rms_is_0p2_lr_per_matrix():
    lr = 0.5
    opt = adamuon(lr, weight_decay=0.0, ns_dtype=torch.float32)
    s = opt.init({"w": torch.zeros(4, 7, 5, dtype=torch.float64)})
    for i in range(4):
        u, s = opt.update({"w": _g((4, 7, 5), i)}, s, None)
        rms = u["w"].pow(2).mean(dim=(-2, -1)).sqrt()
        torch.testing.assert_close(rms, torch.full((4,), 0.2 * lr, dtype=torch.float64), rtol=1e-6, atol=0)


def test_first_step_is_scaled_sign_of_polar():
    """t=1: v^_1 = O^2, so O^ = sign(O) (up to eps) and D_1 = 0.2 sign(O) (RMS 0.2)."""
    G = _g((6, 4))
    opt = adamuon(1.0, weight_decay=0.0, exact=True, nesterov=False, eps=1e-12)
    u, _ = opt.update({"w": G}, opt.init({"w": torch.zeros(6, 4, dtype=torch.float64)}), None)
    torch.testing.assert_close(u["w"], -0.2 * torch.sign(polar(G)), rtol=1e-6, atol=1e-9)


def test_weight_decay_and_batched_equals_per_matrix():
    G, P = _g((2, 5, 3)), _g((2, 5, 3), 1)
    opt = adamuon(0.1, weight_decay=0.3, ns_dtype=torch.float32)
    ub, _ = opt.update({"w": G}, opt.init({"w": P}), {"w": P})
    nowd = adamuon(0.1, weight_decay=0.0, ns_dtype=torch.float32)
    u0, _ = nowd.update({"w": G}, nowd.init({"w": P}), None)
    torch.testing.assert_close(ub["w"], u0["w"] - 0.1 * 0.3 * P)
    for i in range(2):
        ui, _ = opt.update({"w": G[i]}, opt.init({"w": P[i]}), {"w": P[i]})
        torch.testing.assert_close(ub["w"][i], ui["w"])


def test_least_squares_converges():
    lr = lambda t: 0.05 * (1 - t / 300)  # noqa: E731
    assert run_lsq(adamuon(lr, weight_decay=0.0, ns_dtype=torch.float32)) < 1e-4


def test_bad_input():
    with pytest.raises(ValueError, match="needs"):
        adamuon(0.1).init({"b": torch.zeros(3)})
    with pytest.raises(ValueError, match="momentum"):
        adamuon(0.1, momentum=1.2)
    with pytest.raises(ValueError, match="lr"):
        adamuon(0.0)
    assert_refusals_keep_state(adamuon(0.1), (3, 3))


def test_matches_official_code_recursion():
    """Chongjie-Si/AdaMuon ``step`` re-typed as a loop (exact polar in place of NS)."""
    beta, beta2, eps, lr, wd = 0.9, 0.99, 1e-8, 0.05, 0.1
    grads = [_g((4, 6), 30 + i) for i in range(4)]
    x = _g((4, 6), 3)
    buf, v = torch.zeros_like(x), torch.zeros(24, dtype=torch.float64)
    p = {"w": x.clone()}
    opt = adamuon(lr, momentum=beta, beta2=beta2, eps=eps, weight_decay=wd, exact=True)
    s = opt.init(p)
    for t, g in enumerate(grads, start=1):
        buf = beta * buf + (1 - beta) * g
        U, _, Vh = torch.linalg.svd((1 - beta) * g + beta * buf, full_matrices=False)
        o = (U @ Vh).flatten()
        v = beta2 * v + (1 - beta2) * o * o
        o = o / ((v / (1 - beta2 ** t)).sqrt() + eps)
        o = o * (min(4, 6) ** 0.5 / (o.norm() + eps))
        x = x * (1 - lr * wd) - lr * 0.2 * max(4, 6) ** 0.5 * o.view(4, 6)
        u, s = opt.update({"w": g}, s, p)
        p = apply_updates(p, u)
        torch.testing.assert_close(p["w"], x, rtol=1e-7, atol=1e-9)

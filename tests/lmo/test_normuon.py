"""NorMuon: documented norms, row-wise (per-neuron) normalization, per-matrix batching, smoke."""
import math

import pytest
import torch

from lmo.base import state_dict
from lmo.polar_factor import polar
from lmo.muon_family import normuon
from lmo_toy import gaussian as _g, run_lsq


@pytest.mark.parametrize("shape", [(3, 8, 5), (2, 4, 9)])
def test_rms_scale_has_rms_0p2_per_matrix(shape):
    lr = 0.3
    opt = normuon(lr, ns_dtype=torch.float32)
    s = opt.init({"w": torch.zeros(shape, dtype=torch.float64)})
    for i in range(3):
        u, s = opt.update({"w": _g(shape, i)}, s, None)
        rms = u["w"].pow(2).mean(dim=(-2, -1)).sqrt()
        torch.testing.assert_close(rms, torch.full((shape[0],), 0.2 * lr, dtype=torch.float64))


def test_frobenius_scale_restores_polar_norm():
    m, n, lr = 9, 4, 0.1
    opt = normuon(lr, scale="frobenius", exact=True)
    s = opt.init({"w": torch.zeros(m, n, dtype=torch.float64)})
    u, s = opt.update({"w": _g((m, n))}, s, None)
    # ||polar(G)||_F = sqrt(min(m, n)) for full rank, times Muon's max(1, m/n)^0.5
    expected = lr * math.sqrt(min(m, n)) * math.sqrt(max(1, m / n))
    assert float(u["w"].norm()) == pytest.approx(expected, rel=1e-8)


def test_first_step_rows_are_equalized():
    """Step 1: v_1 = (1 - b2) rowmean(O^2), so every row of the update has the same norm."""
    G = _g((10, 3))  # tall: rows of polar(G) have unequal norms
    O = polar(G)
    assert O.norm(dim=-1).std() > 0.05
    opt = normuon(0.1, exact=True, nesterov=False)
    u, _ = opt.update({"w": G}, opt.init({"w": torch.zeros(10, 3, dtype=torch.float64)}), None)
    rn = u["w"].norm(dim=-1)
    torch.testing.assert_close(rn, torch.full_like(rn, float(rn.mean())))
    # and the direction inside each row is that of polar(G)
    torch.testing.assert_close(u["w"] / rn.unsqueeze(-1), -O / O.norm(dim=-1, keepdim=True))


def test_batched_equals_per_matrix():
    G = _g((3, 6, 4))
    opt = normuon(0.1, ns_dtype=torch.float32, weight_decay=0.1)
    P = _g((3, 6, 4), 7)
    ub, _ = opt.update({"w": G}, opt.init({"w": P}), {"w": P})
    for i in range(3):
        ui, _ = opt.update({"w": G[i]}, opt.init({"w": P[i]}), {"w": P[i]})
        torch.testing.assert_close(ub["w"][i], ui["w"])


def test_least_squares_converges():
    lr = lambda t: 0.05 * (1 - t / 300)  # noqa: E731
    assert run_lsq(normuon(lr, ns_dtype=torch.float32)) < 1e-4


def test_bad_input():
    with pytest.raises(ValueError, match="needs"):
        normuon(0.1).init({"b": torch.zeros(3)})
    with pytest.raises(ValueError, match="scale"):
        normuon(0.1, scale="max")
    with pytest.raises(ValueError, match="beta2"):
        normuon(0.1, beta2=1.0)
    assert normuon(0.1, mu=0.1).hyper["momentum"] == pytest.approx(0.9)
    opt = normuon(0.1)
    s = opt.init({"w": torch.zeros(3, 3)})
    before = state_dict(s)
    with pytest.raises(FloatingPointError, match="w"):
        opt.update({"w": torch.full((3, 3), float("inf"))}, s, None)
    assert all(torch.equal(before[k], v) for k, v in state_dict(s).items())


def _svd_polar(X):
    U, _, Vh = torch.linalg.svd(X, full_matrices=False)
    return U @ Vh


def test_matches_official_code_recursion():
    """zichongli5/NorMuon ``normuon_update`` re-typed as a loop (exact polar in place of NS)."""
    beta, beta2, lr = 0.9, 0.8, 0.05
    grads = [_g((7, 4), 20 + i) for i in range(4)]
    buf, v2 = torch.zeros(7, 4, dtype=torch.float64), torch.zeros(7, 1, dtype=torch.float64)
    ref = []
    for g in grads:
        buf = beta * buf + (1 - beta) * g
        upd = _svd_polar((1 - beta) * g + beta * buf)
        vnorm = upd.norm()
        v2 = beta2 * v2 + (1 - beta2) * (upd * upd).mean(dim=-1, keepdim=True)
        upd = upd / (v2.sqrt() + 1e-10)
        upd = upd * vnorm / (upd.norm() + 1e-10)
        ref.append(-lr * upd * max(1, 7 / 4) ** 0.5)
    opt = normuon(lr, momentum=beta, beta2=beta2, scale="frobenius", exact=True)
    s = opt.init({"w": torch.zeros(7, 4, dtype=torch.float64)})
    for g, r in zip(grads, ref):
        u, s = opt.update({"w": g}, s, None)
        torch.testing.assert_close(u["w"], r)

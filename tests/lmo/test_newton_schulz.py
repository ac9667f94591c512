"""Newton-Schulz vs exact polar (SVD, scipy) and vs torch.optim.Muon's own NS."""
import numpy as np
import pytest
import scipy.linalg
import torch
from hypothesis import given, strategies as st

from lmo.polar_factor import (KELLER_BAND, NS_COEFFICIENTS, newton_schulz, ns_inexactness,
                               polar, resolve_coefficients)

try:
    from torch.optim._muon import _zeropower_via_newtonschulz as torch_ns
except ImportError:  # pragma: no cover - depends on the torch version
    torch_ns = None


def well_conditioned(shape, cond, dtype=torch.float64, seed=0):
    """Random (..., m, n) matrix with singular values spread in [1/cond, 1] (x a scale)."""
    g = torch.Generator().manual_seed(seed)
    *batch, m, n = shape
    k = min(m, n)
    U, _ = torch.linalg.qr(torch.randn(*batch, m, k, generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(*batch, n, k, generator=g, dtype=torch.float64))
    s = torch.linspace(1.0 / cond, 1.0, k, dtype=torch.float64) * 3.7
    return ((U * s) @ V.mT).to(dtype)


shapes = st.tuples(st.integers(1, 9), st.integers(1, 9))
batches = st.lists(st.integers(1, 3), min_size=0, max_size=2)


def test_polar_matches_scipy():
    G = well_conditioned((7, 4), cond=50, seed=1)
    u, _ = scipy.linalg.polar(G.numpy(), side="right")
    np.testing.assert_allclose(polar(G).numpy(), u, atol=1e-10)
    Gw = G.mT.contiguous()
    u, _ = scipy.linalg.polar(Gw.numpy(), side="right")
    np.testing.assert_allclose(polar(Gw).numpy(), u, atol=1e-10)


def test_polar_rank_deficient_and_zero():
    g = torch.Generator().manual_seed(2)
    G = torch.randn(6, 1, generator=g, dtype=torch.float64) @ torch.randn(1, 5, generator=g, dtype=torch.float64)
    P = polar(G)
    sv = torch.linalg.svdvals(P)
    assert torch.allclose(sv[0], torch.tensor(1.0, dtype=torch.float64))
    assert sv[1:].abs().max() < 1e-12                                   # rank kept at 1
    assert torch.allclose((G * P).sum(), torch.linalg.matrix_norm(G, "nuc"))
    assert torch.equal(polar(torch.zeros(3, 4)), torch.zeros(3, 4))


@given(shapes, batches, st.sampled_from(["keller", "polar_express"]))
def test_ns_band_well_conditioned(shape, batch, name):
    G = well_conditioned((*batch, *shape), cond=10, dtype=torch.float32)
    r = ns_inexactness(G, coefficients=name)
    lo, hi = KELLER_BAND
    assert (r["sv_min"] >= lo).all() and (r["sv_max"] <= hi).all(), r


@given(shapes)
def test_ns_band_bf16(shape):
    G = well_conditioned(shape, cond=10, dtype=torch.float32, seed=3)
    r = ns_inexactness(G, dtype=torch.bfloat16)
    lo, hi = KELLER_BAND
    # bf16 rounding (8 mantissa bits) widens the band by a few percent
    assert r["sv_min"] >= lo - 0.05 and r["sv_max"] <= hi + 0.05, r


def test_ns_many_steps_converges_to_polar():
    G = well_conditioned((3, 12, 8), cond=20, seed=4)
    for steps, tol in [(5, 0.99), (40, 1e-9)]:
        err = ns_inexactness(G, coefficients="quintic", steps=steps)["spectral_error"]
        assert (err < tol).all() if steps == 40 else (err > 0.1).all()   # 5 steps: not yet
    # against scipy's polar, independently
    u, _ = scipy.linalg.polar(G[1].numpy())
    np.testing.assert_allclose(newton_schulz(G[1], 40, "quintic").numpy(), u, atol=1e-8)


@given(shapes, batches, st.sampled_from([torch.float32, torch.float64, torch.bfloat16]))
def test_ns_batch_never_mixes(shape, batch, dtype):
    g = torch.Generator().manual_seed(5)
    G = torch.randn(*batch, 2, *shape, generator=g).to(dtype)
    G[..., 0, :, :] *= 1000.0                                      # one slice much larger
    out = newton_schulz(G)
    assert out.dtype == dtype and out.shape == G.shape
    flat_in, flat_out = G.reshape(-1, *shape), out.reshape(-1, *shape)
    tol = 3e-2 if dtype == torch.bfloat16 else 1e-5
    for i in range(flat_in.shape[0]):
        one = newton_schulz(flat_in[i])
        assert torch.allclose(flat_out[i].double(), one.double(), atol=tol), i


def test_ns_zero_and_orientation():
    assert torch.equal(newton_schulz(torch.zeros(2, 3, 4)), torch.zeros(2, 3, 4))
    G = well_conditioned((9, 5), cond=5, seed=6)
    assert (G * newton_schulz(G)).sum() > 0                          # U V^T, not its negative


@pytest.mark.skipif(torch_ns is None, reason="torch.optim._muon not available")
@pytest.mark.parametrize("shape", [(64, 32), (32, 64), (48, 48), (5, 130)])
def test_ns_equals_torch_muon_bf16(shape):
    g = torch.Generator().manual_seed(7)
    G = torch.randn(*shape, generator=g)
    ref = torch_ns(G, NS_COEFFICIENTS["keller"][0], 5, 1e-7)
    ours = newton_schulz(G, dtype=torch.bfloat16)
    assert ours.dtype == torch.float32
    # same operations in the same order -> equal up to the final bf16 -> fp32 cast
    assert torch.allclose(ours, ref.float(), atol=1e-2, rtol=0)
    assert (ours - ref.float()).abs().max() <= 2 ** -7 * ref.float().abs().max()


def test_user_coefficients():
    G = well_conditioned((6, 4), cond=3, seed=8)
    one = newton_schulz(G, 5, (3.4445, -4.7750, 2.0315))
    assert torch.allclose(one, newton_schulz(G, 5, "keller"))
    per_step = newton_schulz(G, 5, NS_COEFFICIENTS["polar_express"], safety=1.02)
    assert torch.allclose(per_step, newton_schulz(G, 5, "polar_express"))
    assert len(resolve_coefficients("polar_express", 3)) == 3


@pytest.mark.parametrize("bad", [[(1.0, 2.0)], [], "nope", [(1.0, 2.0, float("nan"))],
                                 [(1, 2, 3)] * 2, 3.0, [("a", "b", "c")]])
def test_bad_coefficients_raise(bad):
    with pytest.raises(ValueError, match="coefficients"):
        newton_schulz(torch.randn(3, 3), steps=5, coefficients=bad)


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="G"):
        newton_schulz(torch.randn(5))
    with pytest.raises(ValueError, match="G"):
        newton_schulz(torch.ones(3, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="steps"):
        newton_schulz(torch.randn(3, 3), steps=-1)
    with pytest.raises(ValueError, match="steps"):
        newton_schulz(torch.randn(3, 3), steps=6, coefficients="polar_express")
    with pytest.raises(ValueError, match="eps"):
        newton_schulz(torch.randn(3, 3), eps=0.0)


@pytest.mark.parametrize("m,k", [(520, 37), (700, 5), (100, 9)])
def test_sym_product_equals_full_product(m, k, monkeypatch):
    from lmo import polar_factor as ns_mod
    from lmo.polar_factor import sym_product
    monkeypatch.setattr(ns_mod, "SYM_BLOCK", 64)   # 520 / 700 rows -> 9 / 11 blocks
    g = torch.Generator().manual_seed(9)
    X = torch.randn(m, k, generator=g, dtype=torch.float64)
    C = X @ X.mT
    torch.testing.assert_close(sym_product(X), X @ X.mT)
    torch.testing.assert_close(sym_product(C, C, beta=-2.0, alpha=0.5), -2.0 * C + 0.5 * C @ C)


def test_ns_blocked_path_matches_plain_formula(monkeypatch):
    from lmo import polar_factor as ns_mod
    monkeypatch.setattr(ns_mod, "SYM_BLOCK", 64)
    # 600 rows = 10 blocks: the unbatched path uses sym_product; the batched one does not
    G = well_conditioned((600, 610), cond=10, dtype=torch.float32, seed=10)
    torch.testing.assert_close(newton_schulz(G), newton_schulz(G[None])[0], atol=1e-5, rtol=0)

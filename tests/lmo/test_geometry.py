"""Geometry properties: LMO optimality, Hölder, tight rho, zero input, batch isolation."""
import math

import pytest
import torch
from hypothesis import given, strategies as st

from lmo.geometry import (ColNorm, Frobenius, L2, RMSToRMS, RowNorm, Sign, Spectral,
                          get_geometry)

EXACT = [Spectral(), RMSToRMS(), Frobenius(), Sign(), L2(), ColNorm(), RowNorm(),
         ColNorm(normalized=True), RowNorm(normalized=False), Sign(event_ndim=1), L2(event_ndim=1)]
MATRIX = [Spectral(), Spectral(method="ns"), RMSToRMS(), Frobenius(), ColNorm(), RowNorm()]
ids = [repr(g) for g in EXACT]

shapes = st.tuples(st.integers(1, 8), st.integers(1, 8))
batches = st.lists(st.integers(1, 3), min_size=0, max_size=2)
dtypes = st.sampled_from([torch.float32, torch.float64])


def rand(shape, dtype=torch.float64, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def tol(dtype):
    return 1e-4 if dtype == torch.float32 else 1e-10


@pytest.mark.parametrize("geo", EXACT, ids=ids)
@given(shape=shapes, batch=batches, dtype=dtypes, seed=st.integers(0, 2 ** 16))
def test_lmo_attains_dual_and_is_feasible(geo, shape, batch, dtype, seed):
    g = rand((*batch, *shape), dtype, seed)
    d = geo.lmo(g)
    assert d.shape == g.shape and d.dtype == dtype
    dual = geo.dual_norm(g).double()
    t = tol(dtype) * (1 + dual.abs())
    assert ((geo.inner(g, d).double() + dual).abs() <= t).all()
    assert (geo.norm(d).double() <= 1 + tol(dtype)).all()


@pytest.mark.parametrize("geo", EXACT, ids=ids)
@given(shape=shapes, batch=batches, seed=st.integers(0, 2 ** 16))
def test_holder_and_rho_never_exceeded(geo, shape, batch, seed):
    g, x = rand((*batch, *shape), seed=seed), rand((*batch, *shape), seed=seed + 1)
    assert (geo.inner(g, x) <= geo.dual_norm(g) * geo.norm(x) + 1e-10).all()
    dims = tuple(range(-min(geo.event_ndim, g.ndim), 0))
    l2 = torch.linalg.vector_norm(g, dim=dims)
    assert (geo.dual_norm(g) <= geo.rho(g.shape) * l2 * (1 + 1e-10)).all()


@pytest.mark.parametrize("geo", EXACT, ids=ids)
@given(shape=shapes, batch=batches)
def test_rho_attained(geo, shape, batch):
    v = geo.rho_witness((*batch, *shape))
    dims = tuple(range(-min(geo.event_ndim, v.ndim), 0))
    ratio = geo.dual_norm(v) / torch.linalg.vector_norm(v, dim=dims)
    torch.testing.assert_close(ratio, torch.full_like(ratio, geo.rho(v.shape)))


def test_rho_values_match_design():
    # docs/design.md §5 A4: nuclear vs Frobenius rho = sqrt(min(m, n)); l_1 vs l_2 rho = sqrt(d)
    assert Spectral().rho((6, 4)) == math.sqrt(4)
    assert Sign().rho((6, 4)) == math.sqrt(24)
    assert Sign(event_ndim=1).rho((6, 4)) == math.sqrt(4)
    assert RMSToRMS().rho((6, 4)) == pytest.approx(math.sqrt(6 / 4 * 4))


@pytest.mark.parametrize("geo", EXACT + [Spectral(method="ns")], ids=ids + ["ns"])
def test_zero_gives_zero(geo):
    for shape in [(3, 4), (2, 1, 5), (4, 1)]:
        d = geo.lmo(torch.zeros(shape))
        assert torch.equal(d, torch.zeros(shape))


def test_zero_column_and_rank_deficient():
    g = rand((5, 4), seed=3)
    g[:, 1] = 0
    g[2, :] = 0
    for geo in EXACT:
        d = geo.lmo(g)
        assert torch.isfinite(d).all()
        torch.testing.assert_close(geo.inner(g, d), -geo.dual_norm(g))


@pytest.mark.parametrize("geo", EXACT + [Spectral(method="ns")], ids=ids + ["ns"])
@given(shape=shapes, batch=st.lists(st.integers(1, 3), min_size=1, max_size=2))
def test_batch_never_mixes(geo, shape, batch):
    g = rand((*batch, *shape), seed=4)
    g.view(-1, *shape)[0] *= 1e3
    d, nrm, dual = geo.lmo(g), geo.norm(g), geo.dual_norm(g)
    flat = g.reshape(-1, *shape)
    for i in range(flat.shape[0]):
        torch.testing.assert_close(d.reshape(-1, *shape)[i], geo.lmo(flat[i]), atol=1e-6, rtol=1e-6)
        if geo.event_ndim >= 2:
            torch.testing.assert_close(nrm.reshape(-1)[i], geo.norm(flat[i]))
            torch.testing.assert_close(dual.reshape(-1)[i], geo.dual_norm(flat[i]))


def test_ns_lmo_close_to_svd_lmo():
    g = rand((16, 8), seed=5)
    exact, approx = Spectral().lmo(g), Spectral(method="ns", ns_steps=5).lmo(g)
    assert (exact * approx).sum() > 0.8 * (exact * exact).sum()
    assert Spectral(method="ns").inner(g, approx) < 0


@pytest.mark.parametrize("geo", MATRIX, ids=[repr(g) for g in MATRIX])
def test_vector_to_matrix_lmo_raises(geo):
    with pytest.raises(ValueError, match=r"\bg\b must be a matrix"):
        geo.lmo(torch.randn(7))


def test_entrywise_accepts_vectors():
    g = rand((7,), seed=6)
    torch.testing.assert_close(Sign().lmo(g), -torch.sign(g))
    torch.testing.assert_close(L2().dual_norm(g), torch.linalg.vector_norm(g))


def test_get_geometry_and_bad_args():
    assert isinstance(get_geometry("spectral", method="ns"), Spectral)
    assert get_geometry("sign", event_ndim=1).event_ndim == 1
    with pytest.raises(ValueError, match="name"):
        get_geometry("nope")
    with pytest.raises(ValueError, match="method"):
        Spectral(method="qr")
    with pytest.raises(ValueError, match="coefficients"):
        Spectral(method="ns", ns_coefficients=[(1.0, 2.0)])
    with pytest.raises(ValueError, match="event_ndim"):
        Sign(event_ndim=0)


def test_a_geometry_without_a_norm_pair_says_what_to_define():
    from lmo.geometry import Geometry

    class Bare(Geometry):
        pass

    with pytest.raises(NotImplementedError, match="Bare: set _norm and _dual"):
        Bare().norm(torch.ones(2, 2))
    with pytest.raises(NotImplementedError, match="override norm and dual_norm"):
        Bare().dual_norm(torch.ones(2, 2))

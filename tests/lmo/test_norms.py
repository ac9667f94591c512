"""Norms vs independent implementations (torch.linalg.matrix_norm, scipy / numpy loops)."""
import math

import numpy as np
import pytest
import scipy.linalg
import torch
from hypothesis import given, strategies as st

from lmo import norms as N

shapes = st.tuples(st.integers(1, 7), st.integers(1, 7))
batches = st.lists(st.integers(1, 3), min_size=0, max_size=2)
dtypes = st.sampled_from([torch.float32, torch.float64])


def rand(shape, dtype=torch.float64, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def per_matrix(fn, x):
    """Apply a numpy function matrix by matrix (an independent batching)."""
    a = x.double().numpy().reshape(-1, *x.shape[-2:])
    return np.array([fn(m) for m in a]).reshape(x.shape[:-2])


@given(shapes, batches, dtypes)
def test_matrix_norms_vs_torch_and_scipy(shape, batch, dtype):
    x = rand((*batch, *shape), dtype)
    tol = dict(rtol=1e-4 if dtype == torch.float32 else 1e-10, atol=1e-6)
    for ours, ord_, sp in [(N.spectral, 2, lambda m: scipy.linalg.norm(m, 2)),
                           (N.nuclear, "nuc", lambda m: scipy.linalg.norm(m, "nuc")),
                           (N.frobenius, "fro", lambda m: scipy.linalg.norm(m, "fro"))]:
        got = ours(x)
        assert got.shape == x.shape[:-2] and got.dtype == dtype
        torch.testing.assert_close(got, torch.linalg.matrix_norm(x, ord=ord_), **tol)
        np.testing.assert_allclose(got.double().numpy(), per_matrix(sp, x), **tol)


@given(shapes, batches, dtypes)
def test_entrywise_and_scion_norms_vs_numpy(shape, batch, dtype):
    x = rand((*batch, *shape), dtype, seed=1)
    m, n = shape
    tol = dict(rtol=1e-4 if dtype == torch.float32 else 1e-10, atol=1e-6)
    checks = [
        (N.linf(x), lambda a: np.abs(a).max()),
        (N.l1(x), lambda a: np.abs(a).sum()),
        (N.l2(x), lambda a: np.sqrt((a ** 2).sum())),
        (N.rms_to_rms(x), lambda a: math.sqrt(n / m) * np.linalg.norm(a, 2)),
        (N.rms_to_rms_dual(x), lambda a: math.sqrt(m / n) * np.linalg.norm(a, "nuc")),
        # ColNorm: max column RMS; dual: sqrt(m) sum of column l2 norms
        (N.colnorm(x), lambda a: max(math.sqrt((a[:, j] ** 2).mean()) for j in range(n))),
        (N.colnorm_dual(x), lambda a: math.sqrt(m) * sum(np.linalg.norm(a[:, j]) for j in range(n))),
        (N.colnorm(x, normalized=True), lambda a: n * max(math.sqrt((a[:, j] ** 2).mean()) for j in range(n))),
        # RowNorm (normalized): sqrt(n) max row l2 norm; dual: sum of row norms / sqrt(n)
        (N.rownorm(x), lambda a: math.sqrt(n) * max(np.linalg.norm(a[i]) for i in range(m))),
        (N.rownorm_dual(x), lambda a: sum(np.linalg.norm(a[i]) for i in range(m)) / math.sqrt(n)),
        (N.rownorm(x, normalized=False), lambda a: max(np.linalg.norm(a[i]) for i in range(m))),
    ]
    for got, ref in checks:
        assert got.dtype == dtype
        np.testing.assert_allclose(got.double().numpy(), per_matrix(ref, x), **tol)


@given(st.integers(1, 4), st.integers(1, 4))
def test_event_ndim_caps_and_reduces(k, ndim):
    x = rand(tuple(range(2, 2 + ndim)), seed=2)
    kk = min(k, ndim)
    ref = x.abs().reshape(*x.shape[:ndim - kk], -1).sum(-1)
    torch.testing.assert_close(N.l1(x, event_ndim=k), ref)


def test_inner_is_per_batch():
    g, d = rand((3, 4, 5), seed=3), rand((3, 4, 5), seed=4)
    torch.testing.assert_close(N.inner(g, d), torch.einsum("bij,bij->b", g, d))


@pytest.mark.parametrize("fn", [N.spectral, N.nuclear, N.frobenius, N.rms_to_rms,
                                N.colnorm, N.rownorm_dual])
def test_matrix_norm_rejects_vector(fn):
    with pytest.raises(ValueError, match=r"\b(x|g)\b must be a matrix"):
        fn(torch.randn(5))


def test_bad_event_ndim_and_dtype():
    with pytest.raises(ValueError, match="event_ndim"):
        N.l1(torch.randn(3), event_ndim=0)
    with pytest.raises(ValueError, match="floating"):
        N.linf(torch.ones(3, dtype=torch.int32))

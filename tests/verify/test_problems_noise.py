"""Certificates vs numerical lower estimates and independent computations; exact sigma."""
import math

import pytest
import torch
from hypothesis import given, strategies as st
from scipy import stats

from lmo.geometry import L2, Frobenius, Sign, Spectral
from verify.noise import Aligned, Anisotropic, Gaussian, StudentT, make_noise
from verify.problems import (random_cosine_sum, random_least_squares, random_psd, random_quadratic,
                             sign_constant_enumerated, vector_quadratic)

GEOS = {"spectral": Spectral(), "frobenius": Frobenius(), "sign": Sign()}


@given(kind=st.sampled_from(["quadratic", "least_squares", "cosine_sum", "vector"]),
       geo=st.sampled_from(["spectral", "frobenius", "sign"]), m=st.integers(1, 4), n=st.integers(1, 4),
       seed=st.integers(0, 1000))
def test_certified_L_at_least_numerical_lower_estimate(kind, geo, m, n, seed):
    g = torch.Generator().manual_seed(seed)
    G = GEOS[geo] if kind != "vector" else (Sign() if geo == "sign" else L2())
    if kind == "quadratic":
        p = random_quadratic(m, n, G, g, cond_a=20.0)
    elif kind == "least_squares":
        p = random_least_squares(m, n, G, g)
    elif kind == "cosine_sum":
        p = random_cosine_sum(m, n, G, g)
    else:
        p = vector_quadratic(random_psd(n, g, 30.0), G)
    lower = p.L_lower(torch.Generator().manual_seed(seed + 1), restarts=8, iters=10)
    assert lower <= p.L * (1 + 1e-8)  # rounding of the finite-difference ratio only
    if p.certificate().exact and kind != "cosine_sum":  # the alternating ascent finds the optimum
        assert lower >= 0.9 * p.L


def test_spectral_L_attained_by_the_aligned_witness():
    """sum a_i b_i is attained by D = U I V^T, checked with torch.linalg.svd's nuclear norm."""
    g = torch.Generator().manual_seed(0)
    A, B = random_psd(3, g, 5.0), random_psd(5, g, 7.0)
    p = random_quadratic(3, 5, Spectral(), g)
    p = type(p)(A, B, p.Xstar, Spectral())
    ea, U = torch.linalg.eigh(A)
    eb, V = torch.linalg.eigh(B)
    D = U.flip(-1) @ torch.eye(3, 5, dtype=torch.float64) @ V.flip(-1).T
    nuc = torch.linalg.svdvals(A @ D @ B).sum()
    assert float(torch.linalg.matrix_norm(D, 2)) == pytest.approx(1.0)
    assert float(nuc) == pytest.approx(p.L, rel=1e-10)


def test_sign_enumeration_matches_brute_force_over_random_cube_points():
    g = torch.Generator().manual_seed(3)
    H = random_psd(5, g, 10.0)
    L = sign_constant_enumerated(torch.ones((1, 1), dtype=torch.float64), H)
    V = torch.rand((20000, 5), generator=g, dtype=torch.float64) * 2 - 1
    assert float((V @ H).abs().sum(-1).max()) <= L + 1e-12
    # the l_inf -> l_1 norm of H by scipy-free independent enumeration
    import itertools
    best = max(float((torch.tensor(v, dtype=torch.float64) @ H).abs().sum())
               for v in itertools.product([-1, 1], repeat=5))
    assert best == pytest.approx(L, rel=1e-12)


def test_least_squares_fstar_and_grad_against_autograd():
    g = torch.Generator().manual_seed(1)
    p = random_least_squares(3, 2, Spectral(), g, N=7)
    X = torch.randn((3, 2), generator=g, dtype=torch.float64, requires_grad=True)
    p.f(X).backward()
    assert torch.allclose(X.grad, p.grad(X.detach()), atol=1e-12)
    assert p.f(p.Xstar) == pytest.approx(p.f_star)
    assert float(p.f(X.detach())) >= p.f_star


def test_cosine_sum_grad_against_autograd_and_fstar():
    g = torch.Generator().manual_seed(2)
    p = random_cosine_sum(3, 3, Sign(), g)
    X = torch.randn((4, 3, 3), generator=g, dtype=torch.float64, requires_grad=True)
    p.f(X).sum().backward()
    assert torch.allclose(X.grad, p.grad(X.detach()), atol=1e-12)
    assert float(p.f(X.detach()).min()) >= 0.0 and float(p.f(p.Xstar)) == 0.0


@pytest.mark.parametrize("name", ["gaussian", "anisotropic", "student_t", "aligned"])
def test_noise_second_moment_is_sigma_squared(name):
    """E||xi||_2^2 = sigma^2: a two-sided 99.9% t-interval of the empirical mean contains it,
    and the mean is zero per entry (|t| < 4)."""
    sigma, shape, R = 1.7, (4000, 3, 4), 4000
    nz = make_noise(name, sigma, shape=(3, 4))
    g = torch.Generator().manual_seed(5)
    direction = Spectral().lmo(torch.randn(shape, generator=g, dtype=torch.float64))
    xi = nz.sample(shape, g, direction=direction)
    sq = (xi ** 2).sum((-2, -1)).numpy()
    half = stats.t.ppf(0.9995, R - 1) * sq.std(ddof=1) / math.sqrt(R)
    assert abs(sq.mean() - sigma ** 2) <= half + 1e-12
    tstat = xi.mean(0) / (xi.std(0) / math.sqrt(R))
    assert float(tstat.abs().max()) < 4.5


def test_aligned_noise_is_along_direction_and_attains_rho():
    g = torch.Generator().manual_seed(0)
    D = Spectral().lmo(torch.randn((8, 3, 5), generator=g, dtype=torch.float64))
    xi = Aligned(2.0).sample((8, 3, 5), g, direction=D)
    assert torch.allclose((xi ** 2).sum((-2, -1)), torch.full((8,), 4.0, dtype=torch.float64))
    assert torch.allclose(Spectral().dual_norm(xi), torch.full((8,), 2.0 * math.sqrt(3), dtype=torch.float64))


def test_bad_inputs_fail_loudly():
    with pytest.raises(ValueError, match="sigma"):
        Gaussian(-1.0)
    with pytest.raises(ValueError, match="df"):
        StudentT(1.0, df=2)
    with pytest.raises(ValueError, match="weights"):
        Anisotropic(1.0, torch.zeros(2, 2))
    with pytest.raises(ValueError, match="direction"):
        Aligned(1.0).sample((2, 2, 2), torch.Generator())
    with pytest.raises(ValueError, match="A must be"):
        random_quadratic(2, 2, Spectral(), torch.Generator()).__class__(-torch.eye(2), torch.eye(2), torch.zeros(2, 2), Spectral())

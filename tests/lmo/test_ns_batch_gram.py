"""Batched Newton-Schulz agrees with the 2-D path; grouping same-shape matrices
(newton_schulz_many, Muon's step) changes nothing; Gram NS equals plain NS in exact
arithmetic and stays inside the plain band in low precision (with its restart)."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from lmo.muon_family import muon
from lmo.polar_factor import KELLER_BAND, newton_schulz, newton_schulz_many, ns_inexactness

TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.bfloat16: 2 ** -6}


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(2, 4),
       st.sampled_from([torch.float64, torch.float32, torch.bfloat16]),
       st.sampled_from(["keller", "polar_express"]), st.integers(0, 2 ** 16))
def test_batched_slice_equals_2d_path(m, n, b, dtype, coeffs, seed):
    G = torch.randn(b, m, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    out = newton_schulz(G, coefficients=coeffs, dtype=dtype)
    for i in range(b):
        one = newton_schulz(G[i], coefficients=coeffs, dtype=dtype)
        assert (out[i] - one).abs().max() <= TOL[dtype], i


@settings(max_examples=20, deadline=None)
@given(st.lists(st.sampled_from([(5, 8), (8, 5), (6, 6), (3, 7), (1, 4)]), min_size=1, max_size=7),
       st.sampled_from([torch.float64, torch.float32]), st.integers(0, 2 ** 16))
def test_many_equals_one_by_one(shapes, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    Gs = [torch.randn(*s, generator=g, dtype=dtype) for s in shapes]
    for got, G in zip(newton_schulz_many(Gs), Gs):
        assert got.shape == G.shape and got.dtype == G.dtype
        assert (got - newton_schulz(G)).abs().max() <= TOL[dtype]


def test_muon_step_with_same_shape_groups_equals_per_matrix_steps():
    g = torch.Generator().manual_seed(1)
    shapes = {"q": (8, 8), "o": (8, 8), "up": (16, 8), "down": (8, 16), "k": (4, 8)}
    p = {k: torch.randn(*s, generator=g) for k, s in shapes.items()}
    grads = {k: torch.randn(*s, generator=g) for k, s in shapes.items()}
    opt = muon(0.02, ns_dtype=torch.float32)
    u, _ = opt.update(grads, opt.init(p), p)
    for k in shapes:
        one = muon(0.02, ns_dtype=torch.float32)
        ui, _ = one.update({k: grads[k]}, one.init({k: p[k]}), {k: p[k]})
        torch.testing.assert_close(u[k], ui[k], atol=1e-6, rtol=0)


@pytest.mark.parametrize("shape", [(16, 64), (64, 16), (3, 12, 40), (20, 20)])
@pytest.mark.parametrize("coeffs", ["keller", "polar_express"])
def test_gram_equals_plain_in_fp64(shape, coeffs):
    G = torch.randn(*shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    for restarts in [(), (2,), (1, 3)]:
        torch.testing.assert_close(newton_schulz(G, coefficients=coeffs, method="gram", restarts=restarts),
                                   newton_schulz(G, coefficients=coeffs), atol=1e-10, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gram_inexactness_within_plain_band(dtype):
    from tests.lmo.test_newton_schulz import well_conditioned
    G = well_conditioned((4, 32, 128), cond=10, dtype=torch.float32, seed=3)
    plain = ns_inexactness(G, dtype=dtype)
    gram = ns_inexactness(G, dtype=dtype, method="gram")
    lo, hi = KELLER_BAND
    slack = 0.05 if dtype == torch.bfloat16 else 0.0
    assert (gram["sv_min"] >= lo - slack).all() and (gram["sv_max"] <= hi + slack).all(), gram
    # Gram NS is as far from polar(G) as plain NS, up to the rounding of dtype
    assert (gram["spectral_error"] - plain["spectral_error"]).abs().max() < (0.03 if slack else 1e-4)


def test_gram_zero_matrix_and_bad_method():
    assert torch.equal(newton_schulz(torch.zeros(3, 8), method="gram"), torch.zeros(3, 8))
    with pytest.raises(ValueError, match="method"):
        newton_schulz(torch.randn(3, 3), method="fast")
    with pytest.raises(ValueError, match="ns_method"):
        muon(0.02, ns_method="fast")


def test_ns_bench_quick_reports_every_column():
    """The NS benchmark runs end to end (no timing asserted)."""
    from lmo.bench.ns import main
    rows = main(quick=True)
    assert len(rows) == 8
    for r in rows:
        assert all(r[k] > 0 for k in ("ns_ms", "gram_ms", "torch_ms", "svd_ms", "bound_ms"))


@pytest.mark.parametrize("name", ["muon", "normuon", "adamuon"])
def test_muon_family_gram_option_equals_standard_in_fp64(name):
    import lmo
    g = torch.Generator().manual_seed(5)
    p = {"a": torch.randn(6, 20, generator=g, dtype=torch.float64),
         "b": torch.randn(20, 6, generator=g, dtype=torch.float64)}
    grads = {k: torch.randn(v.shape, generator=g, dtype=torch.float64) for k, v in p.items()}
    outs = []
    for method in ("standard", "gram"):
        opt = getattr(lmo, name)(0.02, ns_dtype=torch.float64, ns_method=method)
        outs.append(opt.update(grads, opt.init(p), p)[0])
    for k in p:
        torch.testing.assert_close(outs[0][k], outs[1][k], atol=1e-10, rtol=0)

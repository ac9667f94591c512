"""Batched Monte Carlo vs per-seed runs; valid bounds hold; planted wrong bounds are caught."""
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, find, given, settings

from lmo.geometry import Sign, Spectral
from theory.records.registry import all_bounds, get
from verify.check import check_bound, check_run, one_sided_t
from verify.montecarlo import run
from verify.planted_bounds import catching_scenario, mutants
from verify.noise import Aligned, Gaussian, StudentT
from verify.problems import random_cosine_sum, random_quadratic, vector_quadratic
from verify.strategies import Instance, instances

VALID = [b for b in all_bounds() if b.valid]


@pytest.mark.parametrize("variant", ["sync", "delayed", "ef", "pipedream"])
@pytest.mark.parametrize("noise", [Gaussian(0.7), Aligned(0.7), StudentT(0.7, 3)])
def test_batched_equals_per_seed_slice_for_slice(variant, noise):
    p = random_quadratic(3, 4, Spectral(), torch.Generator().manual_seed(1))
    full = run(p, noise, variant, 0.05, 0.3, 12, 5, seed=7)
    for r in (0, 3):
        one = run(p, noise, variant, 0.05, 0.3, 12, 5, seed=7, select=slice(r, r + 1))
        for k, v in full.series.items():
            np.testing.assert_allclose(one.series[k][:, 0], v[:, r], rtol=1e-9, atol=1e-12, err_msg=k)
        for k, v in full.averages.items():
            np.testing.assert_allclose(one.averages[k][0], v[r], rtol=1e-9, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("variant", ["sync", "delayed", "ef"])
def test_recursion_against_an_explicit_scalar_loop(variant):
    """1-D sign LMO, sigma = 0: m_0 = g_0, m_t = (1-mu) m + mu g, d = -eta sign(m), the
    variant's application rule, written out with Python floats."""
    h, xs, x0, eta, mu, K = 2.0, 1.0, 5.0, 0.3, 0.4, 15
    p = vector_quadratic(torch.full((1, 1), h), Sign(), xstar=torch.full((1, 1), xs), x0=torch.full((1, 1), x0))
    res = run(p, Gaussian(0.0), variant, eta, mu, K, 1)
    x, m, d1, d2, xs_seen, errs = x0, None, 0.0, 0.0, [], []
    for t in range(K):
        gx = h * (x - xs)
        m = gx if m is None else (1 - mu) * m + mu * gx
        d = -eta * float(np.sign(m))
        y = {"sync": x, "delayed": x + d1, "ef": x + d1 - d2}[variant]
        errs.append(abs(m - h * (y - xs)))
        xs_seen.append(x)
        x += {"sync": d, "delayed": d1, "ef": 2 * d1 - d2}[variant]
        d1, d2 = d, d1
    np.testing.assert_allclose(res.series["err_y"][:, 0], errs, atol=1e-12)
    f = [0.5 * h * (v - xs) ** 2 for v in xs_seen]
    np.testing.assert_allclose(res.series["f"][:, 0], f, atol=1e-12)


def test_one_sided_t_against_scipy():
    x = np.random.default_rng(0).normal(size=(3, 50))
    mean, lcb, ucb = one_sided_t(x, 0.05, 1)
    from scipy import stats
    lo = [stats.t.interval(0.90, 49, loc=r.mean(), scale=stats.sem(r))[0] for r in x]
    np.testing.assert_allclose(lcb, lo, rtol=1e-10)
    np.testing.assert_allclose(ucb - mean, mean - lcb)


@pytest.mark.parametrize("name", sorted(mutants()))
def test_planted_wrong_bounds_are_caught(name):
    sc = catching_scenario(name)
    res = run(**sc)
    bad = check_bound(mutants()[name], res)
    assert bad.violated and bad.tightness > 1.05
    base = get(mutants()[name].note.split()[2].rstrip(":"))
    assert not check_bound(base, res).violated  # the unmutated bound survives the same run


def test_paper_literal_reading_caught_when_f_is_rescaled():
    sc = catching_scenario("literal_8Leta2")
    res = run(**sc)
    assert check_bound(get("paper_delayed_noise_literal"), res).violated
    assert not check_bound(get("derived_delayed_lemma"), res).violated


@settings(max_examples=12, suppress_health_check=list(HealthCheck))
@given(instances(max_dim=3, max_steps=25))
def test_valid_bounds_hold_on_generated_instances(inst):
    res = inst.run(seeds=8)
    for c in check_run(res, VALID):
        assert not c.violated, (inst, c)


def test_valid_bounds_hold_on_a_nonconvex_problem_with_aligned_noise():
    p = random_cosine_sum(4, 4, Spectral(), torch.Generator().manual_seed(0), scale=3.0)
    for v in ("sync", "delayed", "ef", "pipedream"):
        res = run(p, Aligned(0.5), v, 0.05, 0.2, 60, 32, stride=3)
        for c in check_run(res, VALID):
            assert not c.violated, c


def test_shrinking_a_planted_counterexample_gives_a_readable_minimal_example():
    mut = mutants()["delay_dropped"]
    ex = find(instances(variants=("delayed",), max_steps=30),
              lambda i: check_bound(mut, i.run(seeds=2)).violated,
              settings=settings(max_examples=200, database=None))
    assert isinstance(ex, Instance)
    assert ex.m == 1 and ex.n == 1 and ex.steps <= 3 and ex.sigma == 0.0  # minimal
    assert check_bound(mut, eval(repr(ex), {"Instance": Instance}).run(seeds=2)).violated  # repr reproduces
    assert len(repr(ex)) < 300


def test_cli_help_and_adversarial_search_finds_the_paper_reading_false():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "verify", "--help"], capture_output=True, text=True, check=True)
    assert "--quick" in out.stdout and "--out" in out.stdout
    from verify.adversarial import search
    r = search(get("paper_delayed_noise_consistent"), Instance(kind="vector", geometry="sign", noise="gaussian"),
               n_random=4, n_local=0, seeds=4, steps=30, confirm_seeds=8)
    assert r["violated"] and r["confirmed_ratio"] > 1


@pytest.mark.skipif(not __import__("verify.variants").variants.lmo_available(),
                    reason="lmo.lmo_momentum (with m_0 = g_0) / lmo.delay / lmo.error_feedback not in the tree yet")
@pytest.mark.parametrize("variant", ["sync", "delayed", "ef", "pipedream"])
def test_lmo_backend_equals_the_reference_recursion(variant):
    p = random_quadratic(3, 3, Spectral(), torch.Generator().manual_seed(4))
    a = run(p, Gaussian(0.5), variant, 0.05, 0.2, 10, 3, backend="lmo")
    b = run(p, Gaussian(0.5), variant, 0.05, 0.2, 10, 3, backend="reference")
    for k in a.series:
        np.testing.assert_allclose(a.series[k], b.series[k], rtol=1e-7, atol=1e-9, err_msg=k)

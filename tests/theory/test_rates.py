"""Optimised rates (exponent -1/4 for all variants), Kovalev's 31/32 recheck, the delay price."""
import numpy as np
import pytest
import sympy as sp

from theory.results import rates
from theory.records.registry import get
from theory.records.symbols import Delta_0, K, L, eta, mu, rho, sigma


@pytest.mark.parametrize("variant", ["sync", "delayed", "ef"])
def test_numeric_optimum_rate_exponent_is_minus_quarter(variant):
    slope = rates.rate_exponent(variant, Ks=np.geomspace(1e8, 1e14, 5), L=2.0, sigma=0.5, rho=3.0,
                                Delta_0=4.0)
    assert slope == pytest.approx(-0.25, abs=2e-3)


def test_leading_order_symbolic():
    lo = rates.leading_order()
    assert lo["exponent"] == sp.Rational(-1, 4)
    want = 4 * (2 * L * Delta_0) ** sp.Rational(1, 4) * sp.sqrt(rho * sigma) * K ** sp.Rational(-1, 4)
    assert sp.simplify(lo["value"] - want) == 0


def test_numeric_optimum_beats_scipy_grid_and_matches_leading_order():
    c = dict(L_=1.5, sigma_=2.0, rho_=1.0, Delta_0_=3.0)
    val, e, m = rates.optimize_bound(1e12, "delayed", **c)
    f = get("derived_delayed_theorem")
    E, M = np.meshgrid(np.geomspace(e / 3, e * 3, 41), np.geomspace(m / 3, min(1, m * 3), 41))
    grid = f.evaluate(eta=E, mu=M, K=1e12, L=1.5, sigma=2.0, rho=1.0, Delta_0=3.0)
    assert val <= grid.min() * (1 + 1e-9)
    lead = 4 * (2 * 1.5 * 3.0) ** 0.25 * np.sqrt(2.0) * 1e12 ** -0.25
    assert val == pytest.approx(lead, rel=2e-3)


def test_kovalev_31_32_recheck():
    r = rates.kovalev_recheck("kovalev")
    eps = rates.eps
    for regime in ("noise", "deterministic"):
        assert r[regime]["sup_T_over_eps"] == sp.Rational(23, 32)
        assert r[regime]["grid_max"] == pytest.approx(23 / 32, abs=1e-9)
    assert sp.simplify(r["noise"]["K"] - (1024 * L * Delta_0 * rho**2 * sigma**2 / eps**4
                                         + 128 * rho**3 * sigma**3 / eps**3)) == 0
    # plug the K back in: the bound is exactly 31/32 eps at the worst z (= 1) and below elsewhere
    B = get("kovalev_sync_theorem").expr
    for epsv in (0.01, 0.5, 3.99, 4.0, 7.0):
        c = {L: 1.3, rho: 2.0, sigma: 0.5, Delta_0: 2.2, rates.eps: epsv}
        regime = "noise" if epsv <= 4 * 1.0 else "deterministic"
        e_, m_ = rates.kovalev_choice()[regime]
        Kv = r[regime]["K"].subs(c)
        val = float(B.subs({eta: e_, mu: m_}).subs(c).subs(K, Kv))
        assert val <= 31 / 32 * epsv * (1 + 1e-12)
        if epsv == 4.0:
            assert val == pytest.approx(31 / 32 * epsv, rel=1e-12)


@pytest.mark.parametrize("variant,sup", [("sync", sp.Rational(5, 8)), ("delayed", sp.Rational(21, 32)),
                                         ("ef", sp.Rational(25, 32))])
def test_kovalev_choice_on_derived_bounds(variant, sup):
    r = rates.kovalev_recheck(variant)
    assert max(r["noise"]["sup_T_over_eps"], r["deterministic"]["sup_T_over_eps"]) == sup


def test_delay_price_tends_to_one_like_leading_order():
    Ks = np.array([1e6, 1e10])
    p = rates.delay_price(Ks, L=1.0, sigma=1.0, rho=1.0, Delta_0=1.0)
    assert np.all(p > 1) and p[1] < p[0]
    np.testing.assert_allclose(p - 1, rates.delay_price_leading(Ks) - 1, rtol=2e-2)
    pe = rates.delay_price(Ks, variant="ef")
    np.testing.assert_allclose(pe - 1, rates.delay_price_leading(Ks, "ef") - 1, rtol=2e-2)
    s = rates.steps_ratio(0.05)
    assert s == pytest.approx(rates.steps_ratio_leading(0.05), rel=1e-3)


def test_bad_input_named():
    with pytest.raises(ValueError, match="K"):
        rates.optimize_bound(-1.0)
    with pytest.raises(ValueError, match="variant"):
        rates.optimize_bound(10.0, "async")


def test_ef_kappa_interpolates_sync_delayed_and_worst_case():
    K = 1e6
    sync = rates.optimize_bound(K, "sync")[0]
    assert rates.optimize_bound(K, "ef_kappa", kappa=0.0)[0] == pytest.approx(sync, rel=1e-9)
    assert rates.optimize_bound(K, "ef_kappa", kappa=1.0)[0] == pytest.approx(
        rates.optimize_bound(K, "delayed")[0], rel=1e-9)
    assert rates.optimize_bound(K, "ef_kappa", kappa=2.0)[0] == pytest.approx(
        rates.optimize_bound(K, "ef")[0], rel=1e-9)
    p = rates.delay_price([1e4, 1e8], variant="ef_kappa", kappa=0.5)
    np.testing.assert_allclose(p - 1, 0.5 * (rates.delay_price_leading([1e4, 1e8]) - 1), rtol=5e-2)
    with pytest.raises(ValueError, match="kappa"):
        rates.optimize_bound(K, "ef_kappa")

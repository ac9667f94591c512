"""Scaling/units: the literal paper reading fails, the consistent one and every derived bound pass.
Limits: eta -> 0, r = 0, mu = 1; the exact paper-vs-derived comparison."""
import numpy as np
import pytest
import sympy as sp

from theory.records import registry
from theory.checks.limit_identities import limit_checks
from theory.results.limits import compare_on_grid, delay_penalty, paper_vs_derived
from theory.results.scaling import c_f, s_x, scaling_check
from theory.records.symbols import L, dimension_of, eta, is_consistent, mu, rho, sigma


def test_literal_reading_fails_scaling_and_units():
    r = scaling_check(registry.get("paper_delayed_noise_literal"))
    assert not r.ok and "inconsistent" in r.dimension
    assert not is_consistent(registry.get("paper_delayed_noise_literal").expr)


def test_consistent_reading_passes():
    r = scaling_check(registry.get("paper_delayed_noise_consistent"))
    assert r.ok and sp.simplify(r.ratio - c_f / s_x) == 0


@pytest.mark.parametrize("name", [b.name for b in registry.all_bounds() if b.status == "derived"])
def test_every_derived_bound_scales_like_a_gradient(name):
    b = registry.get(name)
    assert scaling_check(b).ok
    assert is_consistent(b.expr)


def test_scaling_numerically_for_literal_reading():
    """Independent numeric version: rescaling f by c changes the literal bound by != c."""
    b = registry.get("paper_delayed_noise_literal")
    base = dict(L=2.0, sigma=1.5, rho=1.0, eta=1.0, mu=0.2)
    c = 10.0
    scaled = dict(base, L=c * base["L"], sigma=c * base["sigma"])
    assert abs(b.evaluate(**scaled) / b.evaluate(**base) - c) > 0.1
    bc = registry.get("paper_delayed_noise_consistent")
    assert bc.evaluate(**scaled) / bc.evaluate(**base) == pytest.approx(c, rel=1e-12)


def test_dimension_checker_rejects_mixed_sums():
    with pytest.raises(ValueError):
        dimension_of(L * eta + sigma * eta)
    assert tuple(dimension_of(L * eta)) == (1, -1)


def test_limits_hold():
    checks = limit_checks()
    assert checks and all(checks.values()), {k: v for k, v in checks.items() if not v}
    pen = delay_penalty()
    assert sp.simplify(pen["lemma"] - L * eta) == 0 and sp.simplify(pen["theorem"] - 2 * L * eta) == 0


def test_paper_vs_derived_exact_and_on_grid():
    r = paper_vs_derived()
    u = sp.Symbol("u", positive=True)
    # P^2 - D^2 = (L eta)^2 (u^2 - 2u/mu + 8 - 1/mu^2)
    assert sp.simplify(r["P2_minus_D2_over_Leta2"] - (u**2 - 2 * u / mu + 8 - 1 / mu**2)) == 0
    g = compare_on_grid()
    # derived tighter everywhere for mu > 1/2
    assert np.all(g["ratio"][g["mu"] > 0.5] >= 1 - 1e-12)
    # for mu <= 1/2 there are points where the paper's value is below the attained derived value
    assert g["min_ratio"] < 1
    # the region is exactly |u - 1/mu| < sqrt(2/mu^2 - 8): check against a direct evaluation
    M, U = np.meshgrid(g["mu"], g["u"], indexing="ij")
    with np.errstate(invalid="ignore"):
        inside = (M <= 0.5) & (np.abs(U - 1 / M) < np.sqrt(np.maximum(2 / M**2 - 8, 0)))
    assert np.array_equal(inside, g["ratio"] < 1)


def test_corner_checks_catch_errors_the_mu_equal_one_identities_cannot_see():
    """t = 0: a halved transient (invisible at mu = 1, t >= 1) leaves a lemma below E||xi_0||_* = rho sigma
    for mu < 1/4; K = 1: a telescope term L eta/4 or a halved Delta_0 term puts the sync theorem's
    inf over eta below sqrt(2 L Delta_0), which ||grad f(x_0)||_* attains on a 1-D quadratic."""
    from theory.checks.limit_identities import corner_checks
    from theory.records.symbols import Delta_0, K, t
    assert all(corner_checks().values())
    half = {"derived_sync_lemma": registry.get("derived_sync_lemma").expr.subs(rho * sigma * (1 - mu) ** t,
                                                                              rho * sigma * (1 - mu) ** t / 2)}
    assert sp.simplify(half["derived_sync_lemma"].subs(t, 1).subs(mu, 1) - rho * sigma) == 0   # mu = 1, t = 1: blind
    assert not corner_checks(half)["t=0: derived_sync_lemma >= rho sigma (E||xi_0||_*, every mu)"]
    key = "K=1, sigma=0, mu=1: inf over eta of derived_sync_theorem >= sqrt(2 L Delta_0)"
    sync_t = registry.get("derived_sync_theorem").expr
    for wrong in (sync_t - L * eta / 4, sync_t - Delta_0 / (2 * eta * K)):
        assert not corner_checks({"derived_sync_theorem": wrong})[key]

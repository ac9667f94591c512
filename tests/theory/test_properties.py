"""Property tests (hypothesis) over random constants: orderings between the bounds and the optimiser."""
import math

from hypothesis import given
from hypothesis import strategies as st

from theory.results import rates
from theory.records import registry

pos = st.floats(1e-3, 1e3)
mus = st.floats(1e-4, 1.0)


def _c(L, sigma, rho, eta, mu, Delta_0, K, t):
    return dict(L=L, sigma=sigma, rho=rho, eta=eta, mu=mu, Delta_0=Delta_0, K=K, t=t, r_w=0.0, r_avg=0.0)


consts = st.builds(_c, pos, pos, st.floats(1.0, 100.0), pos, mus, pos, st.integers(1, 10**6), st.integers(0, 500))


@given(consts)
def test_orderings(c):
    ev = lambda n, **kw: registry.get(n).evaluate(**{**c, **kw})  # noqa: E731
    tol = 1e-12
    assert ev("derived_sync_lemma") <= ev("kovalev_sync_lemma") * (1 + tol)
    assert ev("derived_sync_theorem") <= ev("kovalev_sync_theorem") * (1 + tol)
    assert math.isclose(ev("derived_delayed_lemma") - ev("derived_sync_lemma"), c["L"] * c["eta"],
                        rel_tol=1e-9, abs_tol=1e-9 * ev("derived_delayed_lemma"))
    assert ev("derived_delayed_theorem") <= ev("kovalev_sync_theorem") * (1 + tol)
    assert ev("derived_delayed_theorem") <= ev("derived_ef_theorem_worst") * (1 + tol)
    assert ev("derived_ef_lemma_trajectory", r_w=2 * c["eta"]) == \
        ev("derived_ef_lemma_worst") or math.isclose(
            ev("derived_ef_lemma_trajectory", r_w=2 * c["eta"]), ev("derived_ef_lemma_worst"), rel_tol=1e-12)


@given(st.floats(1e2, 1e12), st.sampled_from(["sync", "delayed", "ef"]),
       st.floats(1e-8, 1.0), st.floats(1e-6, 1.0))
def test_optimum_is_below_any_admissible_point(K, variant, eta, mu):
    val, e, m = rates.optimize_bound(K, variant)
    b = registry.get(rates.THEOREMS[variant])
    assert 0 < m <= 1 and e > 0
    assert val <= b.evaluate(eta=eta, mu=mu, K=K, L=1.0, sigma=1.0, rho=1.0, Delta_0=1.0) * (1 + 1e-7)

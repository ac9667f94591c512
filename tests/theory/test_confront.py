"""Every registered bound, derived or not, is confronted with runs inside check()
(theory.checks.confront): a bound without a derivation is 'not refuted' at best, never 'derived';
a wrong exponent in an underived reading, or a rho cap at 5, makes check() fail."""
import numpy as np
import sympy as sp

from theory.checks.confront import as_step, confront, confront_all, rho_ladder, search_instances, status
from theory.checks.witness_grid import rho_of
from theory.checks.witnesses import instance_values, step_margin
from theory.checks.world import check_world
from theory.proofs.registry import all_derivations, get_derivation
from theory.records import package_bounds as B
from theory.records import paper_readings as PR
from theory.records.registry import all_bounds, get
from theory.records.symbols import L, eta, mu, rho


def test_every_registered_bound_is_confronted_and_none_registered_valid_is_refuted():
    res = confront_all(all_derivations())
    assert set(res) == {b.name for b in all_bounds()}
    assert all(r["ok"] for r in res.values()), {k: r for k, r in res.items() if not r["ok"]}
    proved = {d.bound for d in all_derivations() if d.proves}
    for name, r in res.items():
        assert r["instances"] > 40 or r["status"] == "refuted", name
        if get(name).valid is False:
            assert r["status"] == "refuted", name          # the package's own 'not a valid bound' rows
        elif name in proved:
            assert r["status"] == "derived", name
        else:
            assert r["status"] == "not refuted", name      # confronted only: unchecked, not proved
    assert {n for n, r in res.items() if r["status"] == "not refuted"} == {"paper_c3_y", "paper_c3_x", "paper_c4_x"}


def test_status_without_instances_is_unchecked():
    assert status(False, {"ok": True, "instances": 0}) == "unchecked"
    assert status(True, {"ok": False, "instances": 3}) == "refuted"
    assert confront("x", B.DERIVED_SYNC_LEMMA.expr, "momentum_error_x", "sync", over=())["instances"] == 0


def test_a_wrong_exponent_in_an_underived_reading_fails_check():
    """paper_c3_y has no derivation: before the confrontation nothing in check() evaluated it."""
    wrong = PR.PAPER_C3_Y.expr.xreplace({L * eta / mu: L * eta / sp.sqrt(mu)})
    res = check_world(derivations=[get_derivation("paper_noise_term_alone")], bounds={"paper_c3_y": wrong})
    assert not res["ok"] and "bounds" in res["failed"]
    assert res["bounds"]["paper_c3_y"]["status"] == "refuted"


def test_a_rho_cap_at_five_is_refuted_by_the_rho_ladder():
    """min(rho, 5) in the sync lemma: rho = 5 is where verify's hard-coded starts stopped looking."""
    capped = B.DERIVED_SYNC_LEMMA.expr.xreplace({rho: sp.Min(rho, 5)})
    assert not confront("capped", capped, "momentum_error_x", "sync")["ok"]
    r = confront("capped", capped, "momentum_error_x", "sync", over=rho_ladder())
    assert not r["ok"] and "sigma=50" in r["failed_on"]
    assert sorted({round(rho_of(i)) for i in rho_ladder()}) == [2, 4, 8, 16, 32]


def test_the_margin_is_the_bound_minus_the_measured_quantity():
    """Cross-check with Bound.evaluate on the seed means (the bound is affine in r_w)."""
    inst = search_instances()[0]
    b = get("derived_ef_lemma_trajectory") if inst.variant == "ef" else get(
        {"sync": "derived_sync_lemma", "delayed": "derived_delayed_lemma"}[inst.variant])
    v = instance_values(inst)
    m = step_margin(as_step(b.name, b.expr, b.quantity), v).mean(0)
    T = v["E_t"].shape[1]
    want = b.evaluate(L=v["L"], eta=v["eta"], mu=v["mu"], rho=v["rho"], sigma=v["sigma"], t=np.arange(T, dtype=float),
                      r_w=v["r_w"].mean(0)) - v["E_t"].mean(0)
    assert np.allclose(m, want, rtol=1e-9, atol=1e-9)


def test_the_search_is_seeded_and_spans_the_domain():
    a, b = search_instances(), search_instances()
    assert a == b and len(a) == 3 * 14 and search_instances(14, 1) != a
    rhos = {round(rho_of(i)) for i in a}
    sig = [i.sigma for i in a if i.sigma > 0]
    assert max(rhos) == 32 and min(rhos) == 1 and max(sig) / min(sig) > 100 and any(i.sigma == 0 for i in a)

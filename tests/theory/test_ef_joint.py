"""The joint EF lemma (issue 48 item 2): its chain is checked step by step, its constant is never below
an EF certificate, witnesses in the sign and spectral geometries come close to it, and a planted
constant 0.9 C(mu, t) is caught by the certificates and by the witnesses."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from theory.checks.certificates import ef_joint as CJ
from theory.checks.certificates.relations import mean_lag
from theory.checks.ef_joint_witness import runs, sign_worst
from theory.records import ef_joint as J
from theory.records.symbols import mu as MU, t as T


def test_closed_forms_agree_with_the_numbers():
    for m in (0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0):
        for tt in (2, 3, 8, 30):
            e = float(J.c_step_expr().subs({MU: sp.Rational(str(m)), T: tt}))
            assert math.isclose(e, J.c_step(m, tt), rel_tol=1e-12)
        assert math.isclose(float(J.c_uniform_expr().subs(MU, sp.Rational(str(m)))), J.c_uniform(m), rel_tol=1e-12)
        # the limit, uniform in t, and never above the old constant
        assert math.isclose(J.c_step(m, 600), J.c_uniform(m), rel_tol=1e-6)
        assert all(J.c_step(m, tt) <= J.c_uniform(m) + 1e-12 for tt in range(0, 60))
        assert J.c_uniform(m) <= J.c_old(m) + 1e-12
        assert all(J.c_step(m, tt) <= J.c_old(m, tt) + 1e-12 for tt in range(0, 60))
    assert J.c_uniform(0.5) == pytest.approx(math.sqrt(3)) and J.c_uniform(1.0) == pytest.approx(2.0)
    assert J.c_step(0.5, 8) == pytest.approx(math.sqrt(3 - 4 * 0.5 ** 8))   # the certificate's closed form at mu = 1/2


def test_the_bound_record():
    b = J.DERIVED_EF_LEMMA_JOINT
    assert "A5" in b.assumptions and b.variant == "ef" and b.quantity == "momentum_error_y"
    v = b.evaluate(L=2.0, eta=0.1, mu=0.5, sigma=0.0, rho=1.0, t=3)
    assert v == pytest.approx(2.0 * 0.1 * math.sqrt(3))


def test_algebra_steps_and_chain():
    """Each algebra step of ef_lemma_joint is proved (sympy) or checked numerically, every premise is
    cited, and the assembled chain ends in the bound (theory.checks.chain)."""
    from theory.checks.chain import chain_check
    from theory.checks.step import check_proof_step
    from theory.proofs.ef_joint import ef_lemma_joint
    d = ef_lemma_joint()
    for s in d.steps:
        if s.kind == "algebra" and s.name != "uniform in t":   # that one: test_uniform_step (slow)
            r = check_proof_step(s, n=300)
            assert r.ok and r.method == "symbolic", (s.name, r.detail)
    assert {s.name for s in d.steps if s.kind == "premise"} >= {
        "drift: A2 + triangle inequality, lag and perturbation together", "duality and the parallelogram law (A5)",
        "tangent bound, optimal c (t >= 2)"}
    c = chain_check(d, bound_expr=J.DERIVED_EF_LEMMA_JOINT.expr)
    assert c.ok, c.detail


@pytest.mark.slow
def test_uniform_step():
    """'uniform in t' (C(mu, t) <= C(mu), t >= 2) through the step checker (numeric: Max((1-2mu), 0))."""
    from theory.checks.step import check_proof_step
    from theory.proofs.ef_joint import ef_lemma_joint
    s = next(s for s in ef_lemma_joint().steps if s.name == "uniform in t")
    r = check_proof_step(s, n=2000)
    assert r.ok, r.detail


def test_chain_refuses_a_scaled_constant():
    from theory.checks.chain import chain_check
    from theory.proofs.ef_joint import ef_lemma_joint
    wrong = J.DERIVED_EF_LEMMA_JOINT.expr.subs(J.c_uniform_expr(), sp.Rational(9, 10) * J.c_uniform_expr())
    assert wrong != J.DERIVED_EF_LEMMA_JOINT.expr
    assert not chain_check(ef_lemma_joint(), bound_expr=wrong).ok


def test_premises_on_the_euclidean_star():
    """The drift half's premises in numbers: the Euclidean star maximum (a lower bound on Phi_t by local
    search) is below C(mu, t), and equals the stored certificate (the first two steps lose nothing)."""
    from theory.checks.certificates.stored import VALUES
    for m in (0.1, 0.5, 0.9):
        for tt in (2, 4):
            star = CJ.star_max(m, tt, restarts=3, iters=200)
            assert star <= J.c_step(m, tt) * (1 + 1e-9)
            assert star == pytest.approx(VALUES[("ef", m, tt)], abs=2e-4)


def test_no_new_term_below_a_certificate_and_ratios_at_t8():
    rs = CJ.rows(with_star=False)
    ok, says = CJ.verdict(rs)
    assert ok, says
    t8 = {r.mu: r for r in rs if r.t == 8}
    for m, r in t8.items():
        assert r.ratio_new_t >= r.ratio_old_t - 1e-12
        assert r.ratio_new_t >= 0.95, (m, r.ratio_new_t)
    assert t8[0.5].ratio_old_t == pytest.approx(0.577, abs=1e-3) and t8[0.5].ratio_new_t == pytest.approx(1.0, abs=1e-4)


def test_planted_constant_is_caught_by_the_certificates():
    ok, says = CJ.verdict(CJ.rows(scale=0.9, with_star=False))
    assert not ok and "below a certificate" in says


def test_sign_witness_is_nearly_tight_and_catches_the_planted_constant():
    for m, floor in ((0.05, 0.99), (0.5, 0.95), (0.9, 0.97), (1.0, 0.999)):
        w = sign_worst(m, 8)
        assert w["max_step"] <= 1 + 1e-12
        assert floor <= w["ratio"] <= 1 + 1e-9, (m, w["ratio"])
        assert w["D_t"] > 0.9 * w["bound"]        # 0.9 C(mu, t) would be violated by this witness


def test_sign_witness_is_the_one_dimensional_game():
    """On the line with f' = L|x - y_t| the worst pattern gives sum_j w_j |x_j - y_t|; at mu = 1 it is 2 L eta
    (r_t = 2 eta), at small mu the aligned steps' lag."""
    assert sign_worst(1.0, 5)["D_t"] == pytest.approx(2.0)
    assert sign_worst(0.05, 6, d=1)["D_t"] >= mean_lag(0.05, 6)


def test_runs_do_not_violate_the_joint_constant():
    for m in (0.05, 0.5):
        for g in ("sign", "spectral"):
            r = runs(m, g, T=20, seeds=4)
            assert r["ratio"] <= 1 + 1e-9, r
            assert r["premise_ratio"] <= 1 + 1e-9, r      # D_t <= L J_t (A2), the first drift premise


def test_package_confrontation_passes_the_lemma_and_refutes_the_planted_constant():
    """theory.checks.confront (grid, rho ladder, seeded search; sign and spectral) on the whole lemma."""
    ok, planted = CJ.confront_joint(), CJ.confront_joint(0.9)
    assert ok["ok"] and ok["instances"] > 40, ok
    assert not planted["ok"], planted


def test_docs_hold_the_section_with_the_old_rows():
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "docs" / "proof.md").read_text()
    assert "## The joint EF lemma against the EF certificates" in text
    assert "| mu | t | certified | old_t | ratio old_t | new_t | ratio new_t | new | ratio new | star |" in text


@pytest.mark.slow
def test_spectral_witness_and_resolved_certificates():
    """PEPit re-solves the EF cells at t = 8 and the spectral witness (the PEP's worst case in the first
    column of matrices, interpolable) reaches C(mu, t) within the ratios reported."""
    pytest.importorskip("PEPit")
    from theory.checks.ef_joint_witness import spectral_worst
    vals = CJ.resolve(ts=(8,))
    rs = CJ.rows(values=vals, ts=(8,), with_star=False)
    assert CJ.verdict(rs)[0]
    assert not CJ.verdict(CJ.rows(values=vals, ts=(8,), scale=0.9, with_star=False))[0]
    for m in (0.05, 0.5, 1.0):
        w = spectral_worst(m, 8)
        assert w["interpolation_gap"] > -1e-6 and w["max_step"] <= 1 + 1e-6
        assert 0.99 <= w["ratio"] <= 1 + 1e-5
        assert w["D_t"] > 0.9 * w["bound"]
    assert np.isfinite(vals[(0.3, 8)])

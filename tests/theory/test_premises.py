"""Every premise step is evaluated AS WRITTEN (its own sympy expressions) on the witness grid;
a mis-stated premise is caught, including an understated noise premise (aligned instance), a
premise false only near mu = 1 or only for rho > 5/2, and a drift premise false only far from
the minimiser with sigma = 0."""
import dataclasses

import numpy as np
import pytest
import sympy as sp

from theory.proofs.derivation import W0
from theory.proofs.registry import all_derivations, get_derivation
from theory.records.symbols import L, eta, r_w, rho, sigma, mu
from theory.checks.witness_grid import GRID, INSTANCES, SIGMA_SWEEP, SLOW_CORNERS, Instance, coverage
from theory.checks.witnesses import (all_witnesses, applies, instance_values, mean_ucb, premise_entries,
                                     premise_steps, step_margin, variants_of, witness_premise)

PREMISES = {f"{d.name}: {s.name}" for d in all_derivations() for s in d.steps if s.kind == "premise" and not s.cites}
NOISE = "noise: A4 + Jensen + martingale orthogonality + A3"
DRIFT = "drift: A2 + triangle inequality + y-steps <= eta"
BASE = INSTANCES[:18]


def _step(dname, sname):
    return next(s for s in get_derivation(dname).steps if s.name == sname)


def witness(step, dname="perturbed_lemma", **kw):
    """The witness of ``step`` as a premise of derivation ``dname`` (its variants and mode by id)."""
    return witness_premise(get_derivation(dname), step, **kw)


def test_the_grid_covers_the_domain():
    g = coverage()
    assert {0.05, 0.1, 0.25, 0.5, 0.9, 1.0} <= set(g["mu"])
    assert max(g["rho"]) >= 4 and any(3 < r < 4 for r in g["rho"])
    assert 0.0 in g["sigma"] and len(g["T"]) >= 3
    assert any(i.sigma == 0 and i.x0_scale >= 100 and i.shape == (1,) for i in INSTANCES)   # attaining regime


def test_every_premise_is_witnessed_on_the_grid_and_holds():
    w = all_witnesses()
    assert set(w) == PREMISES == {i for i, _ in premise_steps()}
    for name, r in w.items():
        assert r["ok"], (name, r)
        assert r["samples"] > 0 and r["instances"] >= 26
    assert w["perturbed_lemma: split noise and drift"]["instances"] == len(GRID)
    mode = w[f"perturbed_lemma: {NOISE}"]["mode"]
    assert "Student-t" in mode and "Bonferroni" in mode


def test_false_drift_premise_is_caught_as_written():
    bad = dataclasses.replace(_step("perturbed_lemma", DRIFT), rhs=L * r_w)
    r = witness(bad)
    assert not r["ok"] and r["worst_margin"] < 0


def test_understated_noise_premise_needs_the_aligned_instance():
    bad = dataclasses.replace(_step("perturbed_lemma", NOISE), rhs=sp.Rational(4, 5) * _step("perturbed_lemma", NOISE).rhs)
    assert not witness(bad)["ok"]
    gauss = tuple(i for i in BASE if i.noise == "gaussian")
    assert witness(bad, instances=gauss)["ok"]  # why the aligned instance exists
    # at t = 0 the aligned noise attains the premise: N_0 = rho sigma exactly
    v = instance_values(Instance("sync", "sign", "aligned", (6,), seeds=48))
    assert np.allclose(v["N_t"][:, 0], v["rho"] * v["sigma"])


def test_small_mu_noise_premise_needs_mu_near_one():
    """M1: rho sigma ((1-mu)^t + sqrt(mu/2)) holds at mu = 1/4 but not at mu = 0.9 or 1."""
    bad = dataclasses.replace(_step("perturbed_lemma", NOISE), rhs=rho * sigma * (W0 + sp.sqrt(mu / 2)))
    assert witness(bad, instances=BASE)["ok"]
    r = witness(bad)
    assert not r["ok"] and ("mu=0.9" in r["failed_on"] or "mu=1 " in r["failed_on"])


def test_capped_a4_constant_needs_rho_above_five_halves():
    """M6: min(rho, 5/2) in place of rho holds on every instance with rho <= 2.45, not on rho = 4."""
    step = _step("perturbed_lemma", NOISE)
    bad = dataclasses.replace(step, rhs=step.rhs.xreplace({rho: sp.Min(rho, sp.Rational(5, 2))}))
    small = tuple(i for i in INSTANCES if (i.shape[0] if i.geometry == "sign" else min(i.shape)) <= 6)
    assert witness(bad, instances=small)["ok"]
    r = witness(bad)
    assert not r["ok"] and ("sign16" in r["failed_on"] or "spectral10x12" in r["failed_on"])


def test_half_drift_premise_needs_the_attaining_regime():
    """Far from the minimiser with sigma = 0 the drift premise is attained: halving its lag term
    fails there (a deterministic run), though not on the noisy base instances near the minimiser."""
    step = _step("perturbed_lemma", DRIFT)
    bad = dataclasses.replace(step, rhs=L * r_w + (step.rhs - L * r_w) / 2)
    attaining = tuple(i for i in INSTANCES if i.sigma == 0)
    r = witness(bad, instances=attaining)
    assert not r["ok"] and "sigma=0" in r["failed_on"]


def test_half_eta_cap_is_caught():
    bad = dataclasses.replace(_step("delayed_lemma", "delayed: r_t = ||d_{t-1}|| <= eta"), rhs=eta / 2)
    assert not witness(bad, "delayed_lemma")["ok"]


def test_mean_test_is_a_bonferroni_t_bound():
    x = np.array([[1.0, -1.0], [3.0, -1.0], [2.0, -1.0]])  # column 2 has s = 0: the bound is the mean
    ucb = mean_ucb(x, n_tests=1, alpha=0.01)
    assert np.isclose(ucb[0], 2.0 + 6.964556734 * 1.0 / np.sqrt(3), rtol=1e-6)   # t_{2, 0.99} = 6.9646
    assert ucb[1] == -1.0
    assert mean_ucb(x, n_tests=100)[0] > ucb[0]


def test_step_margin_evaluates_the_expression_itself():
    v = instance_values(Instance("delayed", "sign", "gaussian", (6,), seeds=48))
    s = _step("perturbed_lemma", "split noise and drift")
    m = step_margin(s, v)
    assert m.shape == v["E_t"].shape
    assert np.allclose(m, v["N_t"] + v["D_t"] - v["E_t"])


def test_the_corners_are_on_the_grid():
    """mu -> 0, mu = 1 with sigma = 0 at the near-minimiser start x_0 = eta/2, large t, rho from 1 to 32."""
    g = coverage()
    assert min(g["mu"]) <= 0.005 and max(g["T"]) >= 700 and 1.0 in g["rho"] and max(g["rho"]) >= 32
    assert any(i.mu == 1 and i.sigma == 0 and i.start == "fixed" and i.x0_scale == i.eta / 2 and i.shape == (1,)
               for i in GRID)
    assert any(i.geometry == "spectral" and min(i.shape) >= 64 and i.shape[0] != i.shape[1] for i in GRID)


def test_a_capped_a4_constant_below_muon_size_is_caught_by_the_corners():
    """min(rho, 16) in place of rho holds on every rho <= 4 instance; the rho = 32 corner (sign d = 1024) fails it."""
    step = _step("perturbed_lemma", NOISE)
    bad = dataclasses.replace(step, rhs=step.rhs.xreplace({rho: sp.Min(rho, 16)}))
    assert witness(bad, instances=INSTANCES)["ok"]
    r = witness(bad)
    assert not r["ok"] and "sign1024" in r["failed_on"]


@pytest.mark.slow
def test_every_premise_holds_at_spectral_muon_size():
    """rho = 32 with a real 1024 x 1024 layer (SLOW_CORNERS: about a minute)."""
    for i, d, s in premise_entries():
        assert witness_premise(d, s, instances=SLOW_CORNERS)["ok"] or not any(
            applies(variants_of(d, s), c) for c in SLOW_CORNERS), i
    step = _step("perturbed_lemma", NOISE)
    bad = dataclasses.replace(step, rhs=step.rhs.xreplace({rho: sp.Min(rho, 16)}))
    assert not witness(bad, instances=SLOW_CORNERS)["ok"]


def test_sigma_spans_orders_of_magnitude_and_a_capped_noise_is_caught_there():
    """A noise capped at sigma <= 1 (min(sigma, 1) in the noise premise) holds wherever sigma <= 1,
    that is on the whole grid but the sigma sweep, and fails on the sweep."""
    sig = [s for s in coverage()["sigma"] if s > 0]
    assert max(sig) / min(sig) >= 1e3 and 0.0 in coverage()["sigma"]
    step = _step("perturbed_lemma", NOISE)
    bad = dataclasses.replace(step, rhs=step.rhs.xreplace({sigma: sp.Min(sigma, 1)}))
    old = tuple(i for i in GRID if i not in SIGMA_SWEEP)
    assert witness(bad, instances=old)["ok"]
    r = witness(bad)
    assert not r["ok"] and ("sigma=5" in r["failed_on"] or "sigma=50" in r["failed_on"])

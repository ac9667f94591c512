"""Every premise step is evaluated AS WRITTEN (its own sympy expressions) on exact instances;
a mis-stated premise is caught, including an understated noise premise (aligned instance)."""
import dataclasses

import numpy as np
import sympy as sp

from theory.proofs import all_derivations, get_derivation
from theory.symbols import L, eta, r_w
from theory.witnesses import INSTANCES, all_witnesses, instance_values, premise_steps, step_margin, witness

PREMISES = {s.name for d in all_derivations() for s in d.steps if s.kind == "premise" and not s.cites}
NOISE = "noise: A4 + Jensen + martingale orthogonality + A3"
DRIFT = "drift: A2 + triangle inequality + y-steps <= eta"


def _step(dname, sname):
    return next(s for s in get_derivation(dname).steps if s.name == sname)


def test_every_premise_is_witnessed_on_every_instance_and_holds():
    w = all_witnesses()
    assert set(w) == PREMISES == {s.name for s in premise_steps()}
    for name, r in w.items():
        assert r["ok"], (name, r)
        assert r["samples"] > 0 and r["instances"]
    assert len(w["split noise and drift"]["instances"]) == len(INSTANCES) == 18


def test_false_drift_premise_is_caught_as_written():
    bad = dataclasses.replace(_step("perturbed_lemma", DRIFT), rhs=L * r_w)
    r = witness(bad)
    assert not r["ok"] and r["worst_margin"] < 0


def test_understated_noise_premise_needs_the_aligned_instance():
    bad = dataclasses.replace(_step("perturbed_lemma", NOISE), rhs=sp.Rational(4, 5) * _step("perturbed_lemma", NOISE).rhs)
    assert not witness(bad)["ok"]
    gauss = tuple(i for i in INSTANCES if i[2] == "gaussian")
    assert witness(bad, instances=gauss)["ok"]  # why the aligned instance exists
    # at t = 0 the aligned noise attains the premise: N_0 = rho sigma exactly
    v = instance_values("sync", "sign", "aligned")
    assert np.allclose(v["N_t"][:, 0], v["rho"] * v["sigma"])


def test_half_eta_cap_is_caught():
    bad = dataclasses.replace(_step("delayed_lemma", "delayed: r_t = ||d_{t-1}|| <= eta"), rhs=eta / 2)
    assert not witness(bad)["ok"]


def test_step_margin_evaluates_the_expression_itself():
    v = instance_values("delayed", "sign", "gaussian")
    s = _step("perturbed_lemma", "split noise and drift")
    m = step_margin(s, v)
    assert m.shape == v["E_t"].shape
    assert np.allclose(m, v["N_t"] + v["D_t"] - v["E_t"])

"""The chain check (steps assembled imply the registered bound, compared by equivalence or
implication) and the mutation table: every planted mutant makes theory.check() itself fail."""
import dataclasses

import pytest
import sympy as sp

import theory
from theory.checks.chain import chain_all, chain_check
from theory.checks.step import check_proof_step
from theory.proofs.derivation import Step
from theory.checks.mutation import mutants, mutation_table, world
from theory.proofs.registry import all_derivations, get_derivation
from theory.records.registry import all_bounds
from theory.records.symbols import L, eta, mu

AUDIT = ("M1", "M2", "M3", "M4", "M5", "M6", "M7")


def test_every_chain_assembles_its_bound():
    res = chain_all()
    assert res and all(c.ok for c in res), [c for c in res if not c.ok]
    proved = {d.bound for d in all_derivations() if d.proves}
    for b in all_bounds():
        if b.status == "derived" or b.name.startswith("kovalev") or b.name in ("paper_c1_y", "paper_c2_y"):
            assert b.name in proved, b.name


def test_chain_breaks_when_a_needed_step_is_removed():
    """Without the premise r_w <= 2 eta the conclusion keeps r_w and cannot imply C2; without the
    QM-AM step it still does (the final comparison proves QM-AM itself): implication, not syntax."""
    d = get_derivation("paper_c2")
    broken = dataclasses.replace(d, steps=tuple(s for s in d.steps if s.name != "a perturbation of two steps"))
    assert not chain_check(broken, steps=broken.steps).ok
    short = dataclasses.replace(d, steps=tuple(s for s in d.steps if not s.name.startswith("QM-AM")))
    assert chain_check(short, steps=short.steps).ok


def _with_lag_step(lhs, rel, rhs):
    d = get_derivation("perturbed_lemma")
    steps = tuple(dataclasses.replace(s, lhs=lhs, rel=rel, rhs=rhs) if s.name == "lag bounded uniformly in t"
                  else s for s in d.steps)
    return dataclasses.replace(d, steps=steps)


def test_chain_compares_by_equivalence_not_syntax():
    """The lag step written in an equivalent, expanded form: a syntactic substitution misses it
    (the expression does not occur in the current bound as written); equivalence finds it."""
    lag = next(s for s in get_derivation("perturbed_lemma").steps if s.name == "lag bounded uniformly in t")
    expanded = sp.expand(lag.lhs)
    assert expanded != lag.lhs
    assert chain_check(_with_lag_step(expanded, "<=", lag.rhs)).ok


def test_chain_rejects_a_conclusion_that_does_not_imply_the_bound():
    lag = next(s for s in get_derivation("perturbed_lemma").steps if s.name == "lag bounded uniformly in t")
    wrong = _with_lag_step(lag.lhs, "<=", 2 * (1 - mu) / mu)   # a true step, but a weaker conclusion
    c = chain_check(wrong)
    assert not c.ok and "not shown to imply" in c.detail


def test_chain_accepts_a_whole_bound_step_by_implication():
    """A step whose lhs is larger than the current bound (current <= lhs proved) continues the chain."""
    d = get_derivation("kovalev_lemma_implied")
    cite, step = d.steps
    looser = dataclasses.replace(step, lhs=step.lhs + L * eta, rhs=step.rhs + L * eta)
    target = step.rhs + L * eta
    assert chain_check(dataclasses.replace(d, steps=(cite, looser)), bound_expr=target).ok


def test_the_theorem_cites_its_lemma_averaged():
    thm = get_derivation("perturbed_theorem")
    cites = [s for s in thm.steps if s.cites]
    assert [s.cites for s in cites] == ["derived_ef_lemma_trajectory"] and cites[0].average
    assert check_proof_step(cites[0]).ok and check_proof_step(cites[0]).method == "cite"
    assert not any(s.kind == "premise" and not s.cites and "average" in s.name for s in thm.steps)
    bad = dataclasses.replace(cites[0], rhs=cites[0].rhs - L * eta * (1 - mu) / (2 * mu))
    assert not check_proof_step(bad).ok


def test_closed_form_premise_must_be_proved():
    true = Step("t", (1 - mu) / mu, "<=", 1 / mu, "x", "premise")
    false = Step("f", (1 - mu) / mu, "<=", 2 * (1 - mu) / sp.sqrt(mu), "x", "premise")
    assert check_proof_step(true).ok and check_proof_step(true).method == "symbolic"
    r = check_proof_step(false)
    assert not r.ok and "closed forms" in r.detail


def test_no_step_states_x_equals_x():
    for d in all_derivations():
        for s in d.steps:
            assert not (s.rel == "==" and sp.sympify(s.lhs) == sp.sympify(s.rhs)), (d.name, s.name)
    with pytest.raises(ValueError, match="X = X"):
        dataclasses.replace(get_derivation("sync_lemma"), steps=(Step("x", L, "==", L, "x"),))


def test_every_mutant_is_caught_by_check_itself():
    rows = {r["name"]: r for r in mutation_table()}
    assert len(rows) == 22
    assert all(r["caught"] for r in rows.values()), [r for r in rows.values() if not r["caught"]]
    for r in rows.values():
        assert r["intended"] in r["caught_by"], r
    audit = {n.split()[0]: r for n, r in rows.items() if n.split()[0] in AUDIT}
    assert sorted(audit) == list(AUDIT)
    assert "premises" in audit["M1"]["caught_by"] and "limits" in audit["M1"]["caught_by"]
    assert "mu=0.9" in audit["M1"]["why"]["premises"][0] or "mu=1 " in audit["M1"]["why"]["premises"][0]
    assert "sign16" in audit["M6"]["why"]["premises"][0] or "spectral10x12" in audit["M6"]["why"]["premises"][0]
    assert "closed forms" in str(theory.check(derivations=_m("M5")["derivations"], mutants=False)) or \
        audit["M5"]["caught_by"][0] == "steps"
    assert "structure" in audit["M7"]["caught_by"] and "premises" in audit["M7"]["caught_by"]
    corner = {n.split()[0]: r for n, r in rows.items() if n.split()[0] in ("N1", "N2", "N3", "N4")}
    assert sorted(corner) == ["N1", "N2", "N3", "N4"]
    for key in ("N1", "N2"):   # the telescope is attained only at the near-minimiser corner
        assert "start=fixed" in corner[key]["why"]["premises"][0] and "mu=1" in corner[key]["why"]["premises"][0]
        assert any(w.startswith("K=1") for w in corner[key]["why"]["limits"])
    assert any(w.startswith("K=1") for w in corner["N3"]["why"]["limits"])
    assert any(w.startswith("t=0") for w in corner["N4"]["why"]["limits"])
    holes = {n.split()[0]: r for n, r in rows.items() if n.split()[0] in ("B1", "S1")}
    assert holes["B1"]["caught_by"] == ["bounds"] and "paper_c3_y" in holes["B1"]["why"]["bounds"][0]
    assert "sigma=5" in holes["S1"]["why"]["premises"][0] or "sigma=50" in holes["S1"]["why"]["premises"][0]
    # consistent errors pass every step alone: only the chain sees them
    for name in ("drift halved in bound and derivation", "transient dropped in bound and derivation"):
        assert "steps" not in rows[name]["caught_by"] and "chains" in rows[name]["caught_by"]


def _m(prefix):
    return next(m for m in mutants() if m["name"].startswith(prefix))


@pytest.mark.parametrize("prefix", ["M1", "M5", "M6", "M7"])
def test_planting_each_audit_mutant_makes_check_not_ok(prefix):
    m = _m(prefix)
    res = theory.check(derivations=m["derivations"], bounds=m["bounds"], sim=m["sim"], mutants=False)
    assert not res["ok"] and res["failed"]
    # the same world without the error is ok: the catch is the mutant's, not the planting's
    clean = theory.check(derivations=world(*[get_derivation(d.name) for d in m["derivations"]]), mutants=False)
    assert clean["ok"], clean["failed"]


def test_check_runs_limits_structure_and_the_grid():
    res = theory.check()
    assert res["ok"], res["failed"]
    assert res["limits"] and all(res["limits"].values())
    assert res["structure"] == {"perturbed_theorem cites a bound": True, "sync_theorem cites a bound": True,
                                "delayed_theorem cites a bound": True, "ef_theorem_worst cites a bound": True,
                                "delayed_theorem_x cites a bound": True, "kovalev_theorem_implied cites a bound": True,
                                "the world has a derivation": True, "every premise id is unique": True}
    assert res["errors"] == {}
    g = res["grid"]
    assert {0.9, 1.0} <= set(g["mu"]) and max(g["rho"]) > 3 and 0.0 in g["sigma"] and len(g["T"]) >= 2

"""Premise results are keyed by a unique id (derivation: step), a duplicate id is refused at
registration, and check() returns ok=False with the reason on a malformed world instead of raising."""
import dataclasses

import pytest
import sympy as sp

import theory
from theory.checks import mutation
from theory.proofs.derivation import Derivation, Step, premise_id
from theory.proofs.registry import all_derivations, get_derivation, registered
from theory.checks.mutation import planted, run_mutant, world
from theory.records.symbols import eta, r_w
from theory.checks.world import check_world

DELAYED_CAP = "delayed: r_t = ||d_{t-1}|| <= eta"


def test_premise_ids_are_unique_though_step_names_repeat():
    ids = [premise_id(d, s) for d in all_derivations() for s in d.steps]
    assert len(ids) == len(set(ids))
    names = [s.name for d in all_derivations() for s in d.steps if s.kind == "premise" and not s.cites]
    assert names.count("sync has y_t = x_t") == 2 and names.count(DELAYED_CAP) == 2   # why names cannot key


def test_a_planted_duplicate_id_raises_at_registration():
    lem = get_derivation("delayed_lemma")
    cap = next(s for s in lem.steps if s.name == DELAYED_CAP)
    with pytest.raises(ValueError, match="share the id"):
        dataclasses.replace(lem, steps=lem.steps + (dataclasses.replace(cap, rhs=2 * eta),))
    twin = dataclasses.replace(get_derivation("delayed_theorem"), name="delayed_lemma")
    with pytest.raises(ValueError, match="registered twice"):
        registered([lem, twin])
    assert registered([lem, get_derivation("delayed_theorem")])   # distinct names: accepted


def test_a_failing_premise_sharing_a_display_name_with_a_passing_one_is_reported():
    """delayed_lemma's r_w <= eta/2 fails, delayed_theorem's r_avg <= eta (same step name) passes and
    comes later: keyed by name, the passing result overwrote the failing one."""
    lem = get_derivation("delayed_lemma")
    bad = dataclasses.replace(lem, steps=tuple(dataclasses.replace(s, rhs=eta / 2) if s.name == DELAYED_CAP else s
                                               for s in lem.steps))
    res = check_world(derivations=world(bad, get_derivation("delayed_theorem")))
    prem = res["premises"]
    assert not prem[f"delayed_lemma: {DELAYED_CAP}"]["ok"] and prem[f"delayed_theorem: {DELAYED_CAP}"]["ok"]
    assert "premises" in res["failed"] and not res["ok"]


def test_a_world_without_citations_gives_ok_false_not_an_exception():
    thm = get_derivation("perturbed_theorem")
    nocite = dataclasses.replace(thm, steps=tuple(s for s in thm.steps if not s.cites))
    res = theory.check(derivations=[nocite], mutants=False)
    assert not res["ok"] and "structure" in res["failed"]
    assert res["structure"]["perturbed_theorem cites a bound"] is False
    unknown = dataclasses.replace(thm, steps=tuple(dataclasses.replace(s, cites="no_such_bound") if s.cites else s
                                                   for s in thm.steps))
    res = theory.check(derivations=[unknown], mutants=False)
    assert not res["ok"] and any("no_such_bound" in v for v in res["errors"].values())
    empty = theory.check(derivations=[], mutants=False)
    assert not empty["ok"] and empty["structure"]["the world has a derivation"] is False


def test_two_derivations_of_one_name_in_a_planted_world_fail_the_check():
    lem = get_derivation("delayed_lemma")
    twin = Derivation("delayed_lemma", lem.bound, lem.statement,
                      (lem.steps[0], Step(DELAYED_CAP, r_w, "<=", eta / 2, "x", "premise")), start=lem.start)
    res = check_world(derivations=[lem, twin])
    assert not res["ok"] and res["structure"]["every premise id is unique"] is False


def test_a_mutant_that_cannot_be_planted_is_a_failure_not_a_crash(monkeypatch):
    """The M7 mutant looks for the theorem's citation (next(...)): on a theorem citing nothing it
    used to end check() in StopIteration."""
    thm = get_derivation("perturbed_theorem")
    nocite = dataclasses.replace(thm, steps=tuple(s for s in thm.steps if not s.cites))
    monkeypatch.setattr(mutation, "get_derivation",
                        lambda name: nocite if name == "perturbed_theorem" else get_derivation(name))
    m7 = next(m for m in mutation.mutants() if m["name"].startswith("M7"))
    assert "StopIteration" in m7["error"]
    row = run_mutant(m7)
    assert not row["caught"] and "cannot be planted" in row["why"]["planting"][0]
    assert planted("x", "k", "steps", lambda: 1 / 0)["error"].startswith("cannot be planted: ZeroDivisionError")


def test_junk_in_a_world_fails_the_check_with_its_reason():
    res = theory.check(derivations=["not a derivation"], mutants=False)
    assert not res["ok"] and res["errors"]
    res = theory.check(derivations=world(get_derivation("kovalev_lemma_implied")),
                       bounds={"derived_sync_lemma": [1, 2]}, mutants=False)
    assert not res["ok"] and "limits" in res["errors"]

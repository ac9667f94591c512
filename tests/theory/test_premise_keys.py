"""A premise is looked up (its variants, its mode) by its own id, never by a step name, and tested on
its own derivation's variant unless the id-keyed table says more (issue 48, item 1)."""
import dataclasses

from theory.checks.mutation import world
from theory.checks.witnesses import MEAN_IDS, VARIANTS_OF, lookup_keys, variants_of, witness
from theory.checks.world import check_world
from theory.proofs.derivation import E_t, Derivation, _cite, _prem
from theory.proofs.registry import all_derivations
from theory.records import package_bounds as B
from theory.records.bound import DELAYED, SYNC
from theory.records.symbols import r_w


def test_no_two_premises_share_a_lookup_key():
    keys = lookup_keys()
    twice = sorted({k for k in keys if keys.count(k) > 1})
    assert not twice, twice
    assert len(keys) >= 15


def test_the_uniqueness_test_sees_a_shared_key():
    d = all_derivations()[0]
    keys = lookup_keys([d, d])
    assert any(keys.count(k) > 1 for k in keys)


def test_every_table_key_is_a_premise_id_of_the_package():
    ids = set(lookup_keys())
    assert set(VARIANTS_OF) <= ids, set(VARIANTS_OF) - ids
    assert set(MEAN_IDS) - ids == {"perturbed_theorem: average the lemma"}   # the mutant M7's premise


def _planted_delayed():
    """A false delayed lemma (the sync lemma's expression) 'proved' with a premise that reuses
    sync's step name 'sync has y_t = x_t' (r_w <= 0)."""
    d = Derivation("planted_delayed_lemma", "derived_delayed_lemma", "delayed, with a borrowed sync premise", (
        _cite(E_t, "derived_ef_lemma_trajectory"),
        _prem("sync has y_t = x_t", r_w, 0, "r_t = 0 for every t")), start=E_t)
    return world(d), {"derived_delayed_lemma": B.DERIVED_SYNC_LEMMA.expr}


def test_a_premise_reusing_another_steps_name_is_tested_on_its_own_variant():
    ders, bounds = _planted_delayed()
    planted = ders[0]
    step = planted.steps[1]
    assert variants_of(planted, step) == (DELAYED,)
    assert witness(step, variants=(SYNC,))["ok"]          # where the name-keyed table tested it: passes
    res = check_world(derivations=ders, bounds=bounds)
    assert not res["ok"] and "premises" in res["failed"]
    row = res["premises"]["planted_delayed_lemma: sync has y_t = x_t"]
    assert not row["ok"] and "delayed/" in row["failed_on"]


def test_mode_is_looked_up_by_id():
    """The noise premise's name in another derivation gets the pathwise mode, not the mean mode."""
    lem = next(d for d in all_derivations() if d.name == "perturbed_lemma")
    noise = next(s for s in lem.steps if s.name.startswith("noise"))
    other = dataclasses.replace(lem, name="other_lemma")
    from theory.checks.witnesses import is_mean
    assert is_mean(lem, noise) and not is_mean(other, noise)

"""theory.check() does not take the certificates on trust: the PEPs' point relations are replayed
against a run, a few cells re-solved with PEPit, and every stored certificate is compared with the
world's lemma (theory.checks.certificates.audit). Planted: relations and stored values changed
together (the hole of issue 48), a stored value changed alone, a lemma lowered below a certificate."""
import numpy as np
import pytest

from theory.checks.certificates import audit as A
from theory.checks.certificates import relations as R
from theory.checks.certificates import stored
from theory.checks.world import check_world
from theory.proofs.registry import get_derivation
from theory.records import package_bounds as B
from theory.records.symbols import L, eta


def test_the_package_passes_the_audit():
    a = A.audit()
    assert a["ok"], a
    assert set(a["replay"]) == {"sync", "delayed", "ef"} and len(a["bound"]) == len(stored.VALUES)
    assert "pepit" not in a["resolve"] and len(a["resolve"]) == len(A.RESOLVE)   # PEPit is in the dev extra


def _ef_offset_flipped(variant, j, t):
    """A planted relation: EF's y_j - x_j = d_{j-1} + d_{j-2} (the sign of d_{j-2} flipped)."""
    c = np.zeros(t + 1)
    if variant in ("delayed", "ef") and j >= 1:
        c[j] += 1.0
    if variant == "ef" and j >= 2:
        c[j - 1] += 1.0
    return c


def _plant_relations_and_values(monkeypatch):
    monkeypatch.setattr(R, "offset", _ef_offset_flipped)
    from theory.checks.certificates import pep
    values = dict(stored.VALUES)
    for cell in A.RESOLVE:
        values[cell] = pep.solve(*cell).certified
    monkeypatch.setattr(stored, "VALUES", values)
    assert all(A.resolve_section().values())            # the stored values agree with PEPit on the new relations
    assert not A.replay_variant("ef")["points"] < 1e-10


def test_relations_and_stored_values_changed_together_fail_check(monkeypatch):
    """The relations changed and the stored values re-solved for them (so a re-solve agrees): the
    replay against a run is what fails, inside check() (here on a world of one algebra-only
    derivation, so that the premises need not run; the slow test runs the package's world)."""
    _plant_relations_and_values(monkeypatch)
    res = check_world(derivations=[get_derivation("paper_noise_term_alone")])
    assert not res["ok"] and "certificates" in res["failed"] and res["certificates"]["replay"]["ef"] is False
    assert "premises" not in res["failed"] and "chains" not in res["failed"]


@pytest.mark.slow
def test_relations_and_stored_values_changed_together_fail_the_package_check(monkeypatch):
    _plant_relations_and_values(monkeypatch)
    res = check_world()
    assert not res["ok"] and res["failed"] == ["certificates"] and res["certificates"]["replay"]["ef"] is False


def test_a_stored_value_changed_alone_fails_the_resolve(monkeypatch):
    values = dict(stored.VALUES)
    values[A.RESOLVE[1]] *= 0.9
    monkeypatch.setattr(stored, "VALUES", values)
    a = A.audit(replay=False)
    assert not a["ok"] and a["resolve"][f"ef mu=0.3 t=4"] is False


def test_a_lemma_below_a_certificate_fails_the_audit():
    """The EF worst-case lemma with r_t <= eta (drift + L eta): 1 L eta at mu = 1, certified 2 L eta."""
    low = B.DERIVED_EF_LEMMA_WORST.expr - L * eta
    a = A.audit({"derived_ef_lemma_worst": low}, replay=False, resolve=False)
    assert not a["ok"] and a["bound"]["ef mu=1 t=2"] is False and a["bound"]["sync mu=1 t=2"] is True


def test_lemma_at_zero_noise_matches_the_closed_forms():
    for mu in (0.05, 0.5, 1.0):
        assert A.lemma_at_zero_noise("sync", mu) == pytest.approx((1 - mu) / mu)
        assert A.lemma_at_zero_noise("delayed", mu) == pytest.approx(1 / mu)
        assert A.lemma_at_zero_noise("ef", mu) == pytest.approx((1 - mu) / mu + 2)

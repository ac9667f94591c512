"""The chain check (steps assembled = the registered bound) and the mutation table."""
import dataclasses

from theory.chain import chain_all, chain_check
from theory.proofs import all_derivations, get_derivation
from theory.mutation import mutation_table
from theory.registry import all_bounds


def test_every_chain_assembles_its_bound():
    res = chain_all()
    assert res and all(c.ok for c in res), [c for c in res if not c.ok]
    proved = {d.bound for d in all_derivations() if d.proves}
    for b in all_bounds():
        if b.status == "derived" or b.name.startswith("kovalev") or b.name in ("paper_c1_y", "paper_c2_y"):
            assert b.name in proved, b.name


def test_chain_breaks_when_a_chain_step_is_removed():
    d = get_derivation("paper_c2")
    broken = dataclasses.replace(d, steps=tuple(s for s in d.steps if not s.name.startswith("QM-AM")))
    assert not chain_check(broken, steps=broken.steps).ok


def test_every_mutant_is_caught_and_consistent_errors_only_by_the_chain():
    rows = {r["name"]: r for r in mutation_table()}
    assert all(r["caught"] for r in rows.values()), [r for r in rows.values() if not r["caught"]]
    kinds = {r["kind"] for r in rows.values()}
    assert {"false premise", "consistent constant change", "dropped term", "flipped inequality",
            "wrong geometric sum"} <= kinds
    assert rows["drift halved in bound and derivation"]["caught_by"] == ["chain"]
    assert rows["transient dropped in bound and derivation"]["caught_by"] == ["chain"]
    assert "witnesses" in rows["noise premise understated by 20%"]["caught_by"]
    assert rows["noise premise understated by 20%"]["witness_on_gaussian_only_catches"] is False
    assert "witnesses" in rows["false premise D_t <= L r_w"]["caught_by"]

"""theory.examples.delayed_lemma: the one bound read from statement to check runs, and its
verdict depends on the derivation it reads (a broken derivation makes it say not ok)."""
import dataclasses

from theory.examples import delayed_lemma as ex
from theory.proofs.registry import get_derivation


def test_the_example_reads_statement_steps_and_checks():
    out = ex.run()
    assert out["statement"].startswith("derived_delayed_lemma: momentum_error_y <= ")
    assert [s["step"] for s in out["steps"]] == [s.name for s in get_derivation("delayed_lemma").steps]
    assert all(s["ok"] for s in out["steps"])
    c = out["checks"]
    assert c["chain"] and c["planted_drift_rejected"]
    assert c["premises"] and all(c["premises"].values()) and all(n > 0 for n in c["premise_samples"].values())
    assert out["ok"]


def test_the_command_prints_every_step_and_ok(capsys):
    assert ex.main([]) == 0
    text = capsys.readouterr().out
    assert "chain: ok" in text and text.rstrip().endswith("ok: True")
    assert all(f"{s.name}:" in text for s in get_derivation("delayed_lemma").steps)


def test_a_derivation_missing_a_step_is_reported_not_ok(monkeypatch):
    d = get_derivation("delayed_lemma")
    assert d.steps[1].name.startswith("delayed: r_t")
    broken = dataclasses.replace(d, steps=d.steps[:1] + d.steps[2:])   # the premise r_w <= eta left out
    monkeypatch.setattr(ex, "get_derivation", lambda name: broken)
    out = ex.run()
    assert not out["checks"]["chain"] and not out["ok"]
    assert ex.main([]) == 1

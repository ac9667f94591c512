"""One training, one key (paper_figs.records.identity): the premises of the identity checked against
the optimizers and the trainer, the Runner trains one run per identity (the diagnosed one),
the migration merges only records of one training, and the kept records hold no two records
of one training."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
from paper_figs_fakes import fake_deps

from gpu_runs.recipe import TrainConfig
from lmo.presets import DEFAULT_MOMENTUM
from lmo.registry import OPTIMIZERS, make
from paper_figs import identity_migration as mig
from paper_figs.records.cache import Cache, config_hash
from paper_figs.records.identity import DIAGNOSTICS_OFF, covers, identity, representative, run_key
from paper_figs.records.kept import KeptStore, dumps, seal
from paper_figs.records.runs import Runner, full_config


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_preset_momentum_spelled_out_builds_the_same_optimizer(name):
    """The premise of merging: momentum = the preset and momentum omitted give equal
    hyperparameters; another momentum does not (the rule can tell them apart)."""
    assert make(name, momentum=DEFAULT_MOMENTUM[name]).hyper == make(name).hyper
    assert make(name, momentum=0.5).hyper != make(name).hyper


def test_diagnostics_off_are_the_trainers_defaults():
    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    assert {k: defaults[k] for k in DIAGNOSTICS_OFF} == DIAGNOSTICS_OFF


def test_one_key_per_training_and_plain_spellings_keep_theirs():
    plain = full_config(TrainConfig, dict(optimizer="muon", steps=10))
    assert run_key(plain) == config_hash(plain)                      # already canonical: its old key
    for other in (dict(momentum=0.95), dict(diag_every=5), dict(momentum=0.95, diag_every=5, diag_micro=2)):
        assert run_key(full_config(TrainConfig, dict(optimizer="muon", steps=10, **other))) == run_key(plain)
    for other in (dict(momentum=0.9), dict(seed=1), dict(optimizer="adamw")):
        assert run_key(full_config(TrainConfig, dict(dict(optimizer="muon", steps=10), **other))) != run_key(plain)
    assert identity({"optimizer": "adamw", "momentum": 0.95})["momentum"] == 0.95   # not adamw's preset 0.9


def test_covers_and_representative():
    plain, diag, other = {"diag_every": 0}, {"diag_every": 5, "diag_micro": 4}, {"diag_every": 5, "diag_micro": 2}
    assert covers(diag, plain) and covers(plain, plain) and covers(diag, diag)
    assert not covers(plain, diag) and not covers(other, diag)
    assert representative([plain, diag, plain]) == 1 and representative([plain, plain]) == 0
    with pytest.raises(ValueError, match="different diagnostics"):
        representative([diag, other])


def test_runner_trains_one_run_per_identity_the_diagnosed_one(tmp_path):
    deps = fake_deps()
    base = dict(optimizer="muon", steps=20, eval_every=10)
    runner = Runner(deps, Cache(tmp_path / "cache"), progress=False, log=lambda s: None)
    outs = runner.run_all([base, dict(base, momentum=0.95), dict(base, diag_every=10)])
    assert deps.train.calls == 1 and len({id(o) for o in outs}) == 1
    assert outs[0].record["config"]["diag_every"] == 10               # the diagnosed spelling was trained
    # a plain run in the cache does not answer a later diagnosed request
    fresh = Runner(deps, Cache(tmp_path / "cache2"), progress=False, log=lambda s: None)
    fresh.run_all([base])
    fresh.run_all([dict(base, diag_every=10)])
    assert deps.train.calls == 3


def _record(store, config, curve, machine):
    """Write a sealed kept record of ``config`` under its spelling's hash (as before the migration)."""
    body = {"format": 2, "key": config_hash(config), "settings": config, "config": config,
            "result": {"final_val_loss": curve[-1], "log": [{"step": i, "val_loss": v} for i, v in enumerate(curve)]},
            "wall_s": 1.0, "provenance": {"machine": f"{machine}, Linux", "command": "c", "commit": "x",
                                          "finished_at": "2026-01-01 00:00 UTC"}}
    store.root.mkdir(parents=True, exist_ok=True)
    store.path(body["key"]).write_text(dumps(seal(body)))
    return body["key"]


def test_migration_merges_one_training_keeps_the_diagnosed_and_refuses_two(tmp_path):
    store = KeptStore(tmp_path / "kept")
    cfg = {"optimizer": "adamw", "steps": 2, "momentum": None, "diag_every": 0, "diag_micro": 4}
    a = _record(store, dict(cfg, momentum=0.9), [3.0, 2.0], "A")
    b = _record(store, dict(cfg, diag_every=1), [3.0, 2.0], "A")
    c = _record(store, dict(cfg, steps=3), [3.0, 2.5], "A")
    moves = mig.plan(store)
    assert moves[a] == moves[b] == run_key(cfg) and moves[c] == c
    kept_from = mig.migrate(store, moves)
    assert sorted(store.keys()) == sorted({run_key(cfg), c}) and kept_from == {run_key(cfg): b}
    merged = store.get(run_key(cfg))
    assert merged["config"]["diag_every"] == 1 and f"merged with {a}" in merged["provenance"]["amended"]
    assert mig.plan(store) == {k: k for k in store.keys()}           # idempotent
    _record(store, dict(cfg, momentum=0.9, seed=1), [3.0, 2.0], "A")
    _record(store, dict(cfg, seed=1), [3.0, 2.1], "A")               # one identity, one machine, two curves
    with pytest.raises(ValueError, match="not one training"):
        mig.plan(store)


def test_the_kept_records_hold_no_two_records_of_one_training():
    store = KeptStore()
    recs = [store.get(k) for k in store.keys()]                      # get() checks key == run_key(config)
    curves = Counter(json.dumps(mig.curve(r)) for r in recs)
    assert max(curves.values()) == 1, [c[:80] for c, n in curves.items() if n > 1]
    m = json.loads(mig.MAP_FILE.read_text())
    assert set(m["moves"].values()) <= set(store.keys())             # every old key maps to one record
    assert not set(m["moves"]) & {k for k in store.keys() if m["moves"].get(k) != k}
    for new, old in m["kept_from"].items():
        assert m["moves"].get(old, old) == new

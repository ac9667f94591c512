"""The run spec reads back every kept record's configuration unchanged.

A kept record (``paper_figs/kept/*.json``) holds the configuration a run was trained with, as
``TrainConfig.as_dict()`` wrote it, and its key is the hash of that configuration's identity.
However the spec is laid out inside (a stored delay, sections), reading a configuration back
and writing it again must give the same keys and values, and the same key: otherwise the
records would stop answering the runs they were trained for.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from gpu_runs.recipe import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
RECORDS = sorted(ROOT.glob("paper_figs/**/kept/*.json"))
#: the fields a kept configuration leaves out (where to write, whether and how often to
#: checkpoint: paper_figs.runs.NOT_IN_KEY)
WHERE = ("out", "resume", "ckpt_every")


def _identity_module():
    """paper_figs' identity module (read only), wherever the package keeps it."""
    for name in ("paper_figs.records.identity", "paper_figs.identity"):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    pytest.fail("paper_figs' identity module (run_key) is neither paper_figs.records.identity nor paper_figs.identity")


def _configs():
    for path in RECORDS:
        rec = json.loads(path.read_text())
        yield path.name, rec


def test_there_are_kept_records():
    assert len(RECORDS) > 100, f"expected the kept records under paper_figs/, found {len(RECORDS)}"


def _written_back(config: dict) -> dict:
    out = TrainConfig(**config).as_dict()
    for k in WHERE:
        out.pop(k, None)
    return out


def test_every_kept_config_round_trips():
    """TrainConfig(**config).as_dict() == config, key for key and value for value."""
    bad = []
    for name, rec in _configs():
        back = _written_back(rec["config"])
        if back != rec["config"]:
            diff = {k: (rec["config"].get(k, "<absent>"), back.get(k, "<absent>"))
                    for k in set(back) | set(rec["config"]) if back.get(k, "<absent>") != rec["config"].get(k, "<absent>")}
            bad.append((name, diff))
    assert not bad, f"{len(bad)} kept configs do not round-trip, e.g. {bad[:3]}"


def test_every_kept_settings_give_its_config_and_key():
    """The figure's settings build the recorded configuration, and its identity hashes to the
    record's key (paper_figs.identity.run_key, read only)."""
    identity = _identity_module()
    bad = []
    for name, rec in _configs():
        full = _written_back(rec["settings"])
        if full != rec["config"] or identity.run_key(full) != rec["key"]:
            bad.append(name)
    assert not bad, f"{len(bad)} kept records' settings no longer give their config / key, e.g. {bad[:3]}"

"""Presets: the paper protocol's numbers, one record (lr / momentum / source / mu note / geometry)
per optimizer, and the tables read from the records."""
import math

import pytest

from lmo.presets import (DECOUPLED_DECAY, DEFAULT_LR, DEFAULT_MOMENTUM, LR_SOURCE, MU_MAPS_TO, PAPER_PROTOCOL,
                         PRESETS)
from lmo.registry import OPTIMIZERS

NAMES = set(PRESETS)


def test_the_registry_is_the_records():
    assert set(OPTIMIZERS) == NAMES and len(NAMES) >= 12
    for name, record in PRESETS.items():
        assert OPTIMIZERS[name] is record.build
        assert record.build.__name__ == name, "a record's key is its constructor's name"


def test_the_tables_are_views_of_the_records():
    assert dict(DEFAULT_LR) == {n: p.lr for n, p in PRESETS.items()}
    assert dict(DEFAULT_MOMENTUM) == {n: p.momentum for n, p in PRESETS.items()}
    assert dict(DECOUPLED_DECAY) == {"nadam": {"decoupled_weight_decay": True}}
    with pytest.raises(KeyError):
        DEFAULT_LR["nosuch"]


def test_paper_protocol_numbers():
    assert PAPER_PROTOCOL.weight_decay == 0.1 and PAPER_PROTOCOL["grad_clip"] == 1.0
    assert PAPER_PROTOCOL.warmup_frac == 0.1 and PAPER_PROTOCOL.final_frac == 0.1
    assert PAPER_PROTOCOL.as_dict()["schedule"] == "warmup_cosine"


def test_every_optimizer_has_lr_momentum_source_and_mu_note():
    for table in (DEFAULT_LR, DEFAULT_MOMENTUM, LR_SOURCE, MU_MAPS_TO):
        assert set(table) == NAMES
    assert all(math.isfinite(v) and v > 0 for v in DEFAULT_LR.values())
    assert all(0 < b < 1 for b in DEFAULT_MOMENTUM.values())
    assert all(len(s) > 20 for s in LR_SOURCE.values())


def test_default_momentum_matches_constructor_defaults():
    from lmo.muon_family import adamuon
    from lmo.adam_family import adan
    from lmo.adam_family import mars
    from lmo.adam_family import nadam
    from lmo.muon_family import normuon
    from lmo.adam_family import soap
    ours = {"nadam": nadam(1e-3).hyper["betas"][0], "adan": adan(1e-3).hyper["betas"][0],
            "mars": mars(1e-3).hyper["betas"][0], "soap": soap(1e-3).hyper["betas"][0],
            "normuon": normuon(1e-3).hyper["momentum"], "adamuon": adamuon(1e-3).hyper["momentum"],
            "scion": OPTIMIZERS["scion"](1e-3).hyper["momentum"]}
    for k, v in ours.items():
        assert DEFAULT_MOMENTUM[k] == pytest.approx(v), k

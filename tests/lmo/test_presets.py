"""Presets: the paper protocol's numbers, one lr / momentum / source / mu note per optimizer."""
import math

import pytest

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM, LR_SOURCE, MU_MAPS_TO, PAPER_PROTOCOL
from lmo.registry import OPTIMIZERS

NAMES = {"adamw", "nadam", "adan", "mars", "soap", "muon", "normuon", "adamuon", "lion", "signum",
         "normalized_sgd", "scion"}


def test_the_tables_cover_the_registry():
    assert NAMES == set(OPTIMIZERS)


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
    from lmo.alias import adamuon
    from lmo.alias import adan
    from lmo.alias import mars
    from lmo.alias import nadam
    from lmo.alias import normuon
    from lmo.alias import soap
    ours = {"nadam": nadam(1e-3).hyper["betas"][0], "adan": adan(1e-3).hyper["betas"][0],
            "mars": mars(1e-3).hyper["betas"][0], "soap": soap(1e-3).hyper["betas"][0],
            "normuon": normuon(1e-3).hyper["momentum"], "adamuon": adamuon(1e-3).hyper["momentum"],
            "scion": OPTIMIZERS["scion"](1e-3).hyper["momentum"]}
    for k, v in ours.items():
        assert DEFAULT_MOMENTUM[k] == pytest.approx(v), k

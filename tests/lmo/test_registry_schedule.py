"""lmo.registry.build has one way to schedule: ``schedule=``; a callable ``lr=`` is refused."""
from __future__ import annotations

import pytest
import torch

from lmo.registry import OPTIMIZERS, build
from lmo.schedules import warmup_cosine

PARAMS = {"embed.weight": torch.zeros(8, 4), "layers.0.w.weight": torch.zeros(4, 4), "norm.weight": torch.zeros(4)}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_callable_lr_is_refused_with_the_way_out(name):
    with pytest.raises(TypeError, match=r"schedule=") as e:
        build(name, PARAMS, lr=warmup_cosine(0.01, 10))
    assert "lr" in str(e.value)


def test_schedule_must_be_callable():
    with pytest.raises(TypeError, match="schedule"):
        build("adamw", PARAMS, lr=0.01, schedule=0.5)


def test_schedule_reaches_the_adamw_group_of_muon():
    """lr of the AdamW group at step 0 = warmup's first value: peak_adamw / W (W = 5)."""
    g = {k: torch.ones_like(v) for k, v in PARAMS.items()}
    p = {k: v + 1.0 for k, v in PARAMS.items()}
    const = build("muon", p, lr=0.02, weight_decay=0.0)
    sched = build("muon", p, lr=0.02, weight_decay=0.0, schedule=lambda peak: warmup_cosine(peak, 50))
    u0, _ = const.update(g, const.init(p), p)
    u1, _ = sched.update(g, sched.init(p), p)
    for k in p:
        torch.testing.assert_close(u1[k], u0[k] / 5)

"""The trainer's weight decay is decoupled for every registry optimizer (the paper protocol:
lambda = 0.1 for all), and the run's configuration records the convention.

Before the fix, NAdam alone took torch.optim.NAdam's coupled L2 (g <- g + lambda x): with
lambda = 0.1 its tiny runs stalled at ~3.0 nats/byte where AdamW reaches 1.45, and Figure 2 /
Table 1 / Figure 4 compared the other optimizers against that.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from gpu_runs.recipe import TrainConfig, build_optimizer
from lmo.registry import OPTIMIZERS

SHAPES = {"embed.weight": (16, 8), "layers.0.attn.wq.weight": (8, 8), "layers.0.mlp.w1.weight": (12, 8),
          "norm.weight": (8,)}


def _decay_part(cfg: TrainConfig) -> tuple[dict, dict]:
    """d_2(lambda) - d_2(0) of the run's optimizer (sync, no clip), both steps at the same x
    and gradients: decoupled decay only adds a multiple of x_t to each tensor's update."""
    g = torch.Generator().manual_seed(0)
    params = {k: torch.randn(s, generator=g) for k, s in SHAPES.items()}
    grads = [{k: torch.randn(s, generator=g) for k, s in SHAPES.items()} for _ in range(2)]
    out = []
    for wd in (cfg.weight_decay, 0.0):
        opt, _, _ = build_optimizer(dataclasses.replace(cfg, weight_decay=wd), params)
        _, state = opt.update(grads[0], opt.init(params), params)
        d, _ = opt.update(grads[1], state, params)
        out.append(d)
    return {k: out[0][k] - out[1][k] for k in params}, params


def _decoupled_residual(diff: torch.Tensor, x: torch.Tensor) -> float:
    """|diff + c x| / |c x| with c = -<diff, x>/<x, x>, or inf unless c > 0 (a decay)."""
    c = -(diff * x).sum() / (x * x).sum()
    return float((diff + c * x).norm() / (c * x).norm()) if c > 0 else float("inf")


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_trainer_decay_is_decoupled(name):
    cfg = TrainConfig(optimizer=name, steps=20, grad_clip=0.0, weight_decay=0.1, ns_dtype="float32")
    diff, params = _decay_part(cfg)
    for k, x in params.items():
        assert _decoupled_residual(diff[k], x) < 0.02, (name, k)


def test_planted_coupled_nadam_is_caught():
    cfg = TrainConfig(optimizer="nadam", steps=20, grad_clip=0.0, opt_kwargs={"decoupled_weight_decay": False})
    diff, params = _decay_part(cfg)
    assert min(_decoupled_residual(diff[k], x) for k, x in params.items()) > 0.5


def test_the_convention_is_part_of_the_run_identity():
    assert TrainConfig(optimizer="nadam").opt_kwargs == {"decoupled_weight_decay": True}
    assert TrainConfig(optimizer="nadam", opt_kwargs={"decoupled_weight_decay": False}).opt_kwargs == {
        "decoupled_weight_decay": False}  # torch's coupled L2 stays available, and recorded
    assert TrainConfig(optimizer="adamw").opt_kwargs == {}  # every other run's identity is unchanged
    cfg = TrainConfig(optimizer="nadam")
    assert dataclasses.replace(cfg, steps=5).opt_kwargs == cfg.opt_kwargs

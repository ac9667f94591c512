"""Every parameter group of every registry optimizer follows the warmup-cosine schedule,
as the trainer and the pipeline build it (docs/design.md §4, the paper protocol).

With fixed parameters and fixed per-step gradients the optimizer state does not depend on
the lr, and every update is linear in the lr, so at step t the scheduled update must be
s(t) x the update of the same optimizer at its constant peak lr, where s is the protocol's
shape written out here independently of lmo.schedules. Before the fix the AdamW group of
muon / normuon / adamuon stayed at its peak (ratio 1 at every step).
"""
from __future__ import annotations

import math

import pytest
import torch

from gpu_runs.pipeline import llama as pipeline_llama
from gpu_runs.model import Llama, get_config
from gpu_runs.recipe import TrainConfig, build_optimizer, peak_lr
from lmo.combine import muon_labels
from lmo.registry import MATRIX_OPTIMIZERS, OPTIMIZERS, build

STEPS, WARMUP, FINAL = 20, 0.1, 0.1


def shape(t: int) -> float:
    """Paper protocol lr(t) / peak: linear warmup over W = 2 steps, cosine to FINAL at T."""
    W = 2
    if t < W:
        return (t + 1) / W
    return FINAL + (1 - FINAL) * 0.5 * (1 + math.cos(math.pi * (t - W) / (STEPS - W)))


def _params():
    cfg = get_config("tiny", n_layers=1, d_model=16, n_heads=2, n_kv_heads=1, d_mlp=32, vocab_size=32)
    return {k: v.detach().clone() for k, v in Llama(cfg, seed=0).named_parameters()}


def trainer_opt(cfg, params):
    return build_optimizer(cfg, params)[0]


def pipeline_opt(cfg, params):
    return pipeline_llama.base_optimizer(cfg, params)[0]


def _check_follows_schedule(name, make, checked_steps=(0, 1, 2, 7, 12)):
    params = _params()
    cfg = TrainConfig(optimizer=name, steps=STEPS, warmup_frac=WARMUP, final_frac=FINAL, grad_clip=0.0)
    opt = make(cfg, params)
    ref = build(name, params, lr=peak_lr(cfg), weight_decay=cfg.weight_decay)  # constant peak, every group
    s_opt, s_ref = opt.init(params), ref.init(params)
    gen = torch.Generator().manual_seed(1)
    for t in range(max(checked_steps) + 1):
        g = {k: torch.randn(v.shape, generator=gen) for k, v in params.items()}
        u, s_opt = opt.update(g, s_opt, params)
        u_ref, s_ref = ref.update(g, s_ref, params)
        if t in checked_steps:
            for k in params:
                torch.testing.assert_close(u[k], shape(t) * u_ref[k], rtol=1e-3, atol=1e-6,
                                           msg=lambda m: f"{name} step {t} param {k}: {m}")


@pytest.mark.parametrize("make", [trainer_opt, pipeline_opt], ids=["trainer", "pipeline"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_group_follows_the_schedule(name, make):
    _check_follows_schedule(name, make)


def test_matrix_optimizers_have_two_groups_here():
    """The check above sees both groups (else it would not catch the AdamW-group bug)."""
    labels = set(muon_labels(_params()).values())
    assert labels == {"matrix", "other"} and MATRIX_OPTIMIZERS


def test_old_bug_is_caught_by_the_check():
    """The pre-fix builder (schedule passed as lr=) fails the check for muon."""
    from lmo.schedules import warmup_cosine

    def old_builder(cfg, params):
        sched = warmup_cosine(peak_lr(cfg), cfg.steps, cfg.warmup_frac, cfg.final_frac)
        from lmo.adam_family import adamw
        from lmo.combine import partition
        from lmo.registry import make as make_one
        return partition({"matrix": make_one("muon", sched, weight_decay=0.1),
                          "other": adamw(0.001 * 3, weight_decay=0.1)}, muon_labels(params))

    with pytest.raises(AssertionError):
        _check_follows_schedule("muon", old_builder)

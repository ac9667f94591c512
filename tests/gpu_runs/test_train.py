"""Trainer: every mode runs; determinism; 2bw equals a hand-written delayed loop; pipedream takes
gradients at the mixed stale point (hand-written stale loop over an explicit iterate list)."""
import math

import pytest
import torch

from gpu_runs.data import Batcher, get_corpus
from gpu_runs.model import Llama, get_config, stage_of_params
from gpu_runs.recipe import TrainConfig, build_optimizer, loss_and_grads
from gpu_runs.train import train

FAST = dict(config="tiny", steps=6, batch_size=4, seq_len=16, eval_every=3, eval_batches=1, log_every=1)


def losses(res):
    return [r["train_loss"] for r in res.log]


@pytest.mark.parametrize("kw", [dict(mode="sync"), dict(mode="2bw"), dict(mode="2bw", ef=True),
                                dict(mode="pipedream", stages=2),
                                dict(mode="2bw", sync_start=2, sync_cooldown=2, dc_asgd=0.1)])
@pytest.mark.parametrize("opt", ["adamw", "muon"])
def test_every_mode_runs(kw, opt):
    res = train(TrainConfig(optimizer=opt, **FAST, **kw), progress=False)
    assert len(res.log) == 6 and math.isfinite(res.final_val_loss)
    assert res.final_val_loss < math.log(256)


def test_deterministic_and_modes_differ():
    a = train(TrainConfig(optimizer="muon", **FAST), progress=False)
    b = train(TrainConfig(optimizer="muon", **FAST), progress=False)
    assert losses(a) == losses(b)
    c = train(TrainConfig(optimizer="muon", mode="2bw", **FAST), progress=False)
    assert losses(c)[0] == losses(a)[0]  # same x_0, same batch 0
    assert losses(c)[1:] != losses(a)[1:]


def _setup(cfg):
    corpus = get_corpus(cfg.data)
    model = Llama(get_config(cfg.config, max_seq_len=64), seed=cfg.seed)
    x = {k: v.detach().clone() for k, v in model.named_parameters()}
    _, inner, _ = build_optimizer(cfg, x)
    return model, x, inner, Batcher(corpus.train, cfg.batch_size, cfg.seq_len, cfg.seed)


@pytest.mark.parametrize("opt", ["adamw", "muon"])
def test_2bw_equals_hand_written_delayed_loop(opt):
    cfg = TrainConfig(optimizer=opt, mode="2bw", **FAST)
    res = train(cfg, progress=False)
    model, x, inner, batcher = _setup(cfg)
    state, pending, ref = inner.init(x), None, []
    for t in range(cfg.steps):
        loss, g = loss_and_grads(model, x, *batcher.batch(t), False)
        ref.append(float(loss))
        d, state = inner.update(g, state, x)
        if pending is not None:  # x_{t+1} = x_t + d_{t-1}, d_{-1} = 0
            x = {k: x[k] + pending[k] for k in x}
        pending = d
    assert losses(res) == pytest.approx(ref, rel=1e-6, abs=1e-6)


def test_pipedream_gradient_at_mixed_stale_point():
    cfg = TrainConfig(optimizer="adamw", mode="pipedream", stages=2, **FAST)
    res = train(cfg, progress=False)
    model, x, inner, batcher = _setup(cfg)
    stage = stage_of_params(model, 2)
    tau = {k: 2 - 1 - s for k, s in stage.items()}
    assert set(tau.values()) == {0, 1}
    state, past, ref = inner.init(x), [], []
    for t in range(cfg.steps):
        past.append(x)  # past[j] = x_j
        z = {k: past[max(0, t - tau[k])][k] for k in x}
        loss, g = loss_and_grads(model, z, *batcher.batch(t), False)
        ref.append(float(loss))
        d, state = inner.update(g, state, x)
        x = {k: x[k] + d[k] for k in x}
    assert losses(res) == pytest.approx(ref, rel=1e-6, abs=1e-6)
    sync = train(TrainConfig(optimizer="adamw", **FAST), progress=False)
    assert losses(sync)[2:] != losses(res)[2:]


def test_bad_config_refused():
    with pytest.raises(ValueError, match="mode"):
        train(TrainConfig(mode="async"), progress=False)
    with pytest.raises(ValueError, match="ef"):
        train(TrainConfig(mode="sync", ef=True), progress=False)
    for k, v in (("sync_start", 2), ("sync_cooldown", 2), ("dc_asgd", 0.1)):
        for mode in ("sync", "pipedream"):   # they would be silently ignored there
            with pytest.raises(ValueError, match=f"{k}.*2bw"):
                train(TrainConfig(mode=mode, **{k: v}), progress=False)

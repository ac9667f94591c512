"""The mixture-of-experts model in the trainer: every mode, routing statistics in the log,
validation by cross-entropy alone, and the Newton-Schulz dtype recorded in the run's config."""
from __future__ import annotations

import json

import pytest
import torch

from gpu_runs.data import get_corpus, val_batches
from gpu_runs.model import Llama
from gpu_runs.recipe import TrainConfig, model_config, resolve_ns_dtype
from gpu_runs.train import train
from lmo.polar_factor import choose_ns_dtype

FAST = dict(config="tiny_moe", steps=4, batch_size=2, seq_len=16, eval_every=2, eval_batches=1,
            log_every=1, device="cpu")


@pytest.mark.parametrize("kw", [dict(mode="sync"), dict(mode="2bw"), dict(mode="2bw", ef=True),
                                dict(mode="pipedream", stages=2)])
def test_tiny_moe_trains_in_every_mode_and_logs_routing(kw):
    res = train(TrainConfig(optimizer="muon", **FAST, **kw), progress=False)
    assert len(res.log) == 4 and all("routing" in r for r in res.log)
    for layer in res.log[-1]["routing"].values():
        assert abs(sum(layer["load"]) - 1) < 1e-6 and layer["aux_loss"] > 0 and layer["dropped"] == 0


def test_validation_loss_is_cross_entropy_without_the_balance_term():
    cfg = TrainConfig(optimizer="adamw", **FAST)
    res = train(cfg, progress=False)
    corpus = get_corpus(cfg.data)
    model = Llama(model_config(cfg, corpus.vocab_size), seed=cfg.seed)
    with torch.no_grad():
        for k, v in model.named_parameters():
            v.copy_(res.params[k])
        batches = val_batches(corpus.val, cfg.eval_batches, cfg.batch_size, cfg.seq_len)
        ce = sum(float(model.loss(x, y, aux=False)) for x, y in batches) / len(batches)
        with_aux = sum(float(model.loss(x, y)) for x, y in batches) / len(batches)
    assert res.final_val_loss == pytest.approx(ce, abs=1e-6)
    assert with_aux > ce + 1e-3                       # the aux term is really left out


def test_ns_dtype_choice_is_recorded_and_honoured(tmp_path):
    res = train(TrainConfig(optimizer="muon", out=str(tmp_path / "a"), **FAST), progress=False)
    saved = json.loads((tmp_path / "a" / "config.json").read_text())["ns_dtype"]
    assert saved == str(choose_ns_dtype(torch.device("cpu"))).removeprefix("torch.")
    assert res.config.ns_dtype == saved
    assert resolve_ns_dtype("float64", "cpu") == "float64"
    f32 = train(TrainConfig(optimizer="muon", ns_dtype="float32", **FAST), progress=False)
    f64 = train(TrainConfig(optimizer="muon", ns_dtype="float64", **FAST), progress=False)
    assert f32.config.ns_dtype == "float32"
    # the option reaches Newton-Schulz: the weights differ (a logged loss rounded alike on some
    # data would not show it), and only by rounding
    assert any(not torch.equal(f32.params[k], f64.params[k]) for k in f32.params)
    assert f32.log[-1]["train_loss"] == pytest.approx(f64.log[-1]["train_loss"], abs=1e-3)
    with pytest.raises(ValueError, match="ns_dtype"):
        TrainConfig(ns_dtype="float16").validate()

"""Diagnostics: r_t = 0 for sync and > 0 under delay; rho from the shapes; product norms by hand."""
import math

import pytest
import torch

from gpu_runs.diagnostics import geometries, product_dual, product_norm, product_rho
from gpu_runs.train import TrainConfig, train

FAST = dict(config="tiny", steps=4, batch_size=4, seq_len=16, eval_every=4, eval_batches=1, diag_every=2)


def test_r_zero_for_sync_positive_for_delay():
    s = train(TrainConfig(optimizer="muon", **FAST), progress=False).diagnostics
    d = train(TrainConfig(optimizer="muon", mode="2bw", **FAST), progress=False).diagnostics
    assert all(x["r"] == 0 for x in s)
    assert all(x["r"] > 0 for x in d[1:])
    for x in s + d:
        assert x["sigma"] > 0 and math.isfinite(x["momentum_error"])
        # 2bw applies d_{-1} = 0 at step 0: no displacement, no smoothness quotient
        assert x["L_local"] > 0 if x["update_norm"] > 0 else math.isnan(x["L_local"])


def test_rho_and_product_norms_by_hand():
    params = {"layers.0.attn.q_proj.weight": torch.randn(6, 4), "norm.weight": torch.randn(5)}
    geo = geometries("muon", params)
    assert product_rho(geo, params) == pytest.approx(math.sqrt(4 + 5))
    sv = torch.linalg.svdvals(params["layers.0.attn.q_proj.weight"])
    v = params["norm.weight"]
    assert product_norm(geo, params) == pytest.approx(max(float(sv[0]), float(v.abs().max())), rel=1e-5)
    assert product_dual(geo, params) == pytest.approx(float(sv.sum()) + float(v.abs().sum()), rel=1e-5)
    g2 = geometries("adamw", params)
    assert product_rho(g2, params) == pytest.approx(math.sqrt(24 + 5))

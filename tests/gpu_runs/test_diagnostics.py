"""Diagnostics: r_t = 0 for sync and > 0 under delay; rho from the shapes; product norms by hand."""
import math

import pytest
import torch

from gpu_runs.diagnostics import geometries, product_dual, product_norm, product_rho, r_over_eta_summary
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import train

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


def test_r_per_block_is_the_shape_factor_under_2bw():
    """Under 2bw, x - y = -d_t: a Muon block's spectral r_b / eta is s_b * sigma_max(NS(m)) with
    s_b = sqrt(max(1, rows/cols)); checked against the block shapes and Keller NS's band [0.68, 1.2]."""
    res = train(TrainConfig(optimizer="muon", mode="2bw", **FAST), progress=False)
    shapes = {k: tuple(v.shape) for k, v in res.params.items()}
    d = res.diagnostics[-1]
    mats = [k for k in d["r_over_eta_blocks"] if len(shapes[k]) == 2 and "layers." in k]
    assert mats and d["r_over_eta_matrix"] == pytest.approx(max(d["r_over_eta_blocks"][k] for k in mats))
    for k in mats:
        s_b = math.sqrt(max(1.0, shapes[k][0] / shapes[k][1]))
        assert 0.6 * s_b < d["r_over_eta_blocks"][k] < 1.25 * s_b, k
    assert d["r_over_eta"] == pytest.approx(max(d["r_over_eta_blocks"].values()))
    assert "r_over_eta_other" in d


@pytest.mark.parametrize("mode,ef", [("sync", False), ("2bw", False), ("2bw", True)])
def test_d_norm_is_the_optimizers_own_step(mode, ef):
    """||d_t|| = ||y_{t+1} - y_t||: equals the applied step for sync, r for 2bw (x - y = -d_t),
    and is positive in every mode (the optimizer always steps)."""
    res = train(TrainConfig(optimizer="muon", mode=mode, ef=ef, **FAST), progress=False)
    for d in res.diagnostics:
        if mode == "sync":
            assert d["d_norm"] == pytest.approx(d["update_norm"], rel=1e-6)
        elif not ef and d["step"] > 1:
            assert d["r_over_d"] == pytest.approx(1.0, rel=1e-5)
        assert d["d_norm"] > 0


def test_expert_stack_is_a_product_of_expert_blocks_by_hand():
    """A 3-D expert stack (E, m, n): each expert is a block (Muon orthogonalizes each alone)."""
    g = torch.Generator().manual_seed(3)
    stack = torch.randn(3, 6, 4, generator=g)
    params = {"layers.0.mlp.w_up": stack, "norm.weight": torch.randn(5, generator=g) * 0.01}
    geo = geometries("muon", params)
    sv = [torch.linalg.svdvals(stack[e]) for e in range(3)]
    assert product_norm(geo, params) == pytest.approx(max(float(s[0]) for s in sv), rel=1e-5)
    assert product_dual(geo, params) == pytest.approx(
        sum(float(s.sum()) for s in sv) + float(params["norm.weight"].abs().sum()), rel=1e-5)
    assert product_rho(geo, params) == pytest.approx(math.sqrt(3 * 4 + 5))
    s = r_over_eta_summary(geo, params, 0.5)
    assert s["experts"]["layers.0.mlp.w_up"]["r_over_eta"] == pytest.approx([2 * float(x[0]) for x in sv], rel=1e-5)
    assert s["r_over_eta_blocks"]["layers.0.mlp.w_up"] == pytest.approx(2 * max(float(x[0]) for x in sv), rel=1e-5)
    g2 = geometries("adamw", params)   # sign geometry: l_inf per expert, l_1 summed
    assert product_norm(g2, params) == pytest.approx(float(stack.abs().max()))
    assert product_dual(g2, params) == pytest.approx(float(stack.abs().sum() + params["norm.weight"].abs().sum()),
                                                     rel=1e-5)


def test_moe_diagnostics_per_expert_under_2bw_and_sync():
    """tiny_moe with Muon: per expert, r^e = ||d_t^e|| under 2bw (x - y = -d_t) within Keller NS's
    band of the shape factor, and r^e = 0 for sync; the stack's block entry is the max."""
    kw = dict(FAST, config="tiny_moe", batch_size=2)
    d = train(TrainConfig(optimizer="muon", mode="2bw", **kw), progress=False).diagnostics[-1]
    stacks = {k: v for k, v in d["experts"].items()}
    assert set(stacks) == {f"layers.{i}.mlp.{w}" for i in range(2) for w in ("w_gate", "w_up", "w_down")}
    for k, e in stacks.items():
        assert len(e["r"]) == len(e["d_norm"]) == len(e["r_over_eta"]) == 8
        assert e["r"] == pytest.approx(e["d_norm"], rel=1e-5)
        assert d["r_over_eta_blocks"][k] == pytest.approx(max(e["r_over_eta"]))
        assert all(0.6 < v < 1.25 for v in e["r_over_eta"]), k      # square experts: s_b = 1
    s = train(TrainConfig(optimizer="muon", **kw), progress=False).diagnostics[-1]
    assert all(v == 0 for e in s["experts"].values() for v in e["r"])
    assert all(v > 0 for e in s["experts"].values() for v in e["d_norm"])


def test_adamw_debiased_momentum_is_the_first_gradient_at_step_one():
    """AdamW's update uses m_hat_t = m_t / (1 - beta1^t): after step 1 (no clipping) that is
    g(x_0; B_0), the batch gradient the step took, so its error against gbar is
    ||g(x_0; B_0) - gbar||_*; the stored buffer's is ||(1 - beta1) g - gbar||_*. Only AdamW
    records it (gpu_runs.diagnostics.DEBIASED_OPTIMIZERS)."""
    from gpu_runs.data import Batcher, get_corpus
    from gpu_runs.model import Llama
    from gpu_runs.recipe import loss_and_grads, model_config
    cfg = TrainConfig(optimizer="adamw", grad_clip=0.0, momentum=0.8, **dict(FAST, diag_every=1))
    d1 = train(cfg, progress=False).diagnostics[0]
    assert d1["step"] == 1
    corpus = get_corpus(cfg.data)
    model = Llama(model_config(cfg, corpus.vocab_size), seed=cfg.seed)
    x0 = {k: v.detach().clone() for k, v in model.named_parameters()}
    b = Batcher(corpus.train, cfg.batch_size, cfg.seq_len, cfg.seed)
    g0 = loss_and_grads(model, x0, *b.batch(0), False)[1]
    gs = [loss_and_grads(model, x0, *b.batch(0, micro=i), False)[1] for i in range(cfg.diag_micro)]
    gbar = {k: sum(g[k] for g in gs) / len(gs) for k in g0}
    geo = geometries("adamw", x0)
    assert d1["momentum_error_debiased"] == pytest.approx(product_dual(geo, {k: g0[k] - gbar[k] for k in g0}), rel=1e-4)
    assert d1["momentum_error"] == pytest.approx(product_dual(geo, {k: 0.2 * g0[k] - gbar[k] for k in g0}), rel=1e-4)
    for o in ("muon", "nadam"):
        d = train(TrainConfig(optimizer=o, **FAST), progress=False).diagnostics
        assert d and all("momentum_error_debiased" not in x for x in d), o

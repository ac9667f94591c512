"""Mixture-of-experts layer: routing, load-balancing loss, per-expert Muon, parameter counts.

Each check compares against something computed another way: a dense einsum over all
experts with a 0/1 mask, the analytic gradient of L_aux, Muon applied to each expert alone,
and the parameters the module actually holds.
"""
from __future__ import annotations

import hypothesis.strategies as st
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings

from gpu_runs.model import CONFIGS, Llama, get_config, param_count
from gpu_runs.moe import MoE, balance_loss, load_fractions, route, routing_stats, update_router_bias
from lmo.muon_family import muon


def _moe(seed=0, d=8, de=6, E=5, k=2, shared=1):
    torch.manual_seed(seed)
    m = MoE(d, de, E, k, shared).double()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0, 0.5)
    return m


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), E=st.integers(1, 6), k=st.integers(1, 6), n=st.integers(1, 12))
def test_route_selects_k_experts_with_weights_summing_to_one(seed, E, k, n):
    k = min(k, E)
    logits = torch.randn(n, E, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    probs, idx, w = route(logits, k)
    assert idx.shape == (n, k) and w.shape == (n, k)
    assert torch.allclose(w.sum(-1), torch.ones(n, dtype=w.dtype))
    assert all(len(set(r.tolist())) == k for r in idx)               # k distinct experts
    # the selected experts are the k largest probabilities
    kth = probs.sort(-1, descending=True).values[:, k - 1:k]
    assert bool((probs.gather(-1, idx) >= kth - 1e-12).all())
    f = load_fractions(idx, E)
    assert torch.isclose(f.sum(), torch.tensor(1.0))


def test_forward_equals_a_dense_masked_computation():
    m = _moe()
    x = torch.randn(3, 4, 8, dtype=torch.float64)
    y = m(x)
    xt = x.reshape(-1, 8)
    probs, idx, w = route(m.router(xt), m.top_k)
    gate = torch.zeros_like(probs).scatter(-1, idx, w)                     # (N, E), w on the top k
    h = F.silu(torch.einsum("nd,efd->nef", xt, m.w_gate)) * torch.einsum("nd,efd->nef", xt, m.w_up)
    routed = torch.einsum("nef,edf,ne->nd", h, m.w_down, gate)
    shared = m.shared_down(F.silu(m.shared_gate(xt)) * m.shared_up(xt))
    assert torch.allclose(y.reshape(-1, 8), routed + shared, atol=1e-12)


def test_balance_loss_gradient_matches_the_analytic_formula():
    torch.manual_seed(1)
    N, E, k = 40, 6, 2
    logits = torch.randn(N, E, dtype=torch.float64, requires_grad=True)
    probs, idx, _ = route(logits, k)
    loss = balance_loss(probs, idx)
    (g,) = torch.autograd.grad(loss, logits)
    p, f = probs.detach(), load_fractions(idx, E).double()
    expected = (E / N) * p * (f[None, :] - (p * f[None, :]).sum(-1, keepdim=True))
    assert torch.allclose(g, expected, atol=1e-12)


def test_balance_loss_is_one_for_uniform_routing_and_larger_when_collapsed():
    E, N = 4, 8
    probs = torch.full((N, E), 1 / E)
    idx = torch.arange(N).remainder(E)[:, None]
    assert torch.isclose(balance_loss(probs, idx), torch.tensor(1.0))
    peaked = torch.tensor([[0.7, 0.1, 0.1, 0.1]]).repeat(N, 1)
    assert balance_loss(peaked, torch.zeros(N, 1, dtype=torch.long)) > 2.0


def test_router_bias_changes_selection_not_weights_and_balances():
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    _, idx0, w0 = route(logits, 1)
    _, idx1, w1 = route(logits, 1, bias=torch.tensor([0.0, 0.0, 5.0]))
    assert idx0.item() == 0 and idx1.item() == 2
    assert torch.allclose(w0, torch.ones(1, 1)) and torch.allclose(w1, torch.ones(1, 1))
    m = _moe()
    m(torch.randn(64, 8, dtype=torch.float64))
    f = torch.tensor(m.last_stats["load"])
    update_router_bias(m, 0.1)
    assert torch.equal(torch.sign(m.router_bias.float()), torch.sign(f.mean() - f))
    with pytest.raises(ValueError, match="gamma"):
        update_router_bias(m, -1.0)


def test_per_expert_muon_equals_muon_on_each_expert_alone():
    torch.manual_seed(2)
    W = torch.randn(5, 6, 8)
    G = [torch.randn(5, 6, 8) for _ in range(3)]
    opt = muon(lr=0.02, ns_dtype=torch.float32)
    st_all = opt.init({"w": W})
    singles = [opt.init({"w": W[e]}) for e in range(5)]
    for g in G:
        u_all, st_all = opt.update({"w": g}, st_all, {"w": W})
        for e in range(5):
            u_e, singles[e] = opt.update({"w": g[e]}, singles[e], {"w": W[e]})
            assert torch.allclose(u_all["w"][e], u_e["w"], atol=1e-5), f"expert {e}"


@pytest.mark.parametrize("name", ["tiny_moe", "moe_2b", "tiny"])
def test_param_count_total_and_active(name):
    cfg = get_config(name)
    assert param_count(cfg, active=True) <= param_count(cfg)
    if name == "moe_2b":
        assert 1.8e9 < param_count(cfg) < 2.2e9                          # "about 2B"
        return
    model = Llama(cfg)
    total = sum(p.numel() for p in model.parameters())
    assert total == param_count(cfg)
    # active, counted from the modules: every non-routed-expert parameter + k of E experts
    routed = sum(p.numel() for n, p in model.named_parameters() if n.split(".")[-1] in ("w_gate", "w_up", "w_down"))
    active = total - routed + (routed * cfg.top_k // cfg.n_experts if cfg.n_experts else 0)
    assert active == param_count(cfg, active=True)


def test_tiny_moe_trains_and_logs_routing_statistics():
    cfg = CONFIGS["tiny_moe"]
    model = Llama(cfg, seed=0)
    x = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(0))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(15):
        loss = model.loss(x, x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0] - 0.5
    stats = routing_stats(model)
    assert set(stats) == {"layers.0.mlp", "layers.1.mlp"}
    for s in stats.values():
        assert abs(sum(s["load"]) - 1) < 1e-6 and s["dropped"] == 0 and s["aux_loss"] > 0
    # the loss with aux exceeds the bare cross-entropy by coef * sum of L_aux
    with torch.no_grad():
        full, ce = model.loss(x, x), model.loss(x, x, aux=False)
        aux = sum(s["aux_loss"] for s in routing_stats(model).values())
    assert abs(float(full - ce) - cfg.aux_loss_coef * aux) < 1e-5


def test_bad_moe_configs_are_refused():
    with pytest.raises(ValueError, match="top_k"):
        get_config("tiny_moe", top_k=9)
    with pytest.raises(ValueError, match="top_k"):
        MoE(8, 4, 3, 4)

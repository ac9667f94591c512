"""The decoder: shapes, causality, gradients, parameter count from arithmetic, the stage split."""
import math

import pytest
import torch

from gpu_runs.model import CONFIGS, Llama, get_config, layer_split, param_count, stage_of_params


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_param_count_matches_modules(name):
    """param_count(cfg) (arithmetic) == sum of numel over the built module (meta device: no memory)."""
    with torch.device("meta"):
        m = Llama(CONFIGS[name])
    assert param_count(CONFIGS[name]) == sum(p.numel() for p in m.parameters())
    untied = get_config(name, tied=False)
    with torch.device("meta"):
        mu = Llama(untied)
    assert param_count(untied) == sum(p.numel() for p in mu.parameters())
    assert param_count(untied) - param_count(CONFIGS[name]) == untied.vocab_size * untied.d_model


def test_smollm_shapes():
    """135m / 360m are the SmolLM shapes: 30 x 576 (9 heads, 3 KV), 32 x 960 (15 heads, 5 KV), vocab 49152, tied."""
    a, b = CONFIGS["135m"], CONFIGS["360m"]
    assert (a.n_layers, a.d_model, a.n_heads, a.n_kv_heads, a.d_mlp, a.vocab_size, a.tied) == (30, 576, 9, 3, 1536, 49152, True)
    assert (b.n_layers, b.d_model, b.n_heads, b.n_kv_heads, b.d_mlp, b.vocab_size, b.tied) == (32, 960, 15, 5, 2560, 49152, True)
    assert 130e6 < param_count(a) < 140e6 and 355e6 < param_count(b) < 365e6


def test_tiny_forward_backward_and_causality():
    cfg = CONFIGS["tiny"]
    m = Llama(cfg, seed=0)
    x = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(1))
    logits = m(x)
    assert logits.shape == (2, 16, 256)
    loss = m.loss(x[:, :-1], x[:, 1:])
    assert abs(loss.item() - math.log(256)) < 0.5          # near-uniform at init (std 0.02)
    loss.backward()
    for n, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, n
    x2 = x.clone()
    x2[:, 10] = (x2[:, 10] + 1) % 256
    with torch.no_grad():
        a, b = m(x), m(x2)
    torch.testing.assert_close(a[:, :10], b[:, :10])       # the past never sees the future
    assert not torch.allclose(a[:, 10:], b[:, 10:])


def test_tied_and_seeded():
    a, b = Llama(CONFIGS["tiny"], seed=3), Llama(CONFIGS["tiny"], seed=3)
    assert a.lm_head.weight is a.embed.weight
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), n
    c = Llama(CONFIGS["tiny"], seed=4)
    assert not torch.equal(a.embed.weight, c.embed.weight)
    with pytest.raises(ValueError, match="max_seq_len"):
        a(torch.zeros(1, CONFIGS["tiny"].max_seq_len + 1, dtype=torch.long))
    with pytest.raises(ValueError, match="n_heads"):
        get_config("tiny", n_kv_heads=3)


@pytest.mark.parametrize("P", [1, 2, 3])
def test_stage_of_params(P):
    cfg = get_config("small")
    m = Llama(cfg)
    st = stage_of_params(m, P)
    assert set(st) == {n for n, _ in m.named_parameters()}
    assert st["embed.weight"] == 0 and st["norm.weight"] == P - 1
    layer_stage = [st[f"layers.{i}.attn.q_proj.weight"] for i in range(cfg.n_layers)]
    assert layer_stage == sorted(layer_stage) and set(layer_stage) == set(range(P))   # contiguous, all used
    sizes = [len(r) for r in layer_split(cfg.n_layers, P)]
    assert sum(sizes) == cfg.n_layers and max(sizes) - min(sizes) <= 1
    with pytest.raises(ValueError, match="num_stages"):
        layer_split(cfg.n_layers, cfg.n_layers + 1)

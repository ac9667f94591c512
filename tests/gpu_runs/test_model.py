"""Llama decoder: parameter count from arithmetic vs the built modules, causality, shapes, stage split."""
import pytest
import torch

from gpu_runs.model import CONFIGS, Llama, ModelConfig, get_config, layer_split, param_count, stage_modules, stage_of_params


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_param_count_matches_modules(name):
    cfg = CONFIGS[name]
    with torch.device("meta"):
        m = Llama(cfg)
    assert param_count(cfg) == sum(p.numel() for p in m.parameters())


def test_smollm_135m_size():
    # SmolLM-135M reports 134.5M parameters (tied embeddings)
    assert 134_000_000 < param_count(CONFIGS["135m"]) < 135_000_000


def test_untied_counts_the_head():
    cfg = get_config("tiny", tied=False)
    assert param_count(cfg) == param_count(CONFIGS["tiny"]) + cfg.vocab_size * cfg.d_model
    assert param_count(cfg) == sum(p.numel() for p in Llama(cfg).parameters())


def test_forward_backward_and_causality():
    cfg = get_config("tiny", n_layers=1)
    m = Llama(cfg, seed=1)
    x = torch.randint(0, 256, (2, 16), generator=torch.Generator().manual_seed(0))
    logits = m(x)
    assert logits.shape == (2, 16, 256)
    x2 = x.clone()
    x2[:, 10] = (x2[:, 10] + 1) % 256
    l2 = m(x2)
    torch.testing.assert_close(logits[:, :10], l2[:, :10])
    assert not torch.allclose(logits[:, 10:], l2[:, 10:])
    loss = m.loss(x[:, :-1], x[:, 1:])
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in m.parameters())


def test_initial_loss_near_uniform():
    m = Llama(CONFIGS["tiny"], seed=0)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randint(0, 256, (4, 32), generator=g), torch.randint(0, 256, (4, 32), generator=g)
    assert abs(float(m.loss(x, y).detach()) - torch.log(torch.tensor(256.0)).item()) < 0.3


def test_seeded_init_is_deterministic():
    a, b = Llama(CONFIGS["tiny"], seed=3), Llama(CONFIGS["tiny"], seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_stage_split():
    m = Llama(get_config("tiny", n_layers=5))
    assert [list(r) for r in layer_split(5, 2)] == [[0, 1, 2], [3, 4]]
    st = stage_of_params(m, 2)
    assert st["embed.weight"] == 0 and st["norm.weight"] == 1
    assert st["layers.2.mlp.up_proj.weight"] == 0 and st["layers.3.attn.q_proj.weight"] == 1
    mods = stage_modules(m, 2)
    assert mods[0][0] is m.embed and mods[-1][-1] is m.lm_head
    with pytest.raises(ValueError, match="num_stages"):
        layer_split(2, 3)


def test_bad_config_named():
    with pytest.raises(ValueError, match="n_kv_heads"):
        ModelConfig(n_layers=1, d_model=64, n_heads=4, n_kv_heads=3, d_mlp=64)
    with pytest.raises(KeyError, match="unknown model config"):
        get_config("7b")

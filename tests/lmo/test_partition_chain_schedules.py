"""partition, chain / clipping, schedules, registry and the torch.optim adapter."""
import math

import pytest
import torch

from lmo.adam_family import adamw
from lmo.base import apply_updates, find_field
from lmo.clipping import clip_by_global_norm, clip_coefficient, global_norm, squared_norm
from lmo.combine import chain, muon_labels, partition
from lmo.delay import delayed
from lmo.muon_family import muon
from lmo.registry import OPTIMIZERS, build
from lmo.schedules import warmup_cosine
from lmo.torch_adapter import TorchOptimizer


def _model_params():
    g = torch.Generator().manual_seed(0)
    return {"embed.weight": torch.randn(11, 4, generator=g), "layers.0.attn.wq": torch.randn(4, 4, generator=g),
            "layers.0.norm.weight": torch.ones(4), "lm_head.weight": torch.randn(11, 4, generator=g)}


def test_muon_labels_follow_standard_practice():
    lab = muon_labels(_model_params())
    assert lab == {"embed.weight": "other", "layers.0.attn.wq": "matrix",
                   "layers.0.norm.weight": "other", "lm_head.weight": "other"}


def test_partition_equals_separate_optimizers():
    p = _model_params()
    g = {k: torch.randn_like(v) for k, v in p.items()}
    opt = partition({"matrix": muon(0.02), "other": adamw(1e-3)}, muon_labels)
    u, s = opt.update(g, opt.init(p), p)
    m = muon(0.02)
    um, _ = m.update({"layers.0.attn.wq": g["layers.0.attn.wq"]}, m.init({"layers.0.attn.wq": p["layers.0.attn.wq"]}),
                     {"layers.0.attn.wq": p["layers.0.attn.wq"]})
    assert torch.equal(u["layers.0.attn.wq"], um["layers.0.attn.wq"])
    assert set(find_field(s, "momentum")) == {"layers.0.attn.wq"}


def test_clip_by_global_norm_matches_torch():
    g = {"a": torch.randn(5, 3) * 3, "b": torch.randn(4) * 3}
    out, _ = clip_by_global_norm(1.0).update(g, None, None)
    ps = [torch.nn.Parameter(torch.zeros_like(v)) for v in g.values()]
    for p, v in zip(ps, g.values()):
        p.grad = v.clone()
    torch.nn.utils.clip_grad_norm_(ps, 1.0)
    for p, k in zip(ps, g):
        torch.testing.assert_close(out[k], p.grad)


@pytest.mark.parametrize("seed", range(5))
def test_stagewise_squared_norms_give_the_trainers_clip(seed):
    """The real pipeline clips with sum_s squared_norm(g^s) over its stages' blocks
    (gpu_runs.pipeline.step_rule): the trainer's clip_by_global_norm of the whole tree up to
    the association of the float64 sum (relative 1e-12 on ||g||, float32 rounding on the
    clipped gradient), and ||g|| agrees with torch.linalg.vector_norm."""
    gen = torch.Generator().manual_seed(seed)
    g = {f"p{i}": torch.randn(int(torch.randint(1, 6, (1,), generator=gen)), 3, generator=gen) * 4 for i in range(6)}
    names = list(g)
    cut = sorted(torch.randperm(5, generator=gen)[:2].add(1).tolist())
    blocks = [names[:cut[0]], names[cut[0]:cut[1]], names[cut[1]:]]
    total = sum((squared_norm({k: g[k] for k in b}) for b in blocks), torch.zeros((), dtype=torch.float64))
    ref = torch.linalg.vector_norm(torch.cat([v.double().flatten() for v in g.values()]))
    torch.testing.assert_close(total.sqrt(), ref, rtol=1e-12, atol=0)
    c = clip_coefficient(math.sqrt(float(total)), 1.0)
    trainer, _ = clip_by_global_norm(1.0).update(g, None, None)
    assert c < 1.0   # the clip is active: the coefficient is what is compared
    for k in names:
        torch.testing.assert_close(g[k] * c, trainer[k], rtol=2e-7, atol=0, msg=k)
    assert float(squared_norm({})) == 0.0


def test_clip_per_batch_index_does_not_mix_seeds():
    g = {"a": torch.stack([torch.full((3,), 10.0), torch.full((3,), 0.01)])}
    out, _ = clip_by_global_norm(1.0, batch_dims=1).update(g, None, None)
    assert torch.allclose(global_norm({"a": out["a"][0:1]}), torch.tensor(1.0, dtype=torch.float64), atol=1e-5)
    assert torch.equal(out["a"][1], g["a"][1])


def test_chain_clip_then_adamw():
    p = {"w": torch.zeros(3)}
    g = {"w": torch.tensor([30.0, 40.0, 0.0])}
    u, _ = chain(clip_by_global_norm(1.0), adamw(0.1, weight_decay=0.0)).update(g, chain(clip_by_global_norm(1.0), adamw(0.1)).init(p), p)
    assert torch.allclose(u["w"], torch.tensor([-0.1, -0.1, 0.0]), atol=1e-6)


def test_warmup_cosine_shape():
    f = warmup_cosine(1.0, 100)
    assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0)
    assert f(10) == pytest.approx(1.0) and f(100) == pytest.approx(0.1)
    assert f(55) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    vals = [f(t) for t in range(10, 101)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))


def test_registry_builds_every_optimizer_and_partitions_matrix_ones():
    p = _model_params()
    g = {k: torch.randn_like(v) for k, v in p.items()}
    for name in OPTIMIZERS:
        opt = build(name, p, schedule=lambda peak: warmup_cosine(peak, 10))
        u, _ = opt.update(g, opt.init(p), p)
        assert set(u) == set(p) and all(torch.isfinite(v).all() for v in u.values()), name
    assert "partition" in build("muon", p).name and "partition" not in build("adamw", p).name


def test_torch_adapter_matches_functional_loop_and_round_trips():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6, bias=False), torch.nn.Tanh(), torch.nn.Linear(6, 1, bias=False))
    init = {k: v.detach().clone() for k, v in model.named_parameters()}
    X, Y = torch.randn(16, 4), torch.randn(16, 1)
    fopt = delayed(muon(0.05, ns_dtype=torch.float32), 1)
    topt = TorchOptimizer(fopt, model.named_parameters())
    for _ in range(4):
        topt.zero_grad()
        torch.nn.functional.mse_loss(model(X), Y).backward()
        topt.step()
    # functional replay
    params, s = dict(init), fopt.init(init)
    m2 = torch.nn.Sequential(torch.nn.Linear(4, 6, bias=False), torch.nn.Tanh(), torch.nn.Linear(6, 1, bias=False))
    for _ in range(4):
        for (k, p) in m2.named_parameters():
            p.data.copy_(params[k])
            p.grad = None
        torch.nn.functional.mse_loss(m2(X), Y).backward()
        grads = {k: p.grad for k, p in m2.named_parameters()}
        u, s = fopt.update(grads, s, params)
        params = apply_updates(params, u)
    for k, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), params[k])
    sd = topt.state_dict()
    t2 = TorchOptimizer(fopt, model.named_parameters())
    t2.load_state_dict(sd)
    assert all(torch.equal(a, b) for a, b in zip(t2.fstate.pending.values(), topt.fstate.pending.values())
               for a, b in zip(a, b))

"""Scion's per-layer geometry (lmo.layer_geometry) against independent computations:

- each group's LMO step: the SVD polar factor for the hidden matrices, closed forms for the
  embedding's ColNorm (of the transposed map), the head's Sign / RowNorm and the vectors'
  RMS normalisation;
- the full optimizer on a small Llama-like parameter dict (embedding, attention and MLP
  matrices, norm gains, untied head), five steps, against a hand-written reference of the
  module docstring's formulas (Nesterov momentum, decoupled decay);
- pytorch-optimizer's ``SCION`` (an independent implementation of the official code's
  norms), group by group, unconstrained and constrained;
- the hidden group is lmo.muon bit for bit, so muon and scion differ only off the matrices.
"""
import math

import pytest
import torch

from lmo.muon_family import muon
from lmo.base import apply_updates
from lmo.geometry import ColNorm
from lmo.layer_geometry import SCION_GROUPS, scion, scion_labels
from lmo.registry import build

V, D, F = 24, 8, 12


def llama_like(seed=0, tied=False, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    shapes = {"embed.weight": (V, D), "layers.0.attn_norm.weight": (D,), "layers.0.attn.q_proj.weight": (D, D),
              "layers.0.attn.k_proj.weight": (D // 2, D), "layers.0.attn.v_proj.weight": (D // 2, D),
              "layers.0.attn.o_proj.weight": (D, D), "layers.0.mlp_norm.weight": (D,),
              "layers.0.mlp.up_proj.weight": (F, D), "layers.0.mlp.down_proj.weight": (D, F), "norm.weight": (D,)}
    if not tied:
        shapes["lm_head.weight"] = (V, D)
    return {k: torch.randn(s, generator=g, dtype=dtype) for k, s in shapes.items()}


def grads_like(params, seed):
    g = torch.Generator().manual_seed(seed)
    out = {k: torch.randn(v.shape, generator=g, dtype=v.dtype) for k, v in params.items()}
    out["embed.weight"][3] = 0          # a token absent from the batch
    return out


def test_labels_untied_and_tied():
    assert scion_labels(llama_like()) == {
        "embed.weight": "embed", "lm_head.weight": "head", "layers.0.attn_norm.weight": "vector",
        "layers.0.mlp_norm.weight": "vector", "norm.weight": "vector",
        **{k: "hidden" for k in llama_like() if "proj" in k}}
    assert scion_labels(llama_like(tied=True))["embed.weight"] == "head"    # the tied embedding is the head


def _first_step(params, grads, **kw):
    opt = scion(0.1, weight_decay=0.0, exact=True, **kw)
    u, _ = opt.update(grads, opt.init(params), params)
    return u


def test_each_groups_lmo_against_an_independent_computation():
    params = llama_like(1)
    grads = grads_like(params, 2)
    eta, r_e, r_h, r_v = 0.1, 1.5, 60.0, 2.0
    u = _first_step(params, grads, embed_radius=r_e, head_radius=r_h, vector_radius=r_v)
    # the first momentum is m_0 = mu g_0 and Nesterov's u_0 = mu g + (1 - mu) m_0: a positive multiple of g,
    # which every LMO here ignores
    for k, g in grads.items():
        lab = scion_labels(params)[k]
        if lab == "hidden":
            U, _, Vh = torch.linalg.svd(g, full_matrices=False)
            m, n = g.shape
            expect = -eta * math.sqrt(max(1.0, m / n)) * (U @ Vh)
        elif lab == "embed":
            rows = g.norm(dim=1, keepdim=True)
            expect = -eta * r_e * torch.where(rows > 0, math.sqrt(D) * g / rows, torch.zeros_like(g))
            # = ColNorm of the (d x vocab) map: every column (token) to RMS r_e, absent tokens stay
            torch.testing.assert_close(expect, eta * r_e * ColNorm().lmo(g.T).T, rtol=1e-12, atol=1e-14)
            assert torch.equal(u[k][3], torch.zeros(D, dtype=g.dtype))
        elif lab == "head":
            expect = -eta * r_h * torch.sign(g) / D
        else:
            expect = -eta * r_v * g / g.pow(2).mean().sqrt()
        torch.testing.assert_close(u[k], expect, rtol=1e-10, atol=1e-12, msg=lambda m, k=k: f"{k}: {m}")


def test_rownorm_head_and_scions_own_hidden_scale():
    params = llama_like(3)
    grads = grads_like(params, 4)
    u = _first_step(params, grads, head_norm="rownorm", head_radius=3.0, hidden_scale="spectral")
    g = grads["lm_head.weight"]
    torch.testing.assert_close(u["lm_head.weight"], -0.1 * 3.0 * g / (math.sqrt(D) * g.norm(dim=1, keepdim=True)),
                               rtol=1e-12, atol=1e-14)
    g = grads["layers.0.mlp.down_proj.weight"]                   # wide: Scion's sqrt(m/n) < Muon's 1
    U, _, Vh = torch.linalg.svd(g, full_matrices=False)
    torch.testing.assert_close(u["layers.0.mlp.down_proj.weight"], -0.1 * math.sqrt(D / F) * (U @ Vh),
                               rtol=1e-10, atol=1e-12)


def reference_scion(params, grads_seq, lr, beta, wd, r_e, r_h, r_v):
    """The module docstring's formulas, written out (exact polar factor by SVD)."""
    mu = 1 - beta
    labels = scion_labels(params)
    x = dict(params)
    m = {k: torch.zeros_like(v) for k, v in params.items()}
    for grads in grads_seq:
        new = {}
        for k, g in grads.items():
            m[k] = (1 - mu) * m[k] + mu * g
            u = mu * g + (1 - mu) * m[k]
            lab = labels[k]
            if lab == "hidden":
                U, _, Vh = torch.linalg.svd(u, full_matrices=False)
                step = -lr * math.sqrt(max(1.0, u.shape[0] / u.shape[1])) * (U @ Vh)
            elif lab == "embed":
                rows = u.norm(dim=1, keepdim=True)
                step = -lr * r_e * torch.where(rows > 0, math.sqrt(u.shape[1]) * u / rows, torch.zeros_like(u))
            elif lab == "head":
                step = -lr * r_h * torch.sign(u) / u.shape[1]
            else:
                step = -lr * r_v * math.sqrt(u.numel()) * u / u.norm()
            new[k] = x[k] + step - lr * wd * x[k]
        x = new
    return x


def test_full_step_on_a_llama_like_model_against_the_reference():
    params = llama_like(5)
    seq = [grads_like(params, 10 + t) for t in range(5)]
    kw = dict(embed_radius=1.0, head_radius=60.0, vector_radius=1.0)
    opt = scion(0.02, momentum=0.9, weight_decay=0.1, exact=True, **kw)
    x, s = dict(params), opt.init(params)
    for grads in seq:
        u, s = opt.update(grads, s, x)
        x = apply_updates(x, u)
    ref = reference_scion(params, seq, lr=0.02, beta=0.9, wd=0.1, r_e=1.0, r_h=60.0, r_v=1.0)
    for k in params:
        torch.testing.assert_close(x[k], ref[k], rtol=1e-10, atol=1e-12, msg=lambda m, k=k: f"{k}: {m}")


def test_the_reference_tells_a_wrong_radius_apart():
    params = llama_like(5)
    seq = [grads_like(params, 10 + t) for t in range(2)]
    opt = scion(0.02, momentum=0.9, weight_decay=0.1, exact=True, head_radius=30.0)
    x, s = dict(params), opt.init(params)
    for grads in seq:
        u, s = opt.update(grads, s, x)
        x = apply_updates(x, u)
    ref = reference_scion(params, seq, lr=0.02, beta=0.9, wd=0.1, r_e=1.0, r_h=60.0, r_v=1.0)
    assert not torch.allclose(x["lm_head.weight"], ref["lm_head.weight"])


@pytest.mark.parametrize("constrained", [False, True])
def test_matches_pytorch_optimizer_scion_group_by_group(constrained):
    """pytorch-optimizer's SCION: m <- lerp(m, g, momentum) (its momentum is our mu, no
    Nesterov), p <- (1 - lr) p if constrained, p <- p - lr * scale * lmo(m). Ours with
    nesterov=False, mu = its momentum, radius = its scale, and weight_decay = 1 for its
    constrained step. Its norms add eps = 1e-8 to the denominators: the iterates agree to
    ~3e-8 absolute after six steps (atol 1e-7)."""
    from pytorch_optimizer import SCION
    from pytorch_optimizer.optimizer.scion import LMONorm

    params = {k: v for k, v in llama_like(6).items() if k in (
        "embed.weight", "lm_head.weight", "norm.weight", "layers.0.attn_norm.weight")}
    lr, mu, r_e, r_h, r_v = 0.05, 0.1, 1.5, 60.0, 2.0
    torch_params = {k: torch.nn.Parameter(v.clone()) for k, v in params.items()}
    groups = [
        dict(params=[torch_params["embed.weight"]], norm_type=LMONorm.COL,
             norm_kwargs=dict(normalized=False, transpose=True), scale=r_e),
        dict(params=[torch_params["lm_head.weight"]], norm_type=LMONorm.SIGN, norm_kwargs=dict(normalize=True),
             scale=r_h),
        dict(params=[torch_params["norm.weight"], torch_params["layers.0.attn_norm.weight"]],
             norm_type=LMONorm.BIAS, scale=r_v),
    ]
    ref = SCION(groups, lr=lr, momentum=mu, constraint=constrained, foreach=False)
    opt = scion(lr, mu=mu, nesterov=False, weight_decay=1.0 if constrained else 0.0,
                embed_radius=r_e, head_radius=r_h, vector_radius=r_v)
    x, s = dict(params), opt.init(params)
    for t in range(6):
        grads = grads_like(params, 30 + t)
        for k, p in torch_params.items():
            p.grad = grads[k].clone()
        ref.step()
        u, s = opt.update(grads, s, x)
        x = apply_updates(x, u)
        for k, p in torch_params.items():
            torch.testing.assert_close(x[k], p.detach(), rtol=1e-6, atol=1e-7, msg=lambda m, k=k: f"{k}: {m}")


def test_hidden_group_is_muon_bit_for_bit():
    params = llama_like(7, dtype=torch.float32)
    hidden = {k: v for k, v in params.items() if scion_labels(params)[k] == "hidden"}
    opt, ref = scion(0.02, weight_decay=0.1), muon(0.02, weight_decay=0.1)
    x, s, xr, sr = dict(params), opt.init(params), dict(hidden), ref.init(hidden)
    for t in range(6):
        grads = grads_like(params, 40 + t)
        u, s = opt.update(grads, s, x)
        ur, sr = ref.update({k: grads[k] for k in hidden}, sr, xr)
        x, xr = apply_updates(x, u), apply_updates(xr, ur)
        assert all(torch.equal(x[k], xr[k]) for k in hidden)


def test_registry_build_takes_every_parameter_itself():
    params = llama_like(8, tied=True, dtype=torch.float32)
    opt = build("scion", params, weight_decay=0.1)
    s = opt.init(params)
    assert set(s.inner) == {"hidden", "head", "vector"} and set(s.inner) <= set(SCION_GROUPS)
    u, s = opt.update(grads_like(params, 9), s, params)
    assert set(u) == set(params) and all(torch.isfinite(v).all() for v in u.values())


@pytest.mark.parametrize("bad, match", [(dict(head_radius=0.0), "head_radius"), (dict(embed_radius=-1.0), "embed_radius"),
                                        (dict(vector_radius=math.inf), "vector_radius"),
                                        (dict(head_norm="colnorm"), "head_norm"), (dict(momentum=1.0), "momentum"),
                                        (dict(mu=0.0), "mu"), (dict(weight_decay=-0.1), "weight_decay")])
def test_refusals_name_the_argument(bad, match):
    with pytest.raises(ValueError, match=match):
        scion(0.02, **bad)


def test_unknown_group_label_is_refused():
    params = llama_like(9)
    opt = scion(0.02, labels=lambda p: {k: "other" for k in p})
    with pytest.raises(ValueError, match="unknown Scion groups \\['other'\\]"):
        opt.init(params)

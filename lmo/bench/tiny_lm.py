"""A torch-only stand-in for the repository's ``tiny`` decoder, for timing a training step.

``lmo`` imports nothing of ours (docs/design.md §2), so the benchmark cannot use the
trainer's model; this one has the same parameter names and shapes as the ``tiny``
config (2 layers, d=128, 4 heads, 2 KV heads, SwiGLU 384, byte vocab 256, tied head) and
the same kinds of work (RMSNorm, causal grouped-query attention, SwiGLU; no RoPE, which
is elementwise and cheap). Enough to put an optimizer update next to a forward+backward.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

TINY = dict(layers=2, d=128, heads=4, kv_heads=2, ffn=384, vocab=256)


def tiny_params(layers=2, d=128, heads=4, kv_heads=2, ffn=384, vocab=256, seed=0) -> dict:
    """name -> tensor (std 0.02, norm gains 1) with the tiny decoder's names and shapes."""
    g = torch.Generator().manual_seed(seed)
    kv = d // heads * kv_heads
    shapes = {"embed.weight": (vocab, d)}
    for i in range(layers):
        p = f"layers.{i}."
        shapes.update({p + "attn_norm.weight": (d,), p + "attn.q_proj.weight": (d, d),
                       p + "attn.k_proj.weight": (kv, d), p + "attn.v_proj.weight": (kv, d),
                       p + "attn.o_proj.weight": (d, d), p + "mlp_norm.weight": (d,),
                       p + "mlp.gate_proj.weight": (ffn, d), p + "mlp.up_proj.weight": (ffn, d),
                       p + "mlp.down_proj.weight": (d, ffn)})
    shapes["norm.weight"] = (d,)
    return {k: (torch.ones(s) if len(s) == 1 else 0.02 * torch.randn(*s, generator=g))
            for k, s in shapes.items()}


def _rms(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, eps=1e-5)


def loss_fn(params: dict, tokens: torch.Tensor, heads: int = 4, kv_heads: int = 2) -> torch.Tensor:
    """Next-token cross-entropy of the stand-in decoder on ``tokens`` (batch, seq)."""
    x = params["embed.weight"][tokens[:, :-1]]
    B, T, d = x.shape
    hd = d // heads
    i = 0
    while f"layers.{i}.attn_norm.weight" in params:
        p = lambda n: params[f"layers.{i}.{n}.weight"]  # noqa: E731
        h = _rms(x, p("attn_norm"))
        q = (h @ p("attn.q_proj").T).view(B, T, heads, hd).transpose(1, 2)
        k = (h @ p("attn.k_proj").T).view(B, T, kv_heads, hd).transpose(1, 2)
        v = (h @ p("attn.v_proj").T).view(B, T, kv_heads, hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + a.transpose(1, 2).reshape(B, T, d) @ p("attn.o_proj").T
        h = _rms(x, p("mlp_norm"))
        x = x + (F.silu(h @ p("mlp.gate_proj").T) * (h @ p("mlp.up_proj").T)) @ p("mlp.down_proj").T
        i += 1
    logits = _rms(x, params["norm.weight"]) @ params["embed.weight"].T
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def grads_of(params: dict, tokens: torch.Tensor) -> tuple[float, dict]:
    """(loss, name -> gradient) by one forward and backward pass."""
    leaves = {k: v.detach().requires_grad_(True) for k, v in params.items()}
    loss = loss_fn(leaves, tokens)
    gs = torch.autograd.grad(loss, list(leaves.values()))
    return float(loss.detach()), dict(zip(leaves, gs))

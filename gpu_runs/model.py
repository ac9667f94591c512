"""A Llama-style decoder (nanoGPT-readable): RMSNorm, RoPE, SwiGLU, grouped-query attention, no biases.

Structure (so the pipeline can split it by layers)::

    Llama.embed    nn.Embedding(vocab, d)
    Llama.layers   nn.ModuleList of Block (attention + SwiGLU MLP, pre-norm residual)
    Llama.norm     RMSNorm(d)
    Llama.lm_head  nn.Linear(d, vocab, bias=False); weight shared with embed when tied

Forward: h_0 = embed(x); h_{l+1} = h_l + attn(norm(h_l)); h_{l+1} += mlp(norm(h_{l+1}));
logits = lm_head(norm(h_L)).  ``stage_modules(model, P)`` gives the contiguous layer split
used by the pipeline (stage 0 holds ``embed``, the last stage holds ``norm`` and ``lm_head``).

Named configs (``CONFIGS``): ``tiny`` (2 layers, d=128, byte vocab, CPU seconds),
``small`` (4 layers, d=192, the second CPU size), ``135m`` (SmolLM-135M shape) and
``360m`` (SmolLM-360M shape); mixture-of-experts ``tiny_moe`` (CPU) and ``moe_2b`` (GPU),
whose FFN is gpu_runs.moe.MoE. ``param_count(cfg[, active=True])`` is the count from
config arithmetic (total, or what one token uses).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from gpu_runs.moe import MoE
from gpu_runs.moe import aux_loss as moe_aux_loss


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the decoder. ``n_kv_heads`` divides ``n_heads`` (grouped-query attention)."""

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_mlp: int
    vocab_size: int = 256
    max_seq_len: int = 64
    tied: bool = True
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    init_std: float = 0.02
    n_experts: int = 0          # 0: dense SwiGLU MLP; > 0: gpu_runs.moe.MoE in every layer
    top_k: int = 2
    n_shared_experts: int = 0
    d_expert: int = 0           # hidden width of one expert (0: d_mlp)
    aux_loss_coef: float = 0.01
    aux_groups: int = 1         # L_aux as the mean over this many equal groups of a batch's sequences

    def __post_init__(self):
        for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "d_mlp", "vocab_size", "max_seq_len"):
            v = getattr(self, k)
            if not isinstance(v, int) or v <= 0:
                raise ValueError(f"ModelConfig.{k} must be a positive int, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"ModelConfig.d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"ModelConfig.n_heads={self.n_heads} must be divisible by n_kv_heads={self.n_kv_heads}")
        if self.n_experts:
            for k in ("n_experts", "top_k"):
                if not isinstance(getattr(self, k), int) or getattr(self, k) < 1:
                    raise ValueError(f"ModelConfig.{k} must be a positive int, got {getattr(self, k)!r}")
            if self.top_k > self.n_experts:
                raise ValueError(f"ModelConfig.top_k={self.top_k} exceeds n_experts={self.n_experts}")
            if not isinstance(self.aux_groups, int) or self.aux_groups < 1:
                raise ValueError(f"ModelConfig.aux_groups must be a positive int, got {self.aux_groups!r}")
            if self.n_shared_experts < 0 or self.d_expert < 0 or self.aux_loss_coef < 0:
                raise ValueError("ModelConfig: n_shared_experts, d_expert and aux_loss_coef must be >= 0")
        if (self.d_model // self.n_heads) % 2:
            raise ValueError("ModelConfig: head dim d_model/n_heads must be even (RoPE rotates pairs)")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def expert_width(self) -> int:
        return self.d_expert or self.d_mlp


CONFIGS: dict[str, ModelConfig] = {
    "tiny": ModelConfig(n_layers=2, d_model=128, n_heads=4, n_kv_heads=2, d_mlp=384, vocab_size=256, max_seq_len=64),
    "small": ModelConfig(n_layers=4, d_model=192, n_heads=6, n_kv_heads=2, d_mlp=512, vocab_size=256, max_seq_len=128),
    "135m": ModelConfig(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, d_mlp=1536, vocab_size=49152,
                        max_seq_len=2048),
    "360m": ModelConfig(n_layers=32, d_model=960, n_heads=15, n_kv_heads=5, d_mlp=2560, vocab_size=49152,
                        max_seq_len=2048),
    # mixture of experts (gpu_runs.moe): 8 routed experts, top-2, one shared expert
    "tiny_moe": ModelConfig(n_layers=2, d_model=128, n_heads=4, n_kv_heads=2, d_mlp=384, vocab_size=256,
                            max_seq_len=64, n_experts=8, top_k=2, n_shared_experts=1, d_expert=128),
    # about 2B parameters in total, ~0.4B active: the GPU-scale MoE of the paper's 2B study
    "moe_2b": ModelConfig(n_layers=24, d_model=1024, n_heads=16, n_kv_heads=4, d_mlp=2816,
                          vocab_size=49152, max_seq_len=2048, n_experts=64, top_k=8,
                          n_shared_experts=1, d_expert=384),
}


def get_config(name: str, **overrides) -> ModelConfig:
    """A named config, optionally with fields replaced (e.g. ``vocab_size=256`` for byte data)."""
    if name not in CONFIGS:
        raise KeyError(f"config: unknown model config {name!r}; choose from {sorted(CONFIGS)}")
    return replace(CONFIGS[name], **overrides) if overrides else CONFIGS[name]


def param_count(cfg: ModelConfig, active: bool = False) -> int:
    """Number of parameters from the shapes (``active``: those one token uses).

    per layer: 2 d (norms) + d^2 (q) + 2 d (h_kv hd) (k, v) + d^2 (o) + FFN, where the FFN is
    3 d d_mlp (dense) or, for MoE with expert width d_e, E d (router) + (E or k) 3 d d_e
    (routed experts, all or the top k) + n_shared 3 d d_e;
    total: V d (embed) + L * per-layer + d (final norm) + (0 if tied else V d).
    """
    d, kv = cfg.d_model, cfg.n_kv_heads * cfg.head_dim
    if cfg.n_experts:
        de = cfg.expert_width
        routed = cfg.top_k if active else cfg.n_experts
        ffn = cfg.n_experts * d + (routed + cfg.n_shared_experts) * 3 * d * de
    else:
        ffn = 3 * d * cfg.d_mlp
    per_layer = 2 * d + d * d + 2 * d * kv + d * d + ffn
    return cfg.vocab_size * d + cfg.n_layers * per_layer + d + (0 if cfg.tied else cfg.vocab_size * d)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * w."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


def rope_tables(seq_len: int, head_dim: int, theta: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of angle t * theta^(-2i/hd), shape (seq_len, hd/2)."""
    inv = theta ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    ang = torch.outer(torch.arange(seq_len, device=device, dtype=torch.float32), inv)
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x_{2i}, x_{2i+1}) by the position angle; x: (B, H, T, hd)."""
    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]
    c, s = cos[: x.shape[-2]], sin[: x.shape[-2]]
    out = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)
    return out.to(x.dtype)


class Attention(nn.Module):
    """Causal grouped-query attention: n_kv_heads key/value heads shared by n_heads query heads."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        hd = cfg.head_dim
        self.q_proj = nn.Linear(cfg.d_model, cfg.n_heads * hd, bias=False)
        self.k_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(cfg.d_model, cfg.n_kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(cfg.n_heads * hd, cfg.d_model, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        c, hd = self.cfg, self.cfg.head_dim
        q = self.q_proj(x).view(B, T, c.n_heads, hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, c.n_kv_heads, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        rep = c.n_heads // c.n_kv_heads
        if rep > 1:
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, c.n_heads * hd))


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.d_model, cfg.d_mlp, bias=False)
        self.up_proj = nn.Linear(cfg.d_model, cfg.d_mlp, bias=False)
        self.down_proj = nn.Linear(cfg.d_mlp, cfg.d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    """h += attn(norm(h)); h += mlp(norm(h))."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.mlp_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.mlp = (MoE(cfg.d_model, cfg.expert_width, cfg.n_experts, cfg.top_k, cfg.n_shared_experts,
                        cfg.aux_groups) if cfg.n_experts else MLP(cfg))

    def forward(self, h, cos, sin):
        h = h + self.attn(self.attn_norm(h), cos, sin)
        return h + self.mlp(self.mlp_norm(h))


class Llama(nn.Module):
    """The decoder. ``forward(idx) -> logits`` (B, T, V); ``loss(idx, targets)`` is mean cross-entropy."""

    def __init__(self, cfg: ModelConfig, *, seed: int | None = None):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tied:
            self.lm_head.weight = self.embed.weight
        cos, sin = rope_tables(cfg.max_seq_len, cfg.head_dim, cfg.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.reset_parameters(seed)

    def reset_parameters(self, seed: int | None = None) -> None:
        """N(0, std^2) for matrices, residual outputs scaled by 1/sqrt(2 L); norms = 1. Seeded generator."""
        g = torch.Generator().manual_seed(0 if seed is None else seed)
        std = self.cfg.init_std
        for name, p in self.named_parameters():
            if p.ndim == 1:
                with torch.no_grad():
                    p.fill_(1.0)
                continue
            out_proj = name.endswith(("o_proj.weight", "down_proj.weight", "w_down", "shared_down.weight"))
            s = std / math.sqrt(2 * self.cfg.n_layers) if out_proj else std
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=g) * s)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        T = idx.shape[-1]
        if T > self.cfg.max_seq_len:
            raise ValueError(f"idx: sequence length {T} exceeds max_seq_len={self.cfg.max_seq_len}")
        h = self.embed(idx)
        for layer in self.layers:
            h = layer(h, self.rope_cos, self.rope_sin)
        return self.lm_head(self.norm(h))

    def loss(self, idx: torch.Tensor, targets: torch.Tensor, aux: bool = True) -> torch.Tensor:
        """Mean cross-entropy, plus ``aux_loss_coef * sum of L_aux`` over MoE layers when ``aux``."""
        logits = self.forward(idx)
        ce = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        extra = moe_aux_loss(self) if aux and self.cfg.n_experts else None
        return ce if extra is None else ce + self.cfg.aux_loss_coef * extra


def layer_split(n_layers: int, num_stages: int) -> list[range]:
    """Contiguous, balanced split of layers 0..n-1 into P stages (earlier stages get the remainder)."""
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ValueError(f"num_stages must be a positive int, got {num_stages!r}")
    if num_stages > n_layers:
        raise ValueError(f"num_stages={num_stages} exceeds n_layers={n_layers}")
    base, extra = divmod(n_layers, num_stages)
    out, start = [], 0
    for s in range(num_stages):
        n = base + (1 if s < extra else 0)
        out.append(range(start, start + n))
        start += n
    return out


def stage_of_params(model: Llama, num_stages: int) -> dict[str, int]:
    """Parameter name -> pipeline stage of ``model``'s parameters (:func:`stage_of_names`)."""
    return stage_of_names([n for n, _ in model.named_parameters()], model.cfg.n_layers, num_stages)


def stage_of_names(names, n_layers: int, num_stages: int) -> dict[str, int]:
    """Parameter name -> pipeline stage: ``embed`` on stage 0, ``layers.i`` by :func:`layer_split`,
    ``norm`` / ``lm_head`` on the last stage (a tied head is named ``embed.weight``: stage 0)."""
    split = layer_split(n_layers, num_stages)
    layer_stage = {i: s for s, r in enumerate(split) for i in r}
    out = {}
    for name in names:
        if name.startswith("embed."):
            out[name] = 0
        elif name.startswith("layers."):
            out[name] = layer_stage[int(name.split(".")[1])]
        else:
            out[name] = num_stages - 1
    return out


def stage_modules(model: Llama, num_stages: int) -> list[list[nn.Module]]:
    """Modules of each stage, in forward order: [embed, layers...] ... [layers..., norm, lm_head]."""
    split = layer_split(model.cfg.n_layers, num_stages)
    stages = [[model.layers[i] for i in r] for r in split]
    stages[0].insert(0, model.embed)
    stages[-1].extend([model.norm, model.lm_head])
    return stages

"""A mixture-of-experts SwiGLU layer: top-k routing, an optional shared expert, load balancing.

For a token x (row of the (N, d) token matrix) and E routed experts::

    p      = softmax(W_r x)                      router probabilities, W_r: (E, d)
    S(x)   = top-k of (p + b)                    selection; b is the balancing bias (buffer,
                                                 0 unless aux-loss-free balancing moves it)
    w_e    = p_e / sum_{j in S} p_j  (e in S)    gate weights, renormalized over the top k
    y      = sum_{e in S} w_e SwiGLU_e(x) + sum_{s < n_shared} SwiGLU_s(x)
    SwiGLU_e(x) = W_down[e] (silu(W_gate[e] x) * (W_up[e] x))

The expert weights are stored as one 3-D tensor per projection and layer,
``w_gate``/``w_up``: (E, d_e, d) and ``w_down``: (E, d, d_e), in nn.Linear's (out, in)
layout: the leading dimension is a batch for `lmo` (docs/design.md §7), so Muon
orthogonalizes each expert's matrix on its own.

Load balancing (Switch / GShard): with f_e = (number of the N k routing slots that go to
e) / (N k) and P_e = mean_n p_{n,e},

    L_aux = E * sum_e f_e P_e,

which is 1 when routing is uniform; the model's loss adds ``aux_loss_coef * L_aux`` per
MoE layer. f_e and P_e are means over the batch, so L_aux is not additive over row groups:
with ``aux_groups = G`` the layer's term is the mean over G equal groups of batch rows
(sequences), L_aux = (1/G) sum_g E sum_e f_e^g P_e^g (:func:`grouped_balance_loss`), which is
what a pipeline with G microbatches computes (``gpu_runs.pipeline.moe``).
f_e carries no gradient, so (G = 1) dL_aux/dlogit_{n,j} = (E/N) p_{n,j} (f_j - sum_e f_e p_{n,e}).
Aux-loss-free balancing (DeepSeek-V3): after a step, ``b_e += gamma * sign(mean(f) - f_e)``
(:func:`update_router_bias`); b only changes which experts are selected, never w.
No capacity limit: no token is dropped (``dropped`` is logged as 0 for that reason).
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def route(logits: torch.Tensor, top_k: int, bias: torch.Tensor | None = None):
    """(probs (N, E), top-k indices (N, k), gate weights (N, k)) for router logits (N, E).

    Selection uses p + bias; the weights are p at the selected experts renormalized to 1.
    """
    probs = torch.softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
    score = probs if bias is None else probs + bias.to(probs.dtype)
    idx = torch.topk(score, top_k, dim=-1).indices
    w = probs.gather(-1, idx)
    return probs, idx, w / w.sum(-1, keepdim=True)


def load_fractions(idx: torch.Tensor, n_experts: int) -> torch.Tensor:
    """f_e = share of the N k routing slots that go to expert e (sums to 1; no gradient)."""
    counts = torch.bincount(idx.reshape(-1), minlength=n_experts).to(torch.float32)
    return counts / idx.numel()


def balance_loss(probs: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """L_aux = E * sum_e f_e P_e with P_e = mean over tokens of p_{n,e} (1 for uniform routing)."""
    n_experts = probs.shape[-1]
    return n_experts * (load_fractions(idx, n_experts).to(probs.dtype) * probs.mean(0)).sum()


def grouped_balance_loss(probs: torch.Tensor, idx: torch.Tensor, groups: int) -> torch.Tensor:
    """(1/G) sum_g L_aux(group g) over G equal contiguous groups of the N token rows (G = 1:
    :func:`balance_loss`). Rows are batch-major, so a group of N/G rows is B/G whole sequences."""
    n = probs.shape[0]
    if not isinstance(groups, int) or groups < 1 or n % groups:
        raise ValueError(f"aux_groups: must be a positive int dividing the {n} token rows, got {groups!r}")
    if groups == 1:
        return balance_loss(probs, idx)
    return torch.stack([balance_loss(p, i) for p, i in zip(probs.chunk(groups), idx.chunk(groups))]).mean()


class MoE(nn.Module):
    """Routed SwiGLU experts (+ ``n_shared`` always-on experts); forward(x (B, T, d)) -> (B, T, d).

    After each forward, ``last_aux`` holds L_aux (with gradient) and ``last_stats`` the
    routing statistics (expert load f_e, its max / min relative to uniform, aux loss,
    dropped tokens) as plain floats; the load is over the whole batch, L_aux over
    ``aux_groups`` equal groups of its sequences (:func:`grouped_balance_loss`).
    """

    def __init__(self, d_model: int, d_expert: int, n_experts: int, top_k: int, n_shared: int = 0,
                 aux_groups: int = 1):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k: must lie in [1, n_experts={n_experts}], got {top_k}")
        if not isinstance(aux_groups, int) or aux_groups < 1:
            raise ValueError(f"aux_groups: must be a positive int, got {aux_groups!r}")
        self.n_experts, self.top_k, self.n_shared, self.aux_groups = n_experts, top_k, n_shared, aux_groups
        self.router = nn.Linear(d_model, n_experts, bias=False)
        self.w_gate = nn.Parameter(torch.empty(n_experts, d_expert, d_model))
        self.w_up = nn.Parameter(torch.empty(n_experts, d_expert, d_model))
        self.w_down = nn.Parameter(torch.empty(n_experts, d_model, d_expert))
        if n_shared:
            self.shared_gate = nn.Linear(d_model, n_shared * d_expert, bias=False)
            self.shared_up = nn.Linear(d_model, n_shared * d_expert, bias=False)
            self.shared_down = nn.Linear(n_shared * d_expert, d_model, bias=False)
        self.register_buffer("router_bias", torch.zeros(n_experts))
        self.last_aux: torch.Tensor | None = None
        self.last_stats: dict = {}

    def expert(self, e: int, x: torch.Tensor) -> torch.Tensor:
        """SwiGLU_e(x) for rows x (n, d)."""
        return (F.silu(x @ self.w_gate[e].mT) * (x @ self.w_up[e].mT)) @ self.w_down[e].mT

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        xt = x.reshape(-1, shape[-1])
        probs, idx, w = route(self.router(xt), self.top_k, self.router_bias)
        out = torch.zeros_like(xt)
        for e in range(self.n_experts):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel():
                out.index_add_(0, tok, w[tok, slot, None].to(xt.dtype) * self.expert(e, xt[tok]))
        if self.n_shared:
            out = out + self.shared_down(F.silu(self.shared_gate(xt)) * self.shared_up(xt))
        if x.ndim > 2 and shape[0] % self.aux_groups:
            raise ValueError(f"aux_groups: {self.aux_groups} does not divide the batch of {shape[0]} sequences")
        self.last_aux = grouped_balance_loss(probs, idx, self.aux_groups)
        f = load_fractions(idx, self.n_experts)
        self.last_stats = {"load": [float(v) for v in f],
                           "load_max_over_uniform": float(f.max()) * self.n_experts,
                           "load_min_over_uniform": float(f.min()) * self.n_experts,
                           "aux_loss": float(self.last_aux.detach()), "dropped": 0}
        return out.reshape(shape)


@torch.no_grad()
def update_router_bias(model: nn.Module, gamma: float) -> None:
    """Aux-loss-free balancing: b_e += gamma * sign(mean(f) - f_e) for every MoE layer's last batch."""
    if gamma < 0 or not math.isfinite(gamma):
        raise ValueError(f"gamma: must be a finite number >= 0, got {gamma}")
    for m in model.modules():
        if isinstance(m, MoE) and m.last_stats:
            f = torch.tensor(m.last_stats["load"], device=m.router_bias.device)
            m.router_bias.add_(gamma * torch.sign(f.mean() - f))


def routing_stats(model: nn.Module) -> dict:
    """Per MoE layer (by module name) the routing statistics of its last forward."""
    return {name: dict(m.last_stats) for name, m in model.named_modules() if isinstance(m, MoE) and m.last_stats}


def aux_loss(model: nn.Module) -> torch.Tensor | None:
    """Sum of L_aux over the model's MoE layers from their last forward (None for a dense model)."""
    terms = [m.last_aux for m in model.modules() if isinstance(m, MoE) and m.last_aux is not None]
    return torch.stack(terms).sum() if terms else None

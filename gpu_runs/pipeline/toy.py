"""A toy decoder-shaped model, data and optimizer for exercising the pipeline engine
without the real model (tests, the synthetic benchmark).

``ToyLM`` has the attributes the stage splitter needs (``embed``, ``layers``, ``norm``,
``lm_head``): token embedding, residual tanh-MLP layers h <- h + W2 tanh(W1 h), LayerNorm,
linear head (``tied``: the head's weight is the embedding's). ``toy_batch(seed, step, batch_size, seq_len, vocab)`` draws token ids from
``torch.Generator`` seeded by (seed, step), targets = inputs shifted by one.
``sgd_momentum(lr, momentum, weight_decay)`` is the heavy-ball optimizer in the ``lmo``
protocol, d_t = -lr (m_t + wd x_t), m_t = beta m_{t-1} + g_t.
"""
from __future__ import annotations

from gpu_runs.pipeline.problem import Problem

import torch
from torch import nn

from lmo.base import Optimizer


class ToyLayer(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.w1 = nn.Linear(dim, 2 * dim, bias=False)
        self.w2 = nn.Linear(2 * dim, dim, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.w2(torch.tanh(self.w1(h)))


class ToyLM(nn.Module):
    def __init__(self, vocab: int = 32, dim: int = 16, num_layers: int = 4, seed: int = 0,
                 tied: bool = False):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(ToyLayer(dim) for _ in range(num_layers))
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        with torch.no_grad():
            for p in self.parameters():
                if p.ndim > 1:
                    p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
        if tied:
            self.lm_head.weight = self.embed.weight
        self.vocab, self.dim = vocab, dim

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        logits = self.lm_head(self.norm(h))
        return nn.functional.cross_entropy(logits.flatten(0, -2).float(), y.flatten())


def toy_batch(seed: int, step: int, batch_size: int, seq_len: int, vocab: int):
    """(x, y) deterministic in (seed, step); y_i = x_{i+1} (a shifted random sequence)."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    seq = torch.randint(0, vocab, (batch_size, seq_len + 1), generator=g)
    return seq[:, :-1], seq[:, 1:]



def sgd_momentum(lr: float = 0.05, momentum: float = 0.9, weight_decay: float = 0.0) -> Optimizer:
    """m_t = beta m_{t-1} + g_t, d_t = -lr (m_t + wd x_t) (state: dict with 'm', 'step')."""

    def init(params):
        return {"m": {k: torch.zeros_like(v) for k, v in params.items()},
                "step": torch.zeros((), dtype=torch.long)}

    def update(grads, state, params):
        m = {k: momentum * state["m"][k] + grads[k] for k in grads}
        d = {k: -lr * (m[k] + weight_decay * params[k]) for k in grads}
        return d, {"m": m, "step": state["step"] + 1}

    return Optimizer(init, update, name="sgd_momentum",
                     hyper=dict(lr=lr, momentum=momentum, weight_decay=weight_decay))


def toy_problem(args) -> Problem:
    model = ToyLM(vocab=32, dim=args.toy_dim, num_layers=args.toy_layers, seed=args.seed, tied=args.toy_tied)
    lr = args.lr if args.lr is not None else 0.05
    if args.optimizer != "sgd":
        raise ValueError(f"--model toy supports --optimizer sgd only, got {args.optimizer!r}")
    opt = lambda params: sgd_momentum(lr, args.momentum if args.momentum is not None else 0.9,
                                      args.weight_decay or 0.0)
    return Problem(model, lambda t: toy_batch(args.seed, t, args.batch_size, args.seq_len, 32),
                   opt, lambda t: lr, args.clip or None, args.toy_dim,
                   val_batch=lambda i: toy_batch(args.seed + 7919, i, args.batch_size, args.seq_len, 32))

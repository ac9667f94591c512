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


def toy_problem(job) -> Problem:
    """A :class:`gpu_runs.pipeline.Problem` for ``--model toy``: the run spec ``job.run`` gives
    seed, batch, lr (None: 0.05, constant), momentum (None: 0.9), weight decay and clipping;
    the toy's sizes are process knobs (``job.opts``: --toy-dim, --toy-layers, --toy-tied)."""
    run, opts = job.run, job.opts
    model = ToyLM(vocab=32, dim=opts.toy_dim, num_layers=opts.toy_layers, seed=run.seed, tied=opts.toy_tied)
    lr = run.lr if run.lr is not None else 0.05
    opt = lambda params: sgd_momentum(lr, run.momentum if run.momentum is not None else 0.9,
                                      run.weight_decay or 0.0)
    return Problem(model, lambda t: toy_batch(run.seed, t, run.batch_size, run.seq_len, 32),
                   opt, run.grad_clip or None, opts.toy_dim,
                   val_batch=lambda i: toy_batch(run.seed + 7919, i, run.batch_size, run.seq_len, 32))

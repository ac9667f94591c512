"""Gradient clipping by global norm (optax's clipping module): ``squared_norm`` and ``global_norm``,
``clip_coefficient`` (the one clipping formula, also the real pipeline's) and the
transform ``clip_by_global_norm``, composed with an optimizer by :func:`lmo.combine.chain`:
``chain(clip_by_global_norm(1.0), adamw(1e-3))`` clips the gradient and then takes an AdamW step.
"""
from __future__ import annotations

import torch

from lmo.base import EmptyState, Optimizer, check_finite, check_nonneg


def squared_norm(tree, batch_dims: int = 0) -> torch.Tensor:
    """||g||_2^2 = sum over tensors (in the tree's order) of sum_i g_i^2, in float64; with
    ``batch_dims=k`` one value per index of the k leading (batch) dims. The real pipeline
    all-reduces this per stage (``gpu_runs.pipeline.step_rule``): sum_s ||g^s||^2 = ||g||^2.
    An empty tree: 0.

    >>> squared_norm({"a": torch.tensor([3.0]), "b": torch.tensor([4.0])})
    tensor(25., dtype=torch.float64)
    """
    total = None
    for g in tree.values():
        g = torch.view_as_real(g) if g.is_complex() else g       # |z|^2 = re^2 + im^2
        sq = g.detach().double().pow(2)
        sq = sq.reshape(*g.shape[:batch_dims], -1).sum(-1) if batch_dims else sq.sum()
        total = sq if total is None else total + sq
    return torch.zeros((), dtype=torch.float64) if total is None else total


def global_norm(tree, batch_dims: int = 0) -> torch.Tensor:
    """||g||_2 = sqrt(:func:`squared_norm`) over every entry of every tensor; with
    ``batch_dims=k`` one norm per index of the k leading (batch) dims, so independent seeds
    never mix.

    >>> global_norm({"a": torch.tensor([3.0]), "b": torch.tensor([4.0])})
    tensor(5., dtype=torch.float64)
    """
    return squared_norm(tree, batch_dims).sqrt()


def clip_coefficient(norm, max_norm: float, eps: float = 1e-6):
    """c = min(1, max_norm / (||g||_2 + eps)), the factor a clipped gradient is scaled by (a
    tensor of norms, e.g. one per batch index, or a float: the pipeline's all-reduced norm).

    >>> round(clip_coefficient(4.0, 2.0), 6), clip_coefficient(torch.tensor([0.5]), 2.0)
    (0.5, tensor([1.]))
    """
    c = max_norm / (norm + eps)
    return c.clamp(max=1.0) if isinstance(c, torch.Tensor) else min(1.0, c)


def clip_by_global_norm(max_norm: float, batch_dims: int = 0) -> Optimizer:
    """g <- g * min(1, max_norm / ||g||_2) with ||g||_2 the global norm over all parameters
    (as torch.nn.utils.clip_grad_norm_, which uses max_norm / (||g|| + 1e-6)). Note that
    without ``batch_dims`` the norm mixes any leading batch dim; pass ``batch_dims=k``
    to clip each of the k leading indices separately.

    >>> clip = clip_by_global_norm(1.0)
    >>> clip.update({"a": torch.tensor([3.0]), "b": torch.tensor([4.0])}, clip.init({}))[0]
    {'a': tensor([0.6000]), 'b': tensor([0.8000])}
    """
    check_nonneg(max_norm, "max_norm")
    if max_norm <= 0:
        raise ValueError(f"max_norm must be > 0, got {max_norm!r}")

    def init(params):
        return EmptyState()

    def update(grads, state, params=None):
        check_finite(grads)
        norm = global_norm(grads, batch_dims)
        coef = clip_coefficient(norm, max_norm)
        out = {}
        for k, g in grads.items():
            c = coef.reshape(*coef.shape, *([1] * (g.ndim - batch_dims))) if batch_dims else coef
            out[k] = (g * c.to(g.dtype))
        return out, state

    return Optimizer(init, update, name="clip_by_global_norm", hyper=dict(max_norm=max_norm))

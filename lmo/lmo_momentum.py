"""The LMO-momentum method (docs/design.md §3-4), with any geometry of lmo.geometry.

    m_t = (1 - mu) m_{t-1} + mu g_t
    u_t = m_t                              (plain)   or   mu g_t + (1 - mu) m_t   (Nesterov)
    d_t = eta_t * s(shape) * lmo(u_t) - eta_t * lambda * x_t

``lmo(u) = argmin_{||d|| <= 1} <u, d>``, so the step ``eta_t s lmo(u_t)`` has norm at most
``eta_t s`` and points downhill. ``s`` is a per-shape scale (1 by default; Muon's
shape factors below). Weight decay is decoupled (AdamW / torch.optim.Muon style) and sees
the ``params`` passed to ``update`` (x_t, the iterate the gradient was taken at).

Momentum start: ``init_momentum="zero"`` is m_{-1} = 0, so m_0 = mu g_0 (what torch does);
``"grad"`` is m_0 = g_0 (what the theory assumes, docs/design.md §5).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Union

import torch

from lmo.base import (Optimizer, ScalarOrSchedule, check_finite, check_lr, check_mu,
                      check_nonneg, check_same_keys, resolve_lr, step_counter, decoupled_decay, zeros_like_tree)

ShapeScale = Union[None, float, str, Callable[[tuple], float]]


class LMOMomentumState(NamedTuple):
    """step t (int64 scalar: steps taken) and the momentum m_{t-1} per parameter."""

    step: torch.Tensor
    momentum: dict


def shape_scale(scale: ShapeScale, shape) -> float:
    """The per-matrix step multiplier s(shape) for a (..., rows, cols) parameter.

    - ``None`` / a number: that number (None -> 1).
    - ``"original"``: sqrt(max(1, rows / cols))  (Keller Jordan's Muon; torch.optim.Muon default)
    - ``"match_rms_adamw"``: 0.2 * sqrt(max(rows, cols))  (Moonlight; torch.optim.Muon option)
    - ``"spectral"``: sqrt(fan_out / fan_in) = sqrt(rows / cols)  (the spectral condition)
    - a callable: ``scale(shape)``.
    """
    if scale is None:
        return 1.0
    if isinstance(scale, (int, float)):
        return float(scale)
    if callable(scale):
        return float(scale(tuple(shape)))
    rows, cols = (shape[-2], shape[-1]) if len(shape) >= 2 else (shape[-1], 1)
    if scale == "original":
        return math.sqrt(max(1.0, rows / cols))
    if scale == "match_rms_adamw":
        return 0.2 * math.sqrt(max(rows, cols))
    if scale == "spectral":
        return math.sqrt(rows / cols)
    raise ValueError(f"scale must be None, a number, a callable or one of "
                     f"'original', 'match_rms_adamw', 'spectral'; got {scale!r}")


def _check_scale(scale: ShapeScale) -> None:
    if isinstance(scale, str):
        shape_scale(scale, (2, 2))
    elif scale is not None and not callable(scale):
        check_nonneg(scale, "scale")


def lmo_momentum(lr: ScalarOrSchedule, geometry, mu: float = 0.05, nesterov: bool = False,
                 scale: ShapeScale = None, weight_decay: float = 0.0, *,
                 init_momentum: str = "zero", matrix_only: bool | None = None,
                 name: str = "lmo_momentum") -> Optimizer:
    """LMO with momentum (module docstring). ``geometry``: an lmo.geometry object.

    ``matrix_only`` (default: True for geometries that need (..., m, n) input) refuses
    parameters with fewer than two dims before any work, naming them.
    """
    check_lr(lr)
    check_mu(mu)
    check_nonneg(weight_decay, "weight_decay")
    _check_scale(scale)
    if init_momentum not in ("zero", "grad"):
        raise ValueError(f"init_momentum must be 'zero' or 'grad', got {init_momentum!r}")
    for attr in ("lmo", "norm", "dual_norm"):
        if not hasattr(geometry, attr):
            raise TypeError(f"geometry must have norm/dual_norm/lmo (an lmo.geometry object), got {geometry!r}")
    if matrix_only is None:
        matrix_only = geometry.name in ("spectral", "rms_to_rms", "colnorm", "rownorm")

    def check_shapes(tree, what):
        if matrix_only:
            for k, v in tree.items():
                if v.ndim < 2:
                    raise ValueError(f"{what}['{k}'] has shape {tuple(v.shape)}: the {geometry.name} "
                                     f"LMO needs matrices (..., m, n); route it to another optimizer "
                                     f"(lmo.partition / lmo.registry.build)")

    def init(params):
        check_shapes(params, "params")
        return LMOMomentumState(step=step_counter(),
                                momentum=zeros_like_tree(params))

    def update(grads, state, params=None):
        check_same_keys(grads, params)
        check_same_keys(grads, state.momentum, "grads and optimizer state")
        check_shapes(grads, "grads")
        check_finite(grads)
        if weight_decay and params is None:
            raise ValueError("params is required when weight_decay != 0")
        eta = resolve_lr(lr, state.step)
        first = init_momentum == "grad" and int(state.step) == 0
        new_m, us = {}, {}
        for k, g in grads.items():
            m = g.clone() if first else torch.lerp(state.momentum[k], g, mu)
            us[k] = torch.lerp(g, m, 1.0 - mu) if nesterov else m   # as torch: g.lerp(m, beta)
            new_m[k] = m
        lmos = geometry.lmo_many(list(us.values())) if hasattr(geometry, "lmo_many") else [
            geometry.lmo(u) for u in us.values()]        # one batched call per matrix shape
        updates = {}
        for (k, g), direction in zip(grads.items(), lmos):
            d = direction * (eta * shape_scale(scale, g.shape))
            d = decoupled_decay(d, eta, weight_decay, params, k)
            updates[k] = d.to(g.dtype)
        return updates, LMOMomentumState(state.step + 1, new_m)

    return Optimizer(init, update, name=name,
                     hyper=dict(lr=lr, geometry=repr(geometry), mu=mu, nesterov=nesterov,
                                scale=scale if not callable(scale) else repr(scale),
                                weight_decay=weight_decay, init_momentum=init_momentum))

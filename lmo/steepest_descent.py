"""Steepest descent under a norm with momentum: ``lmo_momentum(lr, geometry)`` (docs/design.md
§3-4: m_t, then the step eta_t s lmo(u_t)) and its instances in the l_2 geometry
(``normalized_sgd``) and the l_inf one (``signum``; ``lion``, whose step interpolates two
momenta before the sign). Muon, the spectral instance, is in lmo.muon_family. Each is a
chain of lmo.transforms; ``updates`` are displacements d_t, x_{t+1} = x_t + d_t.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Union

import torch

from lmo.base import Optimizer, ScalarOrSchedule, check_nonneg
from lmo.hyperparameters import betas_with_mu, check_beta, check_lr, check_mu
from lmo.combine import chain
from lmo.geometry import L2, Sign
from lmo.transforms import (add_decoupled_decay, cast_to_grad_dtype, scale_by_lion, scale_by_lmo,
                            scale_by_momentum, shape_scale)

ShapeScale = Union[None, float, str, Callable[[tuple], float]]


# ----------------------------------------------------------------------------- LMO momentum
class LMOMomentumState(NamedTuple):
    """step t (int64 scalar: steps taken) and the momentum m_{t-1} per parameter."""

    step: torch.Tensor
    momentum: dict


def _check_scale(scale: ShapeScale) -> None:
    if isinstance(scale, str):
        shape_scale(scale, (2, 2))
    elif scale is not None and not callable(scale):
        check_nonneg(scale, "scale")


def lmo_momentum(lr: ScalarOrSchedule, geometry, mu: float = 0.05, nesterov: bool = False,
                 scale: ShapeScale = None, weight_decay: float = 0.0, *,
                 init_momentum: str = "zero", matrix_only: bool | None = None,
                 name: str = "lmo_momentum") -> Optimizer:
    """The LMO-momentum method (docs/design.md §3-4), with any geometry of lmo.geometry::

        m_t = (1 - mu) m_{t-1} + mu g_t
        u_t = m_t                              (plain)   or   mu g_t + (1 - mu) m_t   (Nesterov)
        d_t = eta_t * s(shape) * lmo(u_t) - eta_t * lambda * x_t

    = scale_by_momentum, scale_by_lmo, add_decoupled_decay, cast_to_grad_dtype.
    ``lmo(u) = argmin_{||d|| <= 1} <u, d>``, so the step ``eta_t s lmo(u_t)`` has norm at
    most ``eta_t s`` and points downhill. ``s`` is a per-shape scale (1 by default; Muon's
    shape factors: lmo.transforms.shape_scale). Weight decay is decoupled (AdamW /
    torch.optim.Muon style) and sees the ``params`` passed to ``update`` (x_t, the iterate
    the gradient was taken at).

    Momentum start: ``init_momentum="zero"`` is m_{-1} = 0, so m_0 = mu g_0 (what torch
    does); ``"grad"`` is m_0 = g_0 (what the theory assumes, docs/design.md §5).
    ``matrix_only`` (default: True for geometries that need (..., m, n) input) refuses
    parameters with fewer than two dims before any work, naming them.

    >>> from lmo.geometry import Sign
    >>> opt, x = lmo_momentum(0.1, Sign(event_ndim=1)), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([2.0, -4.0])}, opt.init(x), x)[0]     # eta lmo(m_1) = -eta sign(mu g_1)
    {'w': tensor([-0.1000,  0.1000])}
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
    return chain(scale_by_momentum(mu, nesterov, init_momentum=init_momentum),
                   scale_by_lmo(geometry, scale, matrix_only), add_decoupled_decay(weight_decay),
                 cast_to_grad_dtype(),
                 name=name, lr=lr, state=LMOMomentumState,
                 hyper=dict(lr=lr, geometry=repr(geometry), mu=mu, nesterov=nesterov,
                              scale=scale if not callable(scale) else repr(scale),
                              weight_decay=weight_decay, init_momentum=init_momentum))


def normalized_sgd(lr: ScalarOrSchedule = 0.05, momentum: float = 0.9, weight_decay: float = 0.0, *,
                   mu: float | None = None, nesterov: bool = False, event_ndim: int = 2,
                   init_momentum: str = "zero"):
    """Normalized SGD with momentum: :func:`lmo_momentum` in the l_2 / Frobenius geometry::

        m_t = beta m_{t-1} + (1 - beta) g_t,     d_t = -eta_t m_t / ||m_t||_F - eta_t lambda x_t

    The norm is per tensor (each parameter is its own l_2 ball of radius eta_t). Leading
    batch dims: pass ``event_ndim`` = number of trailing dims that form one parameter.
    ``mu`` overrides momentum as 1 - mu.

    >>> opt, x = normalized_sgd(0.1), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([3.0, 4.0])}, opt.init(x), x)[0]      # -eta m / ||m||_2
    {'w': tensor([-0.0600, -0.0800])}
    """
    if mu is None:
        check_beta(momentum, "momentum")
        mu = 1.0 - momentum
    return lmo_momentum(lr, L2(event_ndim=event_ndim), mu=mu, nesterov=nesterov,
                        weight_decay=weight_decay, init_momentum=init_momentum, matrix_only=False,
                        name="normalized_sgd")


# ----------------------------------------------------------------------------- sign methods
class LionState(NamedTuple):
    """step t (int64 scalar) and the momentum m_{t-1}."""

    step: torch.Tensor
    momentum: dict


def lion(lr: ScalarOrSchedule = 1e-4, betas=(0.9, 0.99), weight_decay: float = 0.0, *,
         mu: float | None = None) -> Optimizer:
    """Lion (Chen et al. 2023; the paper's Algorithm 2, decoupled weight decay), a step along
    the l_inf LMO, lmo(c) = -sign(c) (lmo.geometry.Sign), so every entry moves by exactly
    eta (or 0 where c = 0)::

        c_t = beta1 m_{t-1} + (1 - beta1) g_t
        d_t = -eta_t (sign(c_t) + lambda x_t)
        m_t = beta2 m_{t-1} + (1 - beta2) g_t

    = scale_by_lion, scale_by_lmo(Sign), add_decoupled_decay. ``mu`` overrides betas[0]
    (the interpolation weight of the update) as 1 - mu.

    Cross-checked: ``lion(lr, betas, weight_decay)`` equals lion-pytorch's ``Lion(lr, betas,
    weight_decay)`` and pytorch-optimizer's ``Lion`` to fp64 rounding
    (tests/lmo/test_reference_lion_pytorch.py, test_reference_pytorch_optimizer.py).

    >>> opt, x = lion(0.1), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([2.0, -4.0])}, opt.init(x), x)[0]     # -eta sign(c_1)
    {'w': tensor([-0.1000,  0.1000])}
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(weight_decay, "weight_decay")
    return chain(scale_by_lion(b1, b2), scale_by_lmo(Sign(event_ndim=1)),
                   add_decoupled_decay(weight_decay),
                 name="lion", lr=lr, state=LionState,
                 hyper=dict(lr=lr, betas=(b1, b2), weight_decay=weight_decay))


def signum(lr: ScalarOrSchedule = 1e-4, momentum: float = 0.9, weight_decay: float = 0.0, *,
           mu: float | None = None, init_momentum: str = "zero") -> Optimizer:
    """Signum (Bernstein et al. 2018), momentum then sign = :func:`lmo_momentum` in the
    l_inf geometry (``mu`` overrides momentum as 1 - mu)::

        m_t = beta m_{t-1} + (1 - beta) g_t,      d_t = -eta_t sign(m_t) - eta_t lambda x_t

    >>> opt, x = signum(0.1), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([2.0, -4.0])}, opt.init(x), x)[0]     # -eta sign(m_1)
    {'w': tensor([-0.1000,  0.1000])}
    """
    if mu is None:
        check_beta(momentum, "momentum")
        mu = 1.0 - momentum
    return lmo_momentum(lr, Sign(event_ndim=1), mu=mu, weight_decay=weight_decay,
                        init_momentum=init_momentum, matrix_only=False, name="signum")

"""The named optimizers, each a composition of lmo.transforms (docs/design.md §7; the
optax ``alias.py`` way): a momentum / moment transform, an LMO or Adam-type step, decay.

Every composition is checked bit for bit against the hand-written update it replaced
(same floating-point order of operations), and against its reference library in
tests/lmo (``-k reference``). ``updates`` are displacements d_t, x_{t+1} = x_t + d_t.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Union

import torch

from lmo.base import Optimizer, ScalarOrSchedule, betas_with_mu, check_beta, check_lr, check_mu, check_nonneg
from lmo.geometry import L2, Sign, Spectral
from lmo.matrix_view import check_flatten, matrix_view
from lmo.muon_family import muon_ns_dtype
from lmo.transforms import (add_decoupled_decay, cast_to_grad_dtype, compose, scale_by_adam,
                            scale_by_lion, scale_by_lmo, scale_by_momentum, shape_scale)

ShapeScale = Union[None, float, str, Callable[[tuple], float]]


# ----------------------------------------------------------------------------- AdamW
class AdamWState(NamedTuple):
    """step t (int64 scalar), first moment m_t, second moment v_t (and max v for amsgrad)."""

    step: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict
    max_exp_avg_sq: dict


def adamw(lr: ScalarOrSchedule = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
          weight_decay: float = 0.01, amsgrad: bool = False, *, mu: float | None = None) -> Optimizer:
    """AdamW (Loshchilov & Hutter 2019), matching torch.optim.AdamW; keywords as there.

    With t = 1, 2, ... (steps taken after this one) and eta = lr(t - 1)::

        m_t = beta1 m_{t-1} + (1 - beta1) g_t
        v_t = beta2 v_{t-1} + (1 - beta2) g_t^2           (amsgrad: vmax_t = max(vmax_{t-1}, v_t))
        d_t = -eta lambda x_t - eta / (1 - beta1^t) * m_t / (sqrt(v_t / (1 - beta2^t)) + eps)

    = scale_by_adam, then add_decoupled_decay. Weight decay is decoupled and sees x_t (the
    ``params`` given to ``update``). ``mu`` overrides beta1 as beta1 = 1 - mu. Elementwise,
    so leading batch dims are free.

    Also cross-checked against heavyball's ``AdamW(lr, betas, weight_decay)`` (fp32 rounding;
    tests/lmo/test_reference_heavyball.py).
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    return compose("adamw", lr, scale_by_adam(b1, b2, eps, amsgrad), add_decoupled_decay(weight_decay),
                   state=AdamWState,
                   hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))


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
    return compose(name, lr, scale_by_momentum(mu, nesterov, init_momentum=init_momentum),
                   scale_by_lmo(geometry, scale, matrix_only), add_decoupled_decay(weight_decay),
                   cast_to_grad_dtype(), state=LMOMomentumState,
                   hyper=dict(lr=lr, geometry=repr(geometry), mu=mu, nesterov=nesterov,
                              scale=scale if not callable(scale) else repr(scale),
                              weight_decay=weight_decay, init_momentum=init_momentum))


def muon(lr: ScalarOrSchedule = 1e-3, momentum: float = 0.95, nesterov: bool = True,
         weight_decay: float = 0.1, ns_steps: int = 5, ns_coefficients="keller",
         eps: float = 1e-7, adjust_lr_fn: str | None = None, ns_dtype="auto",
         exact: bool = False, *, mu: float | None = None, init_momentum: str = "zero",
         ns_method: str = "standard", geometry: Spectral | None = None, flatten: bool | None = None):
    """Muon (Jordan et al. 2024), matching torch.optim.Muon step for step; keywords as there
    (``momentum`` is beta; ``mu`` overrides it as 1 - mu)::

        m_t = beta m_{t-1} + (1 - beta) g_t                      (beta = momentum = 1 - mu)
        u_t = (1 - beta) g_t + beta m_t  (nesterov)   or   m_t
        d_t = -eta_t s(rows, cols) NS(u_t) - eta_t lambda x_t

    = :func:`lmo_momentum` in the Spectral geometry. NS is the Newton-Schulz approximation
    of the polar factor U V^T (lmo.polar_factor), i.e. d_t = eta_t s lmo(u_t) - eta_t
    lambda x_t in the spectral geometry (``exact=True``: the SVD polar factor, an exact
    LMO). s = Muon's shape factor (``adjust_lr_fn``): None / "original" sqrt(max(1,
    rows/cols)), "match_rms_adamw" 0.2 sqrt(max(rows, cols)), "spectral" sqrt(rows/cols).
    Weight decay is decoupled and sees x_t.

    ``ns_coefficients``: "keller" (3.4445, -4.7750, 2.0315), "polar_express", a tuple
    (a, b, c) or a per-step list (see lmo.polar_factor). NS dtype: ``ns_dtype="auto"``
    (default; None means the same) computes in ``lmo.choose_ns_dtype(device)``: bf16 where
    bf16 matmul is fast (CUDA, CPUs with bf16 instructions that measure fast), fp32 where
    not. torch.optim.Muon runs NS in bf16 even on CPU; ``ns_dtype=torch.bfloat16``
    reproduces it to rounding. NS runs once per matrix shape per step (same-shape matrices
    batched, lmo.polar_factor.newton_schulz_many); ``ns_method="gram"`` iterates on the
    Gram matrix (faster on wide/tall matrices). ``geometry``: a Spectral (subclass) to use
    instead of the one the NS keywords build, e.g. one that shards Newton-Schulz over
    data-parallel ranks (gpu_runs.pipeline.sharded_muon).

    Parameters must be matrices (..., rows, cols); leading dims of a 3-D weight are a batch
    (an MoE expert stack); ``flatten``: how weights with more than two dims are read
    (lmo.matrix_view): None refuses 4-D and more (a conv kernel), True optimizes each as its
    (out, in*kh*kw) matrix, False treats leading dims as a batch.

    Cross-checked: torch.optim.Muon (tests/lmo/test_muon.py); pytorch-optimizer's ``Muon``
    (``use_adjusted_lr=True`` <-> ``adjust_lr_fn="match_rms_adamw"``), to fp64 rounding with
    both NS in fp64; heavyball's ``Muon`` with ``nesterov=False`` (its Nesterov variant
    orthogonalises g + EMA(g), a different direction unless momentum = 0.5)
    (tests/lmo/test_reference_pytorch_optimizer.py, test_reference_heavyball.py).
    """
    check_flatten(flatten)
    if mu is None:
        check_beta(momentum, "momentum")
        mu = 1.0 - momentum
    else:
        check_mu(mu)
    if adjust_lr_fn not in (None, "original", "match_rms_adamw", "spectral"):
        raise ValueError(f"adjust_lr_fn must be None, 'original', 'match_rms_adamw' or 'spectral', "
                         f"got {adjust_lr_fn!r}")
    ns_dtype = muon_ns_dtype(ns_dtype)
    if geometry is None:
        geometry = Spectral(method="svd" if exact else "ns", ns_steps=ns_steps,
                            ns_coefficients=ns_coefficients, eps=eps, ns_dtype=ns_dtype,
                            ns_method=ns_method)
    opt = lmo_momentum(lr, geometry, mu=mu, nesterov=nesterov, scale=adjust_lr_fn or "original",
                       weight_decay=weight_decay, init_momentum=init_momentum, matrix_only=True,
                       name="muon")
    opt.hyper.update(momentum=1.0 - mu, ns_steps=ns_steps, ns_coefficients=repr(ns_coefficients),
                     eps=eps, adjust_lr_fn=adjust_lr_fn, ns_dtype=str(ns_dtype), exact=exact,
                     ns_method=ns_method)
    return matrix_view(opt, flatten, "muon")


def normalized_sgd(lr: ScalarOrSchedule = 0.05, momentum: float = 0.9, weight_decay: float = 0.0, *,
                   mu: float | None = None, nesterov: bool = False, event_ndim: int = 2,
                   init_momentum: str = "zero"):
    """Normalized SGD with momentum: :func:`lmo_momentum` in the l_2 / Frobenius geometry::

        m_t = beta m_{t-1} + (1 - beta) g_t,     d_t = -eta_t m_t / ||m_t||_F - eta_t lambda x_t

    The norm is per tensor (each parameter is its own l_2 ball of radius eta_t). Leading
    batch dims: pass ``event_ndim`` = number of trailing dims that form one parameter.
    ``mu`` overrides momentum as 1 - mu.
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
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(weight_decay, "weight_decay")
    return compose("lion", lr, scale_by_lion(b1, b2), scale_by_lmo(Sign(event_ndim=1)),
                   add_decoupled_decay(weight_decay), state=LionState,
                   hyper=dict(lr=lr, betas=(b1, b2), weight_decay=weight_decay))


def signum(lr: ScalarOrSchedule = 1e-4, momentum: float = 0.9, weight_decay: float = 0.0, *,
           mu: float | None = None, init_momentum: str = "zero") -> Optimizer:
    """Signum (Bernstein et al. 2018), momentum then sign = :func:`lmo_momentum` in the
    l_inf geometry (``mu`` overrides momentum as 1 - mu)::

        m_t = beta m_{t-1} + (1 - beta) g_t,      d_t = -eta_t sign(m_t) - eta_t lambda x_t
    """
    if mu is None:
        check_beta(momentum, "momentum")
        mu = 1.0 - momentum
    return lmo_momentum(lr, Sign(event_ndim=1), mu=mu, weight_decay=weight_decay,
                        init_momentum=init_momentum, matrix_only=False, name="signum")

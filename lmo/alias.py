"""The named optimizers, each a composition of lmo.transforms (docs/design.md §7; the
optax ``alias.py`` way): a momentum / moment transform, an LMO or Adam-type step, decay.

Every composition is checked bit for bit against the hand-written update it replaced
(same floating-point order of operations), and against its reference library in
tests/lmo (``-k reference``). ``updates`` are displacements d_t, x_{t+1} = x_t + d_t.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Union

import torch

from lmo.base import (Optimizer, ScalarOrSchedule, betas_with_mu, check_beta, check_int, check_lr, check_mu,
                      check_nonneg)
from lmo.geometry import L2, Sign, Spectral
from lmo.matrix_view import check_flatten, matrix_view
from lmo.muon_family import muon_ns_dtype
from lmo.soap_basis import scale_by_soap
from lmo.transforms import (add_coupled_decay, add_decoupled_decay, add_proximal_decay, cast_to_grad_dtype,
                            compose, ema, orthogonalize, scale_by_adam, scale_by_adan, scale_by_learning_rate,
                            scale_by_lion, scale_by_lmo, scale_by_mars, scale_by_momentum, scale_by_nadam,
                            scale_by_second_moment, shape_scale)

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
    so leading batch dims are free. A complex parameter is a pair of reals (its real and
    imaginary parts, torch.view_as_real), as in torch.optim.AdamW; g_t^2 is taken per part.

    Also cross-checked against heavyball's ``AdamW(lr, betas, weight_decay)`` (fp32 rounding;
    tests/lmo/test_reference_heavyball.py).
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    return compose("adamw", lr, scale_by_adam(b1, b2, eps, amsgrad), add_decoupled_decay(weight_decay),
                   state=AdamWState, complex_as_real=True,
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
    (default; None means the same) computes in ``lmo.choose_ns_dtype(g.device)``, a pure
    function of the gradient's device: bf16 on CUDA, fp32 elsewhere (no timing, no
    environment variable; a training run resolves it once for its machine and passes the
    dtype, gpu_runs.recipe.resolve_ns_dtype); a name ("float32", "bfloat16") or a dtype:
    that dtype. torch.optim.Muon runs NS in bf16 even on CPU; ``ns_dtype=torch.bfloat16``
    reproduces it to rounding. NS runs once per matrix shape per step (same-shape matrices
    batched, lmo.polar_factor.orthogonalize_many); ``ns_method="gram"`` iterates on the
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


# ----------------------------------------------------------------------------- NAdam, Adan
class NAdamState(NamedTuple):
    """step t (int64 scalar, steps taken), prod_{i<=t} mu_i (float64 scalar), m_t, v_t."""

    step: torch.Tensor
    mu_product: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict


def nadam(lr: ScalarOrSchedule = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
          weight_decay: float = 0.0, *, momentum_decay: float = 4e-3,
          decoupled_weight_decay: bool = False, variant: str = "torch",
          mu: float | None = None) -> Optimizer:
    """NAdam (Dozat 2016) as torch.optim.NAdam implements it (torch 2.x,
    ``_single_tensor_nadam``), plus optax's Nesterov-Adam form (``adam(nesterov=True)``).
    The two differ (torch uses Dozat's momentum-decay schedule psi, optax a constant
    beta1); ``variant="torch"`` (default) follows torch so a step-for-step cross-check is
    possible. ``updates`` are displacements d_t with x_{t+1} = x_t + d_t.

    ``variant="torch"`` (torch.optim.NAdam), with t = 1, 2, ... and eta_t = lr(t - 1)::

        g   <- g_t + lambda x_t                    (coupled L2; if not decoupled_weight_decay)
        psi_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay)),  Pi_t = prod_{i<=t} psi_i
        m_t = beta1 m_{t-1} + (1 - beta1) g,   v_t = beta2 v_{t-1} + (1 - beta2) g^2
        D   = sqrt(v_t / (1 - beta2^t)) + eps
        d_t = -eta_t [(1 - psi_t)/(1 - Pi_t) g/D + psi_{t+1}/(1 - Pi_t psi_{t+1}) m_t/D]
              - eta_t lambda x_t                   (only if decoupled_weight_decay)

    ``variant="optax"`` (optax.adam(nesterov=True)): with the same m_t, v_t and g = g_t,
    ``d_t = -eta_t [beta1 m_t/(1 - beta1^(t+1)) + (1 - beta1) g/(1 - beta1^t)] /
    (sqrt(v_t/(1 - beta2^t)) + eps)``, weight decay decoupled (AdamW-style) when nonzero.

    = add_coupled_decay (coupled L2 only), scale_by_nadam, add_decoupled_decay (decoupled
    only). ``mu`` overrides beta1 as beta1 = 1 - mu (the gap-vs-momentum sweep's one number).

    Also cross-checked against heavyball's ``NAdam(lr, betas)`` (fp32 rounding;
    tests/lmo/test_reference_heavyball.py).
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_nonneg(momentum_decay, "momentum_decay")
    if variant not in ("torch", "optax"):
        raise ValueError(f"variant must be 'torch' or 'optax', got {variant!r}")
    decoupled = decoupled_weight_decay or variant == "optax"
    return compose("nadam", lr,
                   add_coupled_decay(weight_decay) if weight_decay and not decoupled else None,
                   scale_by_nadam(b1, b2, eps, momentum_decay, variant),
                   add_decoupled_decay(weight_decay) if decoupled else None,
                   state=NAdamState,
                   hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                              momentum_decay=momentum_decay,
                              decoupled_weight_decay=decoupled_weight_decay, variant=variant))


class AdanState(NamedTuple):
    """step t, m_t (gradient EMA), v_t (gradient-difference EMA), n_t (squared EMA), g_{t-1}."""

    step: torch.Tensor
    exp_avg: dict
    exp_avg_diff: dict
    exp_avg_sq: dict
    prev_grad: dict


def adan(lr: ScalarOrSchedule = 1e-3, betas=(0.98, 0.92, 0.99), eps: float = 1e-8,
         weight_decay: float = 0.0, *, no_prox: bool = False,
         mu: float | None = None) -> Optimizer:
    """Adan (Xie et al. 2022, arXiv 2208.06677), in the official implementation's convention.

    Source: the paper's Algorithm 1 and the official PyTorch code (sail-sg/Adan, ``adan.py``).
    The paper writes each beta as the weight of the *new* term (m_k = (1-b1) m + b1 g with
    b1 = 0.02); the official code writes beta as the weight of the *old* term, default
    betas = (0.98, 0.92, 0.99). We follow the code's convention (= 1 - paper's betas), so
    ``betas[0]`` is the usual momentum and ``mu = 1 - betas[0]`` has its usual meaning.
    ``updates`` are displacements d_t (x_{t+1} = x_t + d_t), t = 1, 2, ...::

        delta_t = g_t - g_{t-1}                   (delta_1 = 0: g_0 := g_1, as the official code)
        m_t = b1 m_{t-1} + (1 - b1) g_t
        v_t = b2 v_{t-1} + (1 - b2) delta_t
        n_t = b3 n_{t-1} + (1 - b3) (g_t + b2 delta_t)^2
        D   = sqrt(n_t / (1 - b3^t)) + eps
        u_t = m_t / ((1 - b1^t) D) + b2 v_t / ((1 - b2^t) D)
        x_{t+1} = (x_t - eta_t u_t) / (1 + eta_t lambda)      (proximal decay, default)
        x_{t+1} = (1 - eta_t lambda) x_t - eta_t u_t          (no_prox=True)

    = scale_by_adan, scale_by_learning_rate, then add_proximal_decay (or
    add_decoupled_decay with no_prox). eta_t = lr(t - 1) for a schedule. ``mu`` overrides
    b1 as b1 = 1 - mu; b2, b3 stay. The official code's optional global grad clipping
    (max_grad_norm) is left to ``lmo.clipping.clip_by_global_norm``.

    Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): equals pytorch-optimizer's
    ``Adan(lr, betas, weight_decay)`` (proximal decay; ``no_prox=True`` <-> its
    ``weight_decouple=True``) to fp64 rounding.
    """
    check_lr(lr)
    if len(betas) != 3:
        raise ValueError(f"betas must have three entries (b1, b2, b3), got {betas!r}")
    if mu is not None:
        check_mu(mu)
        betas = (1.0 - mu, betas[1], betas[2])
    b1, b2, b3 = (float(b) for b in betas)
    for i, b in enumerate((b1, b2, b3)):
        check_beta(b, f"betas[{i}]")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    decay = None if not weight_decay else (
        add_decoupled_decay(weight_decay) if no_prox else add_proximal_decay(weight_decay))
    return compose("adan", lr, scale_by_adan(b1, b2, b3, eps), scale_by_learning_rate(), decay,
                   state=AdanState,
                   hyper=dict(lr=lr, betas=(b1, b2, b3), eps=eps, weight_decay=weight_decay,
                              no_prox=no_prox))


# ----------------------------------------------------------------------------- MARS
class MARSState(NamedTuple):
    """step t, m_t, v_t, last gradient g_{t-1} (zeros before the first step, as the reference)."""

    step: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict
    last_grad: dict


def mars(lr: ScalarOrSchedule = 3e-3, betas=(0.95, 0.99), eps: float = 1e-8,
         weight_decay: float = 0.0, *, gamma: float = 0.025, max_norm: float | None = 1.0,
         optimize_1d: bool = False, lr_1d_factor: float = 1.0, betas_1d=(0.9, 0.95),
         weight_decay_1d: float | None = None, batch_dims: int = 0,
         mu: float | None = None) -> Optimizer:
    """MARS-AdamW (Yuan et al. 2024, arXiv 2411.10438), approximate variant; ``updates`` are
    displacements d_t (x_{t+1} = x_t + d_t), t = 1, 2, ...

    For a tensor with 2 event dims (a matrix; or any tensor when ``optimize_1d``)::

        c_t = g_t + gamma * b1/(1 - b1) * (g_t - g_{t-1})      (g_0 = 0, as the reference)
        c~_t = Clip(c_t, max_norm) = c_t min(1, max_norm/||c_t||_2)   (max_norm=None: no clip)
        m_t = b1 m_{t-1} + (1 - b1) c~_t,   v_t = b2 v_{t-1} + (1 - b2) c~_t^2
        d_t = -eta_t [ m_t / ((1 - b1^t) (sqrt(v_t/(1 - b2^t)) + eps)) + lambda x_t ]

    Other tensors (vectors, and any non-2-D event as in the reference) get AdamW with
    ``betas_1d``, step eta_t * lr_1d_factor and decay ``weight_decay_1d`` (default:
    ``weight_decay``). With gamma = 0 and max_norm=None the matrix rule is exactly AdamW.

    The clip norm is per tensor; with independent seeds stacked in front, pass
    ``batch_dims=k`` so the norm (and the 2-D test) is taken per leading index.
    ``mu`` overrides b1 as b1 = 1 - mu (the 1-D AdamW betas stay).

    = scale_by_mars (the decay inside it: its rate and lambda depend on the entry).

    Source: the paper's Algorithm 1 / MARS-AdamW and the official code (AGI-Arena/MARS,
    ``MARS/optimizers/mars.py``: defaults lr=3e-3, betas=(0.95, 0.99), gamma=0.025,
    is_approx=True, optimize_1d=False, betas_1d=(0.9, 0.95)). Only the approximate variant is
    offered (g(x_{t-1}; xi_t) replaced by the previous minibatch's g_{t-1}; the exact variant
    needs a second gradient per step, which the one-gradient protocol cannot supply).

    Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): with eps = 0 equals
    pytorch-optimizer's ``MARS(lr, betas, gamma, weight_decay, lr_1d=lr_1d_factor * lr,
    weight_decay_1d, betas_1d)`` to 1e-9 in fp64. With eps > 0 they differ: it adds eps
    before the bias correction (m / ((sqrt(v) + eps) / sqrt(1 - b2^t))), we after it.
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    c1, c2 = float(betas_1d[0]), float(betas_1d[1])
    check_beta(c1, "betas_1d[0]")
    check_beta(c2, "betas_1d[1]")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_nonneg(gamma, "gamma")
    check_nonneg(lr_1d_factor, "lr_1d_factor")
    if max_norm is not None and (not isinstance(max_norm, (int, float)) or not max_norm > 0):
        raise ValueError(f"max_norm must be > 0 or None (no clipping), got {max_norm!r}")
    check_int(batch_dims, "batch_dims")
    wd_1d = weight_decay if weight_decay_1d is None else weight_decay_1d
    check_nonneg(wd_1d, "weight_decay_1d")
    scale_c = gamma * b1 / (1.0 - b1)
    return compose("mars", lr, scale_by_mars(b1, b2, eps, weight_decay, scale_c=scale_c, max_norm=max_norm,
                                             optimize_1d=optimize_1d, lr_1d_factor=lr_1d_factor,
                                             betas_1d=(c1, c2), weight_decay_1d=wd_1d, batch_dims=batch_dims),
                   state=MARSState,
                   hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                              gamma=gamma, max_norm=max_norm, optimize_1d=optimize_1d,
                              lr_1d_factor=lr_1d_factor, betas_1d=(c1, c2),
                              weight_decay_1d=wd_1d, batch_dims=batch_dims))


# ----------------------------------------------------------------------------- SOAP
class SOAPState(NamedTuple):
    """count = calls made (the first only initializes); step t = Adam steps taken (= count - 1).

    exp_avg / exp_avg_sq live in the current eigenbasis; GG_L, GG_R are the EMAs of
    G G^T and G^T G, Q_L, Q_R their eigenbases (empty tensors where not preconditioned).
    """

    count: torch.Tensor
    exp_avg: dict
    exp_avg_sq: dict
    GG_L: dict
    GG_R: dict
    Q_L: dict
    Q_R: dict


def soap(lr: ScalarOrSchedule = 3e-3, betas=(0.95, 0.95), eps: float = 1e-8,
         weight_decay: float = 0.01, *, shampoo_beta: float | None = None,
         precondition_frequency: int = 10, max_precond_dim: int = 10000,
         precondition_1d: bool = False, normalize_grads: bool = False, correct_bias: bool = True,
         batch_dims: int | None = None, mu: float | None = None) -> Optimizer:
    """SOAP; for a matrix G_t (m x n), t = 1, 2, ... Adam steps after an initializing call::

        call 0:  L = (1 - b_s) G G^T,  R = (1 - b_s) G^T G,  Q_L, Q_R = eigvecs(L), eigvecs(R); d = 0
        G'  = Q_L^T G_t Q_R
        M_t = b1 M_{t-1} + (1 - b1) G',   V_t = b2 V_{t-1} + (1 - b2) G' * G'     (eigenbasis)
        N   = Q_L (M_t / (sqrt(V_t) + eps)) Q_R^T      (N / RMS(N) if normalize_grads)
        x'  = x_t - eta_t sqrt(1 - b2^t)/(1 - b1^t) N,   x_{t+1} = x' - eta_t lambda x'
        L <- b_s L + (1 - b_s) G_t G_t^T,  R <- b_s R + (1 - b_s) G_t^T G_t
        if t % precondition_frequency == 0: Q <- qr(L Q_sorted) (and R); M_t re-expressed

    b_s = shampoo_beta (default b2). A side longer than max_precond_dim is not rotated;
    vectors are not rotated unless precondition_1d (then only Q_L, from g g^T); with no
    rotation at all SOAP is Adam with (b1, b2) on g_2, g_3, ... eta_t = lr(count).
    ``mu`` overrides b1 as b1 = 1 - mu. = scale_by_soap (lmo.soap_basis, which has the
    sources, the batching rules and the cross-checks).
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    bs = b2 if shampoo_beta is None or shampoo_beta < 0 else float(shampoo_beta)
    check_beta(bs, "shampoo_beta")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_int(precondition_frequency, "precondition_frequency", 1)
    check_int(max_precond_dim, "max_precond_dim", 1)
    if batch_dims is not None:
        check_int(batch_dims, "batch_dims")
    return compose("soap", lr, scale_by_soap(b1, b2, bs, eps, weight_decay,
                                             precondition_frequency=precondition_frequency,
                                             max_precond_dim=max_precond_dim, precondition_1d=precondition_1d,
                                             normalize_grads=normalize_grads, correct_bias=correct_bias,
                                             batch_dims=batch_dims),
                   state=SOAPState,
                   hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                              shampoo_beta=bs, precondition_frequency=precondition_frequency,
                              max_precond_dim=max_precond_dim, precondition_1d=precondition_1d,
                              normalize_grads=normalize_grads, correct_bias=correct_bias,
                              batch_dims=batch_dims))


# ----------------------------------------------------------------------------- NorMuon, AdaMuon
class SecondMomentState(NamedTuple):
    """step t, momentum m_t and second moment v_t of the orthogonalized update."""

    step: torch.Tensor
    momentum: dict
    second_moment: dict


NorMuonState = SecondMomentState   # step t, momentum m_t (..., m, n), per-row v_t (..., m, 1)
AdaMuonState = SecondMomentState   # step t, momentum m_t, element-wise second moment v_t


def _check_second_moment_args(lr: ScalarOrSchedule, momentum: float, beta2: float, eps: float,
                              weight_decay: float, mu: float | None) -> float:
    """Validate the hyperparameters NorMuon and AdaMuon share; returns beta (1 - mu when
    ``mu`` is given)."""
    check_lr(lr)
    if mu is not None:
        check_mu(mu)
        momentum = 1.0 - mu
    check_beta(momentum, "momentum")
    check_beta(beta2, "beta2")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    return float(momentum)


def _ns_options(exact: bool, ns_steps: int, ns_coefficients, ns_eps: float, ns_dtype,
                ns_method: str) -> dict:
    """The keywords of ``lmo.polar_factor.orthogonalize_many``, ``ns_dtype`` checked (None / "auto" -> "auto")."""
    return dict(exact=exact, steps=ns_steps, coefficients=ns_coefficients, eps=ns_eps,
                dtype=muon_ns_dtype(ns_dtype), method=ns_method)


def _muon_second_moment(name: str, lr: ScalarOrSchedule, beta: float, nesterov: bool,
                        weight_decay: float, ns: dict, second_moment_like: Callable,
                        step: Callable, hyper: dict, pre: Callable | None = None) -> Optimizer:
    """What AdaMuon and NorMuon share: Muon's orthogonalized momentum followed by a second
    moment of the orthogonalized update (docs/design.md §3). With t = 1, 2, ...::

        m_t = beta m_{t-1} + (1 - beta) g_t,   u_t = (1 - beta) g_t + beta m_t (nesterov) or m_t
        O_t = NS(pre(u_t))                     (pre = identity, or sign for AdaMuon's option)
        (v_t, D'_t) = step(O_t, v_{t-1}, t, eta_t)      (each optimizer's own second moment)
        d_t = D'_t - eta_t lambda x_t

    = scale_by_momentum, orthogonalize, scale_by_second_moment, add_decoupled_decay.
    ``step`` holds everything that differs between the two optimizers (the shape of v, bias
    correction, where eps sits, the final scale), written in each optimizer's own function
    so that its expressions, and hence its floating-point results, stay exactly its own.
    """
    hyper = dict(lr=lr, momentum=beta, weight_decay=weight_decay, nesterov=nesterov, **hyper,
                 ns_steps=ns["steps"], ns_coefficients=ns["coefficients"],
                 ns_dtype=str(ns["dtype"]), ns_method=ns["method"], exact=ns["exact"])
    return compose(name, lr, scale_by_momentum(1 - beta, nesterov, beta=beta), orthogonalize(ns, name, pre),
                   scale_by_second_moment(second_moment_like, step), add_decoupled_decay(weight_decay),
                   state=SecondMomentState, hyper=hyper)


def normuon(lr: ScalarOrSchedule, momentum: float = 0.95, beta2: float = 0.95, eps: float = 1e-10,
            weight_decay: float = 0.0, *, nesterov: bool = True, scale: str = "rms",
            ns_steps: int = 5, ns_coefficients="keller", ns_eps: float = 1e-7,
            ns_dtype="auto", exact: bool = False, mu: float | None = None,
            ns_method: str = "standard", flatten: bool | None = None) -> Optimizer:
    """NorMuon (Li, Liu, Liang, Chen, Zhao 2025, arXiv 2510.05491): Muon + per-neuron second
    moment, on matrices (..., m, n) (leading dims are a batch); d_t is the displacement::

        m_t = beta m_{t-1} + (1 - beta) g_t,     u_t = (1 - beta) g_t + beta m_t  (nesterov) or m_t
        O_t = NS(u_t) ~ polar(u_t)
        v_t = beta2 v_{t-1} + (1 - beta2) mean_cols(O_t * O_t)        (one number per row)
        O^_t = O_t / (sqrt(v_t) + eps)                                 (broadcast over columns)
        scale="rms":       D_t = 0.2 sqrt(mn) O^_t / ||O^_t||_F         (RMS(D_t) = 0.2)
        scale="frobenius": D_t = max(1, m/n)^0.5 ||O_t||_F O^_t / (||O^_t||_F + eps)
        d_t = -eta_t D_t - eta_t lambda x_t

    Source: the paper's Algorithm 1 (RMS-matched step 0.2 sqrt(mn)/||O^||_F) and the official
    code (zichongli5/NorMuon ``normuon.py``: momentum=0.95, beta2=0.95, eps=1e-10, Nesterov,
    row-wise mean over the last dim, Frobenius norm of the NS output restored, then Muon's
    max(1, m/n)^0.5). They differ only in the final scale: ``scale="rms"`` (default) follows
    the paper, ``scale="frobenius"`` the code. Nesterov follows the code (the paper's
    Algorithm has plain momentum; pass nesterov=False for it).

    ||.||_F is per matrix. No bias correction (as both sources). ``mu`` overrides the
    momentum as beta = 1 - mu. ``exact=True`` uses the SVD polar factor instead of NS.
    ``ns_dtype``: None / "auto" = choose_ns_dtype (lmo.muon_family); ``ns_method``:
    "standard" or "gram" NS (lmo.polar_factor). NS runs once per matrix shape per step.
    ``flatten``: how >2-D weights are read (lmo.matrix_view; None refuses 4-D and more,
    True flattens to (out, in*kh*kw)).

    Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): pytorch-optimizer's
    ``NorMuon`` with ``update_scale="preserve_norm"`` <-> ``scale="frobenius"`` and
    ``"match_rms"`` <-> ``scale="rms"``, to 1e-10 in fp64 with both NS in fp64.
    """
    beta = _check_second_moment_args(lr, momentum, beta2, eps, weight_decay, mu)
    if scale not in ("rms", "frobenius"):
        raise ValueError(f"scale must be 'rms' or 'frobenius', got {scale!r}")
    ns = _ns_options(exact, ns_steps, ns_coefficients, ns_eps, ns_dtype, ns_method)

    def step(O, v_prev, t, eta):
        """(v_t, -eta_t D_t) of the docstring, for one matrix (no bias correction: t unused)."""
        v = ema(v_prev, (O * O).mean(dim=-1, keepdim=True), 1 - beta2)
        Oh = O / (v.sqrt() + eps)
        norm_h = torch.linalg.vector_norm(Oh, dim=(-2, -1), keepdim=True)
        rows, cols = O.shape[-2:]
        if scale == "rms":
            D = Oh * (0.2 * math.sqrt(rows * cols) / norm_h.clamp_min(1e-30))
        else:
            norm_o = torch.linalg.vector_norm(O, dim=(-2, -1), keepdim=True)
            D = Oh * (norm_o / (norm_h + eps)) * max(1.0, rows / cols) ** 0.5
        return v, -eta * D

    check_flatten(flatten)
    opt = _muon_second_moment("normuon", lr, beta, nesterov, weight_decay, ns,
                              lambda x: torch.zeros_like(x[..., :1]), step,
                              dict(beta2=beta2, eps=eps, scale=scale))
    return matrix_view(opt, flatten, "normuon")


def adamuon(lr: ScalarOrSchedule, momentum: float = 0.95, beta2: float = 0.999, eps: float = 1e-8,
            weight_decay: float = 0.01, *, nesterov: bool = True, sign_stabilize: bool = False,
            ns_steps: int = 5, ns_coefficients="keller", ns_eps: float = 1e-7,
            ns_dtype="auto", exact: bool = False, mu: float | None = None,
            ns_method: str = "standard", flatten: bool | None = None) -> Optimizer:
    """AdaMuon (Si, Zhang, Shen 2025, arXiv 2507.11005): element-wise second moment on
    Muon's update, on matrices (..., m, n) (leading dims are a batch), t = 1, 2, ...::

        m_t = beta m_{t-1} + (1 - beta) g_t,   u_t = (1 - beta) g_t + beta m_t (nesterov) or m_t
        O_t = NS(u_t)            (NS(sign(u_t)) if sign_stabilize)
        v_t = beta2 v_{t-1} + (1 - beta2) O_t * O_t,    v^_t = v_t / (1 - beta2^t)
        O^_t = O_t / (sqrt(v^_t) + eps)
        D_t = 0.2 sqrt(mn) O^_t / (||O^_t||_F + eps)     (RMS(D_t) = 0.2, per matrix)
        d_t = -eta_t D_t - eta_t lambda x_t

    Source: the official code (Chongjie-Si/AdaMuon ``adamuon.py``: momentum=0.95, Nesterov,
    beta2=0.999 with bias correction, eps=1e-8, weight_decay=0.01, update RMS-aligned to
    0.2 via sqrt(min(m,n))/||O^||_F times 0.2 sqrt(max(m,n))). Some write-ups of the paper
    apply sign(.) to the momentum before Newton-Schulz; the released code does not, and
    neither do we by default (``sign_stabilize=True`` turns it on). (The code's eps sits
    inside sqrt(min(m,n))/(||O^||_F + eps); the same up to O(eps).)

    ``mu`` overrides the momentum as beta = 1 - mu. ``exact=True``: SVD polar instead of NS.
    ``ns_dtype``: None / "auto" = choose_ns_dtype (lmo.muon_family); ``ns_method``: "standard"
    or "gram" NS. NS runs once per matrix shape per step. ``flatten``: how >2-D weights are
    read (lmo.matrix_view; None refuses 4-D and more, True flattens to (out, in*kh*kw)).

    Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): pytorch-optimizer's
    ``AdaMuon(lr, betas=(momentum, beta2), weight_decay, eps)`` has no Nesterov: it equals
    ``adamuon(..., nesterov=False)`` to fp64 rounding with both NS in fp64. With bf16 NS it
    keeps the bf16 NS output through v and the normalisation (we cast back first): the
    updates then differ by bf16 rounding.
    """
    beta = _check_second_moment_args(lr, momentum, beta2, eps, weight_decay, mu)

    def step(O, v_prev, t, eta):
        """(v_t, -eta_t D_t) of the docstring, for one matrix."""
        v = beta2 * v_prev + (1 - beta2) * O * O
        Oh = O / ((v / (1 - beta2 ** t)).sqrt() + eps)
        rows, cols = O.shape[-2:]
        norm_h = torch.linalg.vector_norm(Oh, dim=(-2, -1), keepdim=True)
        return v, -eta * (0.2 * math.sqrt(rows * cols)) * Oh / (norm_h + eps)

    ns = _ns_options(exact, ns_steps, ns_coefficients, ns_eps, ns_dtype, ns_method)
    check_flatten(flatten)
    opt = _muon_second_moment("adamuon", lr, beta, nesterov, weight_decay, ns, torch.zeros_like, step,
                              dict(beta2=beta2, eps=eps, sign_stabilize=sign_stabilize),
                              pre=torch.sign if sign_stabilize else None)
    return matrix_view(opt, flatten, "adamuon")

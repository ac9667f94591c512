"""The Adam family: AdamW, NAdam, Adan, MARS-AdamW and SOAP (Adam in a rotating eigenbasis),
each a chain of lmo.transforms and lmo.adam_moments (docs/design.md §7; the optax ``adamw = chain(...)`` way):
a moment transform that takes eta_t first (as the reference's order of operations), then
decay. ``updates`` are displacements d_t, x_{t+1} = x_t + d_t.

Every chain is checked bit for bit against the hand-written update it replaced (same
floating-point order of operations), and against its reference library in tests/lmo
(``-k reference``).
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lmo.base import Optimizer, ScalarOrSchedule, check_int, check_nonneg
from lmo.hyperparameters import betas_with_mu, check_beta, check_lr, check_mu
from lmo.combine import chain
from lmo.soap_basis import scale_by_soap
from lmo.adam_moments import scale_by_adam, scale_by_adan, scale_by_mars, scale_by_nadam
from lmo.transforms import add_coupled_decay, add_decoupled_decay, add_proximal_decay, scale_by_learning_rate


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

    >>> opt, x = adamw(lr=0.1, weight_decay=0.0), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([2.0, -4.0])}, opt.init(x), x)[0]     # step 1: -eta sign(g_1)
    {'w': tensor([-0.1000,  0.1000])}
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    return chain(scale_by_adam(b1, b2, eps, amsgrad), add_decoupled_decay(weight_decay),
                 name="adamw", lr=lr, state=AdamWState, complex_as_real=True,
                 hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))


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

    >>> opt, x = nadam(lr=0.1), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([2.0, -4.0])}, opt.init(x), x)[0]   # -eta (c_g + c_m (1 - beta1)) sign(g_1)
    {'w': tensor([-0.1056,  0.1056])}
    """
    check_lr(lr)
    b1, b2 = betas_with_mu(betas, mu)
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    check_nonneg(momentum_decay, "momentum_decay")
    if variant not in ("torch", "optax"):
        raise ValueError(f"variant must be 'torch' or 'optax', got {variant!r}")
    decoupled = decoupled_weight_decay or variant == "optax"
    return chain(add_coupled_decay(weight_decay) if weight_decay and not decoupled else None,
                   scale_by_nadam(b1, b2, eps, momentum_decay, variant),
                   add_decoupled_decay(weight_decay) if decoupled else None,
                 name="nadam", lr=lr, state=NAdamState,
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

    >>> opt, x = adan(lr=0.1), {"w": torch.zeros(2)}
    >>> opt.update({"w": torch.tensor([2.0, -4.0])}, opt.init(x), x)[0]     # step 1 (delta_1 = 0): -eta sign(g_1)
    {'w': tensor([-0.1000,  0.1000])}
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
    return chain(scale_by_adan(b1, b2, b3, eps), scale_by_learning_rate(), decay,
                 name="adan", lr=lr, state=AdanState,
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

    >>> opt, x = mars(lr=0.1), {"w": torch.zeros(1, 2)}
    >>> opt.update({"w": torch.tensor([[2.0, -4.0]])}, opt.init(x), x)[0]   # step 1: -eta sign(c~_1)
    {'w': tensor([[-0.1000,  0.1000]])}
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
    return chain(scale_by_mars(b1, b2, eps, weight_decay, scale_c=scale_c, max_norm=max_norm,
                                             optimize_1d=optimize_1d, lr_1d_factor=lr_1d_factor,
                                             betas_1d=(c1, c2), weight_decay_1d=wd_1d, batch_dims=batch_dims),
                 name="mars", lr=lr, state=MARSState,
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

    >>> opt, x = soap(lr=0.1), {"w": torch.zeros(2, 2)}
    >>> d, state = opt.update({"w": torch.eye(2)}, opt.init(x), x)         # call 0 builds the preconditioner
    >>> d["w"], state.Q_L["w"].shape
    (tensor([[0., 0.],
            [0., 0.]]), torch.Size([2, 2]))
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
    return chain(scale_by_soap(b1, b2, bs, eps, weight_decay,
                                             precondition_frequency=precondition_frequency,
                                             max_precond_dim=max_precond_dim, precondition_1d=precondition_1d,
                                             normalize_grads=normalize_grads, correct_bias=correct_bias,
                                             batch_dims=batch_dims),
                 name="soap", lr=lr, state=SOAPState,
                 hyper=dict(lr=lr, betas=(b1, b2), eps=eps, weight_decay=weight_decay,
                              shampoo_beta=bs, precondition_frequency=precondition_frequency,
                              max_precond_dim=max_precond_dim, precondition_1d=precondition_1d,
                              normalize_grads=normalize_grads, correct_bias=correct_bias,
                              batch_dims=batch_dims))

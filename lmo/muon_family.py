"""The Muon family: ``muon`` (Muon: momentum, then the spectral LMO by Newton-Schulz; =
lmo.steepest_descent.lmo_momentum in the Spectral geometry), ``normuon`` and ``adamuon`` (a
second moment of the orthogonalized update), and what they share besides their momentum
(lmo.transforms.scale_by_momentum): the matrix-only check and the NS dtype option
(docs/design.md §3). All of them orthogonalise through one function,
``lmo.polar_factor.orthogonalize_many``::

    O_t = NS(u_t) ~ polar(u_t)        (exact: the SVD polar factor)

``ns_dtype``: None or "auto" -> "auto", which NS reads as ``lmo.ns_dtype.choose_ns_dtype`` of
each gradient's device (bf16 on CUDA, fp32 elsewhere: a pure function of the device, no
timing, no environment); a name ("float32", "bfloat16", ...) or a floating torch dtype ->
that dtype (torch.bfloat16 reproduces torch.optim.Muon, which always runs NS in bf16). A
training run resolves "auto" once for its machine and passes the dtype (gpu_runs.recipe.resolve_ns_dtype).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import torch

from lmo.base import Optimizer, ScalarOrSchedule, check_nonneg
from lmo.hyperparameters import check_beta, check_lr, check_mu
from lmo.combine import chain
from lmo.geometry import Spectral
from lmo.matrix_view import check_flatten, matrix_view
from lmo.ns_dtype import AUTO, check_ns_dtype
from lmo.steepest_descent import lmo_momentum
from lmo.transforms import add_decoupled_decay, ema, orthogonalize, scale_by_momentum, scale_by_second_moment


def muon_ns_dtype(ns_dtype):
    """The NS dtype option of the Muon family: None / "auto" -> "auto", a name -> its dtype,
    a floating dtype -> itself (ValueError naming ns_dtype otherwise).

    >>> muon_ns_dtype(None), muon_ns_dtype("bfloat16")
    ('auto', torch.bfloat16)
    """
    ns_dtype = check_ns_dtype(ns_dtype)
    return AUTO if ns_dtype is None else ns_dtype


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

    >>> opt, x = muon(0.1, exact=True, weight_decay=0.0), {"w": torch.zeros(2, 2)}
    >>> d = opt.update({"w": torch.diag(torch.tensor([2.0, 3.0]))}, opt.init(x), x)[0]["w"]
    >>> d.diagonal()       # -eta polar(u_1) = -eta I
    tensor([-0.1000, -0.1000])
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
    return chain(scale_by_momentum(1 - beta, nesterov, beta=beta), orthogonalize(ns, name, pre),
                   scale_by_second_moment(second_moment_like, step), add_decoupled_decay(weight_decay),
                 name=name, lr=lr, state=SecondMomentState, hyper=hyper)


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

    >>> opt, x = normuon(0.1, exact=True), {"w": torch.zeros(2, 2)}
    >>> d = opt.update({"w": torch.diag(torch.tensor([2.0, 3.0]))}, opt.init(x), x)[0]["w"]
    >>> d.diagonal()       # -eta 0.2 sqrt(4) I / sqrt(2)
    tensor([-0.0283, -0.0283])
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

    >>> opt, x = adamuon(0.1, exact=True), {"w": torch.zeros(2, 2)}
    >>> d = opt.update({"w": torch.diag(torch.tensor([2.0, 3.0]))}, opt.init(x), x)[0]["w"]
    >>> d.diagonal()       # -eta 0.2 sqrt(4) I / sqrt(2)
    tensor([-0.0283, -0.0283])
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

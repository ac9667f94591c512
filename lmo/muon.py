"""Muon (Jordan et al. 2024) as a pure optimizer, matching torch.optim.Muon step for step.

    m_t = beta m_{t-1} + (1 - beta) g_t                      (beta = momentum = 1 - mu)
    u_t = (1 - beta) g_t + beta m_t  (nesterov)   or   m_t
    d_t = -eta_t s(rows, cols) NS(u_t) - eta_t lambda x_t

NS is the Newton-Schulz approximation of the polar factor U V^T (lmo.newton_schulz),
i.e. d_t = eta_t s lmo(u_t) - eta_t lambda x_t in the spectral geometry (``exact=True``:
the SVD polar factor, an exact LMO). s = Muon's shape factor (``adjust_lr_fn``):
None / "original" sqrt(max(1, rows/cols)), "match_rms_adamw" 0.2 sqrt(max(rows, cols)),
"spectral" sqrt(rows/cols). Weight decay is decoupled and sees x_t.

NS dtype: ``ns_dtype="auto"`` (default; None means the same) computes in
``lmo.newton_schulz.choose_ns_dtype(device)``: bf16 where bf16 matmul is fast (CUDA, CPUs
with bf16 instructions that measure fast), fp32 where not. torch.optim.Muon runs NS in
bf16 even on CPU; ``ns_dtype=torch.bfloat16`` reproduces it to rounding. NS runs once per
matrix shape per step (same-shape matrices batched, lmo.newton_schulz.newton_schulz_many);
``ns_method="gram"`` iterates on the Gram matrix (faster on wide/tall matrices).
Parameters must be matrices (..., rows, cols); leading dims of a 3-D weight are a batch
(an MoE expert stack); 4-D and more need ``flatten=True`` (a conv kernel as its
(out, in*kh*kw) matrix) or ``flatten=False`` (a batch), see lmo.matrix_view.

Cross-checked: torch.optim.Muon (tests/lmo/test_muon.py); pytorch-optimizer's ``Muon``
(``use_adjusted_lr=True`` <-> ``adjust_lr_fn="match_rms_adamw"``), to fp64 rounding with
both NS in fp64; heavyball's ``Muon`` with ``nesterov=False`` (its Nesterov variant
orthogonalises g + EMA(g), a different direction unless momentum = 0.5)
(tests/lmo/test_reference_pytorch_optimizer.py, test_reference_heavyball.py).
"""
from __future__ import annotations

from lmo.base import ScalarOrSchedule, check_beta, check_mu
from lmo.geometry import Spectral
from lmo.lmo_momentum import lmo_momentum
from lmo.matrix_view import check_flatten, matrix_view
from lmo.muon_family import muon_ns_dtype


def muon(lr: ScalarOrSchedule = 1e-3, momentum: float = 0.95, nesterov: bool = True,
         weight_decay: float = 0.1, ns_steps: int = 5, ns_coefficients="keller",
         eps: float = 1e-7, adjust_lr_fn: str | None = None, ns_dtype="auto",
         exact: bool = False, *, mu: float | None = None, init_momentum: str = "zero",
         ns_method: str = "standard", geometry: Spectral | None = None, flatten: bool | None = None):
    """Muon; keywords as torch.optim.Muon (``momentum`` is beta; ``mu`` overrides it as 1 - mu).

    ``ns_coefficients``: "keller" (3.4445, -4.7750, 2.0315), "polar_express", a tuple
    (a, b, c) or a per-step list (see lmo.newton_schulz). ``geometry``: a Spectral (subclass)
    to use instead of the one the NS keywords build, e.g. one that shards Newton-Schulz
    over data-parallel ranks (gpu_runs.pipeline.sharded_muon). ``flatten``: how weights
    with more than two dims are read (lmo.matrix_view): None refuses 4-D and more (a conv
    kernel), True optimizes each as its (out, in*kh*kw) matrix, False treats leading dims as
    a batch.
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

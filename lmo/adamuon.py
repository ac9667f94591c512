"""AdaMuon (Si, Zhang, Shen 2025, arXiv 2507.11005): element-wise second moment on Muon's update.

Source: the official code (Chongjie-Si/AdaMuon ``adamuon.py``: momentum=0.95, Nesterov,
beta2=0.999 with bias correction, eps=1e-8, weight_decay=0.01, update RMS-aligned to
0.2 via sqrt(min(m,n))/||O^||_F times 0.2 sqrt(max(m,n))). Some write-ups of the paper
apply sign(.) to the momentum before Newton-Schulz; the released code does not, and
neither do we by default (``sign_stabilize=True`` turns it on).

Cross-checked (tests/lmo/test_reference_pytorch_optimizer.py): pytorch-optimizer's
``AdaMuon(lr, betas=(momentum, beta2), weight_decay, eps)`` has no Nesterov: it equals
``adamuon(..., nesterov=False)`` to fp64 rounding with both NS in fp64. With bf16 NS it
keeps the bf16 NS output through v and the normalisation (we cast back first): the
updates then differ by bf16 rounding.
"""
from __future__ import annotations

import math

import torch

from lmo.base import Optimizer, ScalarOrSchedule
from lmo.matrix_view import check_flatten, matrix_view
from lmo.muon_second_moment import (SecondMomentState, check_second_moment_args, muon_second_moment,
                                    ns_options)

AdaMuonState = SecondMomentState   # step t, momentum m_t, element-wise second moment v_t


def adamuon(lr: ScalarOrSchedule, momentum: float = 0.95, beta2: float = 0.999, eps: float = 1e-8,
            weight_decay: float = 0.01, *, nesterov: bool = True, sign_stabilize: bool = False,
            ns_steps: int = 5, ns_coefficients="keller", ns_eps: float = 1e-7,
            ns_dtype="auto", exact: bool = False, mu: float | None = None,
            ns_method: str = "standard", flatten: bool | None = None) -> Optimizer:
    """AdaMuon on matrices (..., m, n) (leading dims are a batch), t = 1, 2, ...::

        m_t = beta m_{t-1} + (1 - beta) g_t,   u_t = (1 - beta) g_t + beta m_t (nesterov) or m_t
        O_t = NS(u_t)            (NS(sign(u_t)) if sign_stabilize)
        v_t = beta2 v_{t-1} + (1 - beta2) O_t * O_t,    v^_t = v_t / (1 - beta2^t)
        O^_t = O_t / (sqrt(v^_t) + eps)
        D_t = 0.2 sqrt(mn) O^_t / (||O^_t||_F + eps)     (RMS(D_t) = 0.2, per matrix)
        d_t = -eta_t D_t - eta_t lambda x_t

    ``mu`` overrides the momentum as beta = 1 - mu. ``exact=True``: SVD polar instead of NS.
    ``ns_dtype``: None / "auto" = choose_ns_dtype (lmo.muon_family); ``ns_method``: "standard"
    or "gram" NS. NS runs once per matrix shape per step
    (the shared part: lmo.muon_second_moment). ``flatten``: how >2-D weights are read
    (lmo.matrix_view; None refuses 4-D and more, True flattens to (out, in*kh*kw)).
    (The code's eps sits inside sqrt(min(m,n))/(||O^||_F + eps); the same up to O(eps).)
    """
    beta = check_second_moment_args(lr, momentum, beta2, eps, weight_decay, mu)

    def step(O, v_prev, t, eta):
        """(v_t, -eta_t D_t) of the docstring, for one matrix."""
        v = beta2 * v_prev + (1 - beta2) * O * O
        Oh = O / ((v / (1 - beta2 ** t)).sqrt() + eps)
        rows, cols = O.shape[-2:]
        norm_h = torch.linalg.vector_norm(Oh, dim=(-2, -1), keepdim=True)
        return v, -eta * (0.2 * math.sqrt(rows * cols)) * Oh / (norm_h + eps)

    ns = ns_options(exact, ns_steps, ns_coefficients, ns_eps, ns_dtype, ns_method)
    check_flatten(flatten)
    opt = muon_second_moment("adamuon", lr, beta, nesterov, weight_decay, ns, torch.zeros_like, step,
                             dict(beta2=beta2, eps=eps, sign_stabilize=sign_stabilize),
                             pre=torch.sign if sign_stabilize else None)
    return matrix_view(opt, flatten, "adamuon")

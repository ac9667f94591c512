"""The moment transforms of the Adam family (lmo.transforms' pieces for lmo.adam_family):
Adam's, NAdam's, Adan's and MARS' first and second moments with their bias corrections, each
taking eta_t from the step where the reference multiplies by it first (bit for bit its order
of operations). SOAP's, which rotates the moments into an eigenbasis, is lmo.soap_basis.

>>> scale_by_adam(0.9, 0.999, eps=0.0).fields
('exp_avg', 'exp_avg_sq', 'max_exp_avg_sq')
"""
from __future__ import annotations

import math

import torch

from lmo.base import Optimizer, decoupled_decay, zeros_like_tree
from lmo.transforms import ema


# ----------------------------------------------------------------------------- Adam family
def scale_by_adam(b1: float, b2: float, eps: float, amsgrad: bool = False) -> Optimizer:
    """Fields ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq`` ({} unless amsgrad)::

        m_t = ema(m_{t-1}, g_t, 1 - b1),   v_t = b2 v_{t-1} + (1 - b2) g_t^2   (vmax_t = max(vmax_{t-1}, v_t))
        d_t = -(eta_t / (1 - b1^t)) m_t / (sqrt(v_t) / sqrt(1 - b2^t) + eps)

    eta_t enters here, first (torch.optim.AdamW's order of operations).

    >>> from lmo.base import StepInfo
    >>> tr, g = scale_by_adam(0.9, 0.999, eps=0.0), {"w": torch.tensor([2.0, -4.0])}
    >>> tr.update(g, tr.init(g), None, StepInfo(torch.tensor(0), 0.1, g))[0]    # step 1: -eta sign(g)
    {'w': tensor([-0.1000,  0.1000])}
    """

    def init(params):
        return zeros_like_tree(params), zeros_like_tree(params), zeros_like_tree(params) if amsgrad else {}

    def update(u, entries, params, step):
        exp_avg, exp_avg_sq, max_exp_avg_sq = entries
        t = step.t
        bc1, bc2_sqrt = 1.0 - b1 ** t, math.sqrt(1.0 - b2 ** t)
        out, m_new, v_new, vmax_new = {}, {}, {}, {}
        for k, g in u.items():
            m = ema(exp_avg[k], g, 1.0 - b1)
            v = exp_avg_sq[k] * b2 + (1.0 - b2) * g * g
            if amsgrad:
                vmax_new[k] = torch.maximum(max_exp_avg_sq[k], v)
                denom = vmax_new[k].sqrt() / bc2_sqrt + eps
            else:
                denom = v.sqrt() / bc2_sqrt + eps
            out[k], m_new[k], v_new[k] = -(step.eta / bc1) * m / denom, m, v
        return out, (m_new, v_new, vmax_new)

    return Optimizer(init, update, name="scale_by_adam", fields=("exp_avg", "exp_avg_sq", "max_exp_avg_sq"))


def scale_by_nadam(b1: float, b2: float, eps: float, momentum_decay: float, variant: str) -> Optimizer:
    """Fields ``mu_product`` (Pi_t, float64 scalar), ``exp_avg``, ``exp_avg_sq``; with
    g the incoming values (g_t, plus lambda x_t under coupled decay)::

        m_t = ema(m_{t-1}, g, 1 - b1),   v_t = b2 v_{t-1} + (1 - b2) g^2,   D = sqrt(v_t / (1 - b2^t)) + eps
        d_t = -eta_t (c_g g + c_m m_t) / D

    torch: psi_t = b1 (1 - 0.5 * 0.96^(t momentum_decay)), Pi_t = Pi_{t-1} psi_t,
    c_g = (1 - psi_t)/(1 - Pi_t), c_m = psi_{t+1}/(1 - Pi_t psi_{t+1});
    optax: c_g = (1 - b1)/(1 - b1^t), c_m = b1/(1 - b1^(t+1)) (Pi_t unused).

    >>> from lmo.base import StepInfo
    >>> tr, g = scale_by_nadam(0.9, 0.999, 0.0, 0.004, "optax"), {"w": torch.tensor([2.0, -4.0])}
    >>> tr.update(g, tr.init(g), None, StepInfo(torch.tensor(0), 0.1, g))[0]    # -eta (1 + 0.09 / 0.19) sign(g)
    {'w': tensor([-0.1474,  0.1474])}
    """

    def init(params):
        return torch.ones((), dtype=torch.float64), zeros_like_tree(params), zeros_like_tree(params)

    def update(u, entries, params, step):
        mu_product, exp_avg, exp_avg_sq = entries
        eta, t = step.eta, step.t
        bc2 = 1.0 - b2 ** t
        if variant == "torch":
            psi = b1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
            psi_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
            mu_product = mu_product * psi
            pi = float(mu_product)
            c_g = (1.0 - psi) / (1.0 - pi)
            c_m = psi_next / (1.0 - pi * psi_next)
        else:
            c_g = (1.0 - b1) / (1.0 - b1 ** t)
            c_m = b1 / (1.0 - b1 ** (t + 1))
        out, m_new, v_new = {}, {}, {}
        for k, g in u.items():
            m = ema(exp_avg[k], g, 1.0 - b1)
            v = exp_avg_sq[k] * b2 + (1.0 - b2) * g * g
            denom = (v / bc2).sqrt() + eps
            out[k], m_new[k], v_new[k] = -eta * (c_g * g + c_m * m) / denom, m, v
        return out, (mu_product, m_new, v_new)

    return Optimizer(init, update, name="scale_by_nadam", fields=("mu_product", "exp_avg", "exp_avg_sq"))


def scale_by_adan(b1: float, b2: float, b3: float, eps: float) -> Optimizer:
    """Fields ``exp_avg``, ``exp_avg_diff``, ``exp_avg_sq``, ``prev_grad``; t = 1, 2, ...::

        delta_t = g_t - g_{t-1}   (delta_1 = 0)
        m_t = ema(m_{t-1}, g_t, 1 - b1),   v_t = ema(v_{t-1}, delta_t, 1 - b2)
        n_t = b3 n_{t-1} + (1 - b3) (g_t + b2 delta_t)^2,   D = sqrt(n_t) / sqrt(1 - b3^t) + eps
        u_t = (m_t / (1 - b1^t) + (b2 / (1 - b2^t)) v_t) / D

    >>> from lmo.base import StepInfo
    >>> tr, g = scale_by_adan(0.98, 0.92, 0.99, eps=0.0), {"w": torch.tensor([2.0, -4.0])}
    >>> tr.update(g, tr.init(g), None, StepInfo(torch.tensor(0), 0.1, g))[0]    # step 1 (delta_1 = 0): sign(g)
    {'w': tensor([ 1., -1.])}
    """

    def init(params):
        return tuple(zeros_like_tree(params) for _ in range(4))

    def update(u, entries, params, step):
        exp_avg, exp_avg_diff, exp_avg_sq, prev_grad = entries
        t = step.t
        bc1, bc2, bc3 = 1 - b1 ** t, 1 - b2 ** t, math.sqrt(1 - b3 ** t)
        out, ms, vs, ns = {}, {}, {}, {}
        for k, g in u.items():
            delta = g - prev_grad[k] if t > 1 else torch.zeros_like(g)
            ms[k] = ema(exp_avg[k], g, 1 - b1)
            vs[k] = ema(exp_avg_diff[k], delta, 1 - b2)
            c = g + b2 * delta
            ns[k] = b3 * exp_avg_sq[k] + (1 - b3) * c * c
            out[k] = (ms[k] / bc1 + (b2 / bc2) * vs[k]) / (ns[k].sqrt() / bc3 + eps)
        return out, (ms, vs, ns, {k: g.clone() for k, g in u.items()})

    return Optimizer(init, update,
                     name="scale_by_adan", fields=("exp_avg", "exp_avg_diff", "exp_avg_sq", "prev_grad"))


# ----------------------------------------------------------------------------- MARS
def _clip_norm(c: torch.Tensor, max_norm: float, batch_dims: int) -> torch.Tensor:
    """Clip(c, r) = c * min(1, r / ||c||_2), the 2-norm per leading batch index."""
    dims = tuple(range(batch_dims, c.ndim))
    if not dims:
        norm = c.abs()
    else:
        norm = torch.linalg.vector_norm(c, dim=dims, keepdim=True)
    scale = torch.where(norm > max_norm, max_norm / norm.clamp_min(1e-30), torch.ones_like(norm))
    return c * scale


def scale_by_mars(b1: float, b2: float, eps: float, weight_decay: float, *, scale_c: float,
                  max_norm: float | None, optimize_1d: bool, lr_1d_factor: float, betas_1d: tuple,
                  weight_decay_1d: float, batch_dims: int) -> Optimizer:
    """Fields ``exp_avg``, ``exp_avg_sq``, ``last_grad`` (MARS-AdamW, lmo.adam_family.mars)::

        c_t = Clip(g_t + scale_c (g_t - g_{t-1}), max_norm)     (matrices, or all if optimize_1d)
        c_t = g_t, (b1, b2, eta_t, lambda) <- (betas_1d, eta_t lr_1d_factor, weight_decay_1d)   (others)
        m_t = ema(m_{t-1}, c_t, 1 - b1),   v_t = b2 v_{t-1} + (1 - b2) c_t^2
        d_t = -eta_t (m_t / (1 - b1^t)) / (sqrt(v_t / (1 - b2^t)) + eps) - eta_t lambda x_t

    The decoupled decay is applied here, per entry, because its rate and lambda depend on
    the entry (matrix or not).

    >>> from lmo.base import StepInfo
    >>> tr = scale_by_mars(0.9, 0.99, 0.0, 0.0, scale_c=0.0, max_norm=None, optimize_1d=True, lr_1d_factor=1.0,
    ...                    betas_1d=(0.9, 0.95), weight_decay_1d=0.0, batch_dims=0)
    >>> g = {"w": torch.tensor([2.0, -4.0])}
    >>> tr.update(g, tr.init(g), None, StepInfo(torch.tensor(0), 0.1, g))[0]    # gamma = 0, no clip: AdamW's step 1
    {'w': tensor([-0.1000,  0.1000])}
    """
    c1, c2 = betas_1d

    def check(tree, what):
        for k, v in tree.items():
            if v.ndim < batch_dims + 1:
                raise ValueError(f"params['{k}'] has {v.ndim} dims, fewer than batch_dims+1 = {batch_dims + 1}")

    def init(params):
        return tuple(zeros_like_tree(params) for _ in range(3))

    def update(u, entries, params, step):
        exp_avg, exp_avg_sq, last_grad = entries
        eta, t = step.eta, step.t
        out, ms, vs = {}, {}, {}
        for k, g in u.items():
            if g.ndim - batch_dims == 2 or optimize_1d:
                c = g + scale_c * (g - last_grad[k])
                if max_norm is not None:
                    c = _clip_norm(c, float(max_norm), batch_dims)
                beta1, beta2, lr_k, wd = b1, b2, eta, weight_decay
            else:
                c = g
                beta1, beta2, lr_k, wd = c1, c2, eta * lr_1d_factor, weight_decay_1d
            m = ema(exp_avg[k], c, 1 - beta1)
            v = beta2 * exp_avg_sq[k] + (1 - beta2) * c * c
            denom = (v / (1 - beta2 ** t)).sqrt() + eps
            d = -lr_k * (m / (1 - beta1 ** t)) / denom
            out[k], ms[k], vs[k] = decoupled_decay(d, lr_k, wd, params, k), m, v
        return out, (ms, vs, {k: g.clone() for k, g in u.items()})

    return Optimizer(init, update, check_params=check,
                     needs_params=bool(weight_decay or weight_decay_1d), name="scale_by_mars",
                     fields=("exp_avg", "exp_avg_sq", "last_grad"))

"""The theory's quantities (docs/design.md §3-5), measured during training in the optimizer's geometry.

Geometry per parameter block b, asked of lmo (``lmo.registry.geometries``: the optimizer's
record, lmo.presets.PRESETS, which refuses an unknown optimizer by name): matrix optimizers
(muon, normuon, adamuon) use the spectral norm (nuclear dual) on the hidden matrices
(``lmo.combine.muon_labels == "matrix"``) and the sign geometry (l_inf, dual l_1) elsewhere;
sign-like and Adam-family optimizers (and scion) use the sign geometry everywhere;
normalized_sgd the Euclidean one. Over the product of blocks the norm is
the max and the dual the sum: ||x|| = max_b ||x_b||, ||g||_* = sum_b ||g_b||_*, and
rho = sqrt(sum_b rho_b^2) (Cauchy-Schwarz on sum_b rho_b ||g_b||_2).

Measured at step t (``Diagnostics.measure``), with x_t before and x_{t+1} after the update:

- ``update_norm``  ||x_{t+1} - x_t|| (the applied displacement; for sync it is ||d_t||)
- ``d_norm``       ||d_t|| = ||y_{t+1} - y_t||, the optimizer's own step (y_{t+1} = y_t + d_t in every
                   mode, docs/design.md §4); the theory's eta bounds it. ``r_over_d`` = r / ||d_t||: under 2bw
                   it is 1 (r = ||d_t||); under EF it is ||d_t - d_{t-1}||-like and < 1 when
                   consecutive steps align, the condition for EF's bound to beat the delayed one.
- ``r``            r = ||x_{t+1} - y_{t+1}|| with y = ``opt.virtual_iterate``; ``r_over_eta`` = r / eta_t
- ``r_over_eta_blocks``  per block b: ||x_b - y_b|| / eta_t in the block's own geometry (spectral for
                   a Muon matrix, l_inf otherwise); summaries ``r_over_eta_matrix`` (max over the
                   spectral blocks, absent when there are none), ``r_over_eta_matrix_median`` and
                   ``r_over_eta_other`` (max over the l_inf / l_2 blocks). Under 2bw, x - y = -d_t, so a
                   Muon block gives r_b / eta = s_b * sigma_max(NS(m)) with s_b = sqrt(max(1, rows/cols))
                   the shape factor: r_b / eta <= 1 is a statement about s_b and NS, not about the delay.
- ``experts``      per expert stack (a 3-D MoE weight (E, out, in), gpu_runs.moe), per expert e:
                   {"d_norm": [||d_t^e||], "r": [r^e], "r_over_eta": [r^e / eta]} in the expert's own
                   geometry (absent without such stacks; ``d_norm`` absent without ``state_prev``).
                   Each expert is its own block (lmo's leading batch dimension, docs/design.md §7: Muon
                   orthogonalizes each expert alone), so a stack is the product of E blocks: its
                   norm is the max over experts (its entry in ``r_over_eta_blocks``), its dual the
                   sum, its rho^2 the sum of E rho_e^2. The lists are kept per expert, not only
                   their max, because a delay's effect differs between busy and idle experts
                   (the load of ``routing``) and the max alone would hide which expert it is.
- ``L_local``      ||g(x_{t+1}; B) - g(x_t; B)||_* / ||x_{t+1} - x_t|| on the fixed batch B (step 0's)
- ``sigma``        sqrt(1/(k-1) sum_i ||g_i - gbar||_2^2) over k independent batches at x_t
- ``rho``          from the shapes
- ``momentum_error``  ||m_t - gbar||_* (the theory's E||m_t - grad f(x_t)||_*): m_t is the
                   momentum after step t's update, which includes g(x_t), over the blocks that
                   carry a ``momentum`` field (Adam-family: ``exp_avg``, their m_t);
                   gbar = mean of the k gradients at x_t (a k-times larger batch estimating grad f(x_t))
- ``momentum_error_debiased``  AdamW only: ||m_hat_t - gbar||_* with m_hat_t = m_t / (1 - beta1^n), n = t + 1
                   updates, the bias-corrected momentum its update uses (``lmo.adam_moments.scale_by_adam``). The
                   stored buffer starts at zero (m_1 = (1 - beta1) g_1); m_hat_1 = g_1 (the gradient the
                   optimizer received, after clipping) meets the lemma's premise m_0 = g(x_0)
                   (docs/design.md §5), which the stored buffer does not.
"""
from __future__ import annotations

import math
import statistics

import torch

from lmo.base import find_field
from lmo.geometry import Spectral
from lmo.registry import geometries   # optimizer name -> its geometry per parameter; refuses an unknown name

from gpu_runs.recipe import loss_and_grads

#: optimizers whose update uses the bias-corrected momentum m_t / (1 - beta1^t) (``momentum_error_debiased``)
DEBIASED_OPTIMIZERS = ("adamw",)


def block_norms(geo, v: torch.Tensor) -> torch.Tensor:
    """||v_b|| for each block of one parameter, flat: one value for a vector or matrix, E for an
    expert stack (E, m, n) (every geometry's norm is per matrix over the last two dims)."""
    return geo.norm(v.float()).reshape(-1)


def block_duals(geo, g: torch.Tensor) -> torch.Tensor:
    """||g_b||_* for each block of one parameter, flat (as :func:`block_norms`)."""
    return geo.dual_norm(g.float()).reshape(-1)


def n_blocks(v: torch.Tensor) -> int:
    """Blocks of one parameter: E for an expert stack (E, m, n), else 1."""
    return math.prod(v.shape[:-2]) if v.ndim > 2 else 1


def product_norm(geo: dict, tree: dict) -> float:
    """max_b ||x_b|| over the blocks present in ``tree`` (each expert of a stack a block)."""
    return max(float(block_norms(geo[k], v).max()) for k, v in tree.items())


def product_dual(geo: dict, tree: dict) -> float:
    """sum_b ||g_b||_* over the blocks present in ``tree`` (each expert of a stack a block)."""
    return sum(float(block_duals(geo[k], v).sum()) for k, v in tree.items())


def product_rho(geo: dict, params: dict) -> float:
    """sqrt(sum_b rho_b^2): ||g||_* <= rho ||g||_2 for the product dual (E blocks per stack)."""
    return math.sqrt(sum(n_blocks(v) * float(geo[k].rho(tuple(v.shape))) ** 2 for k, v in params.items()))


def r_over_eta_summary(geo: dict, offset: dict, lr: float) -> dict:
    """r = max_b ||offset_b||, r / eta, and the per-block r_b / eta split by geometry (module
    docstring); an expert stack's entry is the max over its experts, its per-expert values
    go to ``experts`` ({name: {"r": [...], "r_over_eta": [...]}})."""
    blocks = {k: block_norms(geo[k], v) for k, v in offset.items()}
    per = {k: float(b.max()) for k, b in blocks.items()}
    r = max(per.values())
    inv = 1.0 / lr if lr > 0 else float("nan")
    out = dict(r=r, r_over_eta=r * inv, r_over_eta_blocks={k: v * inv for k, v in per.items()})
    experts = {k: dict(r=b.tolist(), r_over_eta=[v * inv for v in b.tolist()])
               for k, b in blocks.items() if offset[k].ndim > 2}
    if experts:
        out["experts"] = experts
    mat = sorted(v * inv for k, v in per.items() if isinstance(geo[k], Spectral))
    other = [v * inv for k, v in per.items() if not isinstance(geo[k], Spectral)]
    if mat:
        out["r_over_eta_matrix"] = mat[-1]
        out["r_over_eta_matrix_median"] = statistics.median(mat)
    if other:
        out["r_over_eta_other"] = max(other)
    return out


def expert_d_norms(geo: dict, d: dict) -> dict:
    """{stack name: [||d^e|| per expert]} for the 3-D parameters of ``d``."""
    return {k: block_norms(geo[k], v).tolist() for k, v in d.items() if v.ndim > 2}


def adam_beta1(hyper) -> float | None:
    """beta1 of the first ``betas`` in an optimizer's (nested) ``hyper`` (AdamW's, under any
    wrapper or chain); None when there is none."""
    if isinstance(hyper, dict):
        if "betas" in hyper:
            return float(hyper["betas"][0])
        for v in hyper.values():
            b = adam_beta1(v)
            if b is not None:
                return b
    return None


def diff(a: dict, b: dict, keys=None) -> dict:
    return {k: a[k].float() - b[k].float() for k in (keys or a)}


class Diagnostics:
    """Holds the fixed batch and the geometry; ``measure`` returns a dict of floats."""

    def __init__(self, optimizer: str, params: dict, batcher, micro: int = 4, amp: bool = False):
        if micro < 2:
            raise ValueError(f"Diagnostics: micro must be >= 2 (sigma needs two batches), got {micro}")
        self.geo = geometries(optimizer, params)
        self.debiased = optimizer in DEBIASED_OPTIMIZERS
        self.rho = product_rho(self.geo, params)
        self.batcher, self.micro, self.amp = batcher, micro, amp
        self.fixed = batcher.batch(0, micro=10_000)

    def measure(self, model, t: int, x_prev: dict, x_new: dict, updates: dict, state, opt, lr: float,
                state_prev=None) -> dict:
        """The quantities of the module docstring at step t; ``state_prev`` (the state before the
        update) gives ||d_t||, else ``d_norm`` is absent."""
        out = dict(step=t + 1, rho=self.rho, eta=lr)
        step_vec = diff(x_new, x_prev)
        out["update_norm"] = product_norm(self.geo, step_vec)
        y = opt.virtual_iterate(x_new, state)
        out.update(r_over_eta_summary(self.geo, diff(x_new, y), lr))
        if state_prev is not None:
            d_t = diff(y, opt.virtual_iterate(x_prev, state_prev))
            out["d_norm"] = product_norm(self.geo, d_t)
            for k, v in expert_d_norms(self.geo, d_t).items():
                out["experts"][k]["d_norm"] = v
            out["r_over_d"] = out["r"] / out["d_norm"] if out["d_norm"] > 0 else float("nan")
        fx, fy = self.fixed
        _, g_prev = loss_and_grads(model, x_prev, fx, fy, self.amp)
        _, g_new = loss_and_grads(model, x_new, fx, fy, self.amp)
        dx = out["update_norm"]
        out["L_local"] = product_dual(self.geo, diff(g_new, g_prev)) / dx if dx > 0 else float("nan")
        # the point the momentum's newest gradient was taken at: x_t (docs/design.md §5's e_t = m_t - grad f(x_t))
        gs = [loss_and_grads(model, x_prev, *self.batcher.batch(t, micro=i), self.amp)[1] for i in range(self.micro)]
        gbar = {k: sum(g[k].float() for g in gs) / self.micro for k in gs[0]}
        var = sum(sum(float((g[k].float() - gbar[k]).pow(2).sum()) for k in gbar) for g in gs) / (self.micro - 1)
        out["sigma"] = math.sqrt(var)
        m = find_field(state, "momentum") or find_field(state, "exp_avg")
        if m:
            keys = [k for k in m if k in gbar]
            out["momentum_error"] = product_dual(self.geo, {k: m[k].float() - gbar[k] for k in keys})
            out["momentum_blocks"] = len(keys)
            b1 = adam_beta1(opt.hyper) if self.debiased else None
            if b1 is not None:   # AdamW: the bias-corrected m_hat_t its update uses (module docstring)
                bc = 1.0 - b1 ** (t + 1)
                out["momentum_error_debiased"] = product_dual(self.geo, {k: m[k].float() / bc - gbar[k] for k in keys})
        return out

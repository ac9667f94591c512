"""Small pure transforms, and :func:`compose`, which makes a named optimizer of them
(docs/design.md §7: the optax ``alias.py`` way; the named optimizers are in lmo.alias).

A transform is an ``init`` / ``update`` pair like an optimizer's, which maps the incoming
values u (the gradients, or the previous transform's output) to outgoing ones::

    entries = tr.init(params)                               # a tuple, one per tr.fields
    u, entries = tr.update(u, entries, params, step)        # step: StepInfo of this update

``step`` carries what a named optimizer resolves once per update and every transform may
read: the counter t - 1 (steps taken before this one; ``step.t`` = t = 1, 2, ...), eta_t
(lr schedule resolved once, checked by lmo.base.resolve_lr) and the raw gradients g_t.
This is optax's ``GradientTransformationExtraArgs``: transforms that need eta take it from
``step`` instead of a separate "scale by lr" transform wherever the optimizer multiplies by
eta before other factors (AdamW's ``-(eta / (1 - b1^t)) m / D``), since a separate scaling
would round differently and the named optimizers must equal their references bit for bit.

:func:`compose` writes once what every named optimizer does around its transforms: the
input checks (same entries as params and state, per-transform shape refusals, finite
gradients, params present when weight decay needs them), resolving eta_t, the step
counter, and the state as the optimizer's own NamedTuple ``(counter, *entries)`` (so
state_dict keys are the optimizer's field names).

Complex parameters: :func:`compose` refuses them by name, except for the optimizers built
with ``complex_as_real`` (AdamW), which treat each as a pair of reals as torch.optim.AdamW
does (:func:`as_real`).

The one exponential moving average of the package, :func:`ema`, is torch's lerp:
``ema(m, x, w) = (1 - w) m + w x`` (bit-for-bit torch.optim's momentum buffers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple

import torch

from lmo.base import (Optimizer, ScalarOrSchedule, check_finite, check_floating, check_real, check_same_keys,
                      check_same_shapes, decoupled_decay, resolve_lr, step_counter, zeros_like_tree)


def ema(prev: torch.Tensor, x: torch.Tensor, weight) -> torch.Tensor:
    """(1 - w) prev + w x, computed as torch.lerp(prev, x, w) (docs/design.md §3: with
    w = mu this is the momentum m_t = (1 - mu) m_{t-1} + mu g_t)."""
    return torch.lerp(prev, x, weight)


class StepInfo(NamedTuple):
    """What every transform of one update sees: ``count`` = t - 1 (the state's counter
    tensor), eta = eta_t (None for an optimizer without lr) and the raw gradients g_t."""

    count: torch.Tensor
    eta: Any
    grads: Mapping

    @property
    def t(self) -> int:
        """t = 1, 2, ...: the number of steps taken once this one is."""
        return int(self.count) + 1


@dataclass(frozen=True)
class Transform:
    """A pure transform (module docstring). ``fields``: names of its state entries (they
    become fields of the optimizer's state NamedTuple, in order); ``check_params`` /
    ``check_grads``: refusals ``(tree, what)`` run by init / by update before any work;
    ``needs_params``: update reads x_t (weight decay)."""

    fields: tuple
    init: Callable
    update: Callable
    check_params: Callable | None = None
    check_grads: Callable | None = None
    needs_params: bool = False
    name: str = "transform"
    hyper: dict = field(default_factory=dict)


def stateless(fn: Callable, name: str, **kw) -> Transform:
    """A transform without state: ``fn(u, params, step) -> u'``."""
    return Transform((), lambda params: (), lambda u, entries, params, step: (fn(u, params, step), ()),
                     name=name, **kw)


def per_entry(fn: Callable, name: str, **kw) -> Transform:
    """A stateless transform applied entry by entry: ``fn(key, u_k, params, step) -> u'_k``."""
    return stateless(lambda u, params, step: {k: fn(k, v, params, step) for k, v in u.items()}, name, **kw)


def as_real(tree):
    """Complex entries as their real views (shape (..., 2): real and imaginary parts), the
    others as they are: how torch.optim.AdamW treats a complex parameter (a pair of reals)."""
    if tree is None:
        return None
    return {k: torch.view_as_real(v) if v.is_complex() else v for k, v in tree.items()}


def as_complex(updates, like):
    """The inverse of :func:`as_real` for the entries that are complex in ``like``."""
    return {k: torch.view_as_complex(u.contiguous()) if like[k].is_complex() else u for k, u in updates.items()}


def compose(name: str, lr: ScalarOrSchedule | None, *transforms: Transform, state: type,
            hyper: dict, complex_as_real: bool = False) -> Optimizer:
    """The named optimizer ``transforms[-1] o ... o transforms[0]`` (module docstring), its
    state ``state(counter, *entries of every transform)``. ``lr``: eta_t's source (a number
    or a schedule of the counter), resolved once per update. Complex parameters are refused
    (naming the entry) unless ``complex_as_real``: then they are treated as pairs of reals
    (:func:`as_real`; their state entries are real, shape (..., 2)), as torch.optim.AdamW does."""
    transforms = tuple(t for t in transforms if t is not None)
    needs_params = any(t.needs_params for t in transforms)

    def init(params):
        if complex_as_real:
            params = as_real(params)
        check_real(params, name)
        check_floating(params, name)
        for tr in transforms:
            if tr.check_params is not None:
                tr.check_params(params, "params")
        entries = []
        for tr in transforms:
            entries.extend(tr.init(params))
        return state(step_counter(), *entries)

    def update(grads, st, params=None):
        check_same_keys(grads, params)
        check_same_keys(grads, next(e for e in st[1:] if isinstance(e, Mapping)),
                        "grads and optimizer state")
        check_same_shapes(grads, params)
        check_floating(grads, name, "grads")
        check_finite(grads)
        given = grads
        if complex_as_real:
            grads, params = as_real(grads), as_real(params)
        check_real(grads, name, "grads")
        for tr in transforms:
            if tr.check_grads is not None:
                tr.check_grads(grads, "grads")
        if needs_params and params is None:
            raise ValueError("params is required when weight_decay != 0")
        count = st[0]
        info = StepInfo(count, None if lr is None else resolve_lr(lr, count), grads)
        u, new, i = grads, [], 1
        for tr in transforms:
            n = len(tr.fields)
            u, entries = tr.update(u, tuple(st[i:i + n]), params, info)
            new.extend(entries)
            i += n
        return (as_complex(u, given) if complex_as_real else u), state(count + 1, *new)

    return Optimizer(init, update, name=name, hyper=hyper)


# ----------------------------------------------------------------------------- momentum
def scale_by_momentum(mu: float, nesterov: bool = False, beta: float | None = None,
                      init_momentum: str = "zero") -> Transform:
    """Field ``momentum``::

        m_t = ema(m_{t-1}, g_t, mu) = (1 - mu) m_{t-1} + mu g_t     (init "grad": m_1 = g_1)
        u_t = m_t   or   ema(g_t, m_t, beta) = mu g_t + beta m_t   (nesterov, as torch)

    ``beta`` defaults to 1.0 - mu; an optimizer whose reference writes the Nesterov weight
    as its own beta passes it (1 - (1 - beta) need not equal beta in floating point)."""
    beta = 1.0 - mu if beta is None else beta

    def init(params):
        return (zeros_like_tree(params),)

    def update(u, entries, params, step):
        (prev,) = entries
        first = init_momentum == "grad" and step.t == 1
        out, ms = {}, {}
        for k, g in u.items():
            m = g.clone() if first else ema(prev[k], g, mu)
            out[k] = ema(g, m, beta) if nesterov else m
            ms[k] = m
        return out, (ms,)

    return Transform(("momentum",), init, update, name="scale_by_momentum")


def scale_by_lion(b1: float, b2: float) -> Transform:
    """Field ``momentum`` (m_{t-1}): u_t = ema(m_{t-1}, g_t, 1 - b1), m_t = ema(m_{t-1}, g_t, 1 - b2)."""

    def update(u, entries, params, step):
        (prev,) = entries
        out = {k: ema(prev[k], g, 1.0 - b1) for k, g in u.items()}
        return out, ({k: ema(prev[k], g, 1.0 - b2) for k, g in u.items()},)

    return Transform(("momentum",), lambda params: (zeros_like_tree(params),), update,
                     name="scale_by_lion")


# ----------------------------------------------------------------------------- LMO step
def shape_scale(scale, shape) -> float:
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


def scale_by_lmo(geometry, scale=None, matrix_only: bool = False) -> Transform:
    """d = lmo(u) * (eta_t s(shape)): the LMO of ``geometry`` (one batched call per matrix
    shape where the geometry has ``lmo_many``), scaled by eta_t and the shape factor
    :func:`shape_scale`. ``matrix_only`` refuses entries with fewer than two dims."""

    def check(tree, what):
        if matrix_only:
            for k, v in tree.items():
                if v.ndim < 2:
                    raise ValueError(f"{what}['{k}'] has shape {tuple(v.shape)}: the {geometry.name} "
                                     f"LMO needs matrices (..., m, n); route it to another optimizer "
                                     f"(lmo.combine.partition / lmo.registry.build)")

    def fn(u, params, step):
        lmos = geometry.lmo_many(list(u.values())) if hasattr(geometry, "lmo_many") else [
            geometry.lmo(v) for v in u.values()]
        return {k: direction * (step.eta * shape_scale(scale, v.shape))
                for (k, v), direction in zip(u.items(), lmos)}

    return stateless(fn, "scale_by_lmo", check_params=check, check_grads=check)


# ----------------------------------------------------------------------------- weight decay, lr, dtype
def add_decoupled_decay(weight_decay: float) -> Transform:
    """d - eta_t lambda x_t (AdamW-style decoupled decay, lmo.base.decoupled_decay); x_t = params."""
    return per_entry(lambda k, d, params, step: decoupled_decay(d, step.eta, weight_decay, params, k),
                     "add_decoupled_decay", needs_params=bool(weight_decay))


def add_coupled_decay(weight_decay: float) -> Transform:
    """g + lambda x_t (coupled L2, as torch.optim.Adam's / NAdam's weight_decay)."""
    return per_entry(lambda k, g, params, step: g + weight_decay * params[k], "add_coupled_decay",
                     needs_params=bool(weight_decay))


def add_proximal_decay(weight_decay: float) -> Transform:
    """d' = (x_t + d) / (1 + eta_t lambda) - x_t: x_{t+1} = (x_t + d) / (1 + eta_t lambda),
    the proximal step of the decay (Adan's default)."""
    return per_entry(lambda k, d, params, step: (params[k] + d) / (1 + step.eta * weight_decay) - params[k],
                     "add_proximal_decay", needs_params=bool(weight_decay))


def scale_by_learning_rate() -> Transform:
    """d = -eta_t u."""
    return per_entry(lambda k, u, params, step: -step.eta * u, "scale_by_learning_rate")


def cast_to_grad_dtype() -> Transform:
    """d cast to g_t's dtype (the update of a parameter has the parameter's gradient's dtype)."""
    return per_entry(lambda k, d, params, step: d.to(step.grads[k].dtype), "cast_to_grad_dtype")


# ----------------------------------------------------------------------------- Adam family
def scale_by_adam(b1: float, b2: float, eps: float, amsgrad: bool = False) -> Transform:
    """Fields ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq`` ({} unless amsgrad)::

        m_t = ema(m_{t-1}, g_t, 1 - b1),   v_t = b2 v_{t-1} + (1 - b2) g_t^2   (vmax_t = max(vmax_{t-1}, v_t))
        d_t = -(eta_t / (1 - b1^t)) m_t / (sqrt(v_t) / sqrt(1 - b2^t) + eps)

    eta_t enters here, first (torch.optim.AdamW's order of operations)."""

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

    return Transform(("exp_avg", "exp_avg_sq", "max_exp_avg_sq"), init, update, name="scale_by_adam")


def scale_by_nadam(b1: float, b2: float, eps: float, momentum_decay: float, variant: str) -> Transform:
    """Fields ``mu_product`` (Pi_t, float64 scalar), ``exp_avg``, ``exp_avg_sq``; with
    g the incoming values (g_t, plus lambda x_t under coupled decay)::

        m_t = ema(m_{t-1}, g, 1 - b1),   v_t = b2 v_{t-1} + (1 - b2) g^2,   D = sqrt(v_t / (1 - b2^t)) + eps
        d_t = -eta_t (c_g g + c_m m_t) / D

    torch: psi_t = b1 (1 - 0.5 * 0.96^(t momentum_decay)), Pi_t = Pi_{t-1} psi_t,
    c_g = (1 - psi_t)/(1 - Pi_t), c_m = psi_{t+1}/(1 - Pi_t psi_{t+1});
    optax: c_g = (1 - b1)/(1 - b1^t), c_m = b1/(1 - b1^(t+1)) (Pi_t unused)."""

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

    return Transform(("mu_product", "exp_avg", "exp_avg_sq"), init, update, name="scale_by_nadam")


def scale_by_adan(b1: float, b2: float, b3: float, eps: float) -> Transform:
    """Fields ``exp_avg``, ``exp_avg_diff``, ``exp_avg_sq``, ``prev_grad``; t = 1, 2, ...::

        delta_t = g_t - g_{t-1}   (delta_1 = 0)
        m_t = ema(m_{t-1}, g_t, 1 - b1),   v_t = ema(v_{t-1}, delta_t, 1 - b2)
        n_t = b3 n_{t-1} + (1 - b3) (g_t + b2 delta_t)^2,   D = sqrt(n_t) / sqrt(1 - b3^t) + eps
        u_t = (m_t / (1 - b1^t) + (b2 / (1 - b2^t)) v_t) / D
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

    return Transform(("exp_avg", "exp_avg_diff", "exp_avg_sq", "prev_grad"), init, update,
                     name="scale_by_adan")


# ----------------------------------------------------------------------------- Muon family
def orthogonalize(ns: dict, name: str, pre: Callable | None = None) -> Transform:
    """O = NS(pre(u)) ~ polar(pre(u)) for every entry (exact: the SVD polar factor), NS
    batched over same-shape matrices: lmo.polar_factor.orthogonalize_many with the keywords
    ``ns`` (the Muon family's one route, as Spectral's LMO), each in u's dtype; params must be
    matrices (..., m, n)."""
    from lmo import polar_factor
    from lmo.muon_family import check_matrices

    def fn(u, params, step):
        Os = polar_factor.orthogonalize_many([v if pre is None else pre(v) for v in u.values()], **ns)
        return dict(zip(u, Os))

    return stateless(fn, "orthogonalize", check_params=lambda tree, what: check_matrices(tree, name))


def scale_by_second_moment(second_moment_like: Callable, step_fn: Callable) -> Transform:
    """Field ``second_moment``: (v_t, D'_t) = step_fn(O_t, v_{t-1}, t, eta_t) per entry,
    v_0 = second_moment_like(x) (NorMuon's per-row, AdaMuon's element-wise second moment)."""

    def init(params):
        return ({k: second_moment_like(v) for k, v in params.items()},)

    def update(u, entries, params, step):
        (prev,) = entries
        t, eta = step.t, step.eta
        out, vs = {}, {}
        for k, O in u.items():
            vs[k], out[k] = step_fn(O, prev[k], t, eta)
        return out, (vs,)

    return Transform(("second_moment",), init, update, name="scale_by_second_moment")


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
                  weight_decay_1d: float, batch_dims: int) -> Transform:
    """Fields ``exp_avg``, ``exp_avg_sq``, ``last_grad`` (MARS-AdamW, lmo.alias.mars)::

        c_t = Clip(g_t + scale_c (g_t - g_{t-1}), max_norm)     (matrices, or all if optimize_1d)
        c_t = g_t, (b1, b2, eta_t, lambda) <- (betas_1d, eta_t lr_1d_factor, weight_decay_1d)   (others)
        m_t = ema(m_{t-1}, c_t, 1 - b1),   v_t = b2 v_{t-1} + (1 - b2) c_t^2
        d_t = -eta_t (m_t / (1 - b1^t)) / (sqrt(v_t / (1 - b2^t)) + eps) - eta_t lambda x_t

    The decoupled decay is applied here, per entry, because its rate and lambda depend on
    the entry (matrix or not)."""
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

    return Transform(("exp_avg", "exp_avg_sq", "last_grad"), init, update, check_params=check,
                     needs_params=bool(weight_decay or weight_decay_1d), name="scale_by_mars")

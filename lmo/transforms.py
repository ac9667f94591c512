"""Small pure transforms: the pieces the named optimizers are chained from (docs/design.md §7:
the optax ``alias.py`` way; the named optimizers are in lmo.adam_family, lmo.steepest_descent,
lmo.muon_family).

A transform is an :class:`lmo.base.Optimizer` that declares ``fields``: its state is the
tuple of those entries, and its update maps the incoming values u (the gradients, or the
previous transform's output) to outgoing ones, reading the step::

    entries = tr.init(params)                               # a tuple, one per tr.fields
    u, entries = tr.update(u, entries, params, step)        # step: StepInfo of this update

``step`` (:class:`lmo.base.StepInfo`) carries what a named optimizer resolves once per
update and every transform may read: the counter t - 1, eta_t (lr schedule resolved once,
checked by lmo.hyperparameters.resolve_lr) and the raw gradients g_t. This is optax's
``GradientTransformationExtraArgs``: transforms that need eta take it from ``step`` instead
of a separate "scale by lr" transform wherever the optimizer multiplies by eta before other
factors (AdamW's ``-(eta / (1 - b1^t)) m / D``), since a separate scaling would round
differently and the named optimizers must equal their references bit for bit.

``lmo.combine.chain(*transforms, name=..., lr=..., state=S)`` makes a named optimizer of
them: the input checks, eta_t, the step counter, and the state ``S(counter, *entries)``
(so state_dict keys are the optimizer's field names).

The one exponential moving average of the package, :func:`ema`, is torch's lerp:
``ema(m, x, w) = (1 - w) m + w x`` (bit-for-bit torch.optim's momentum buffers).

>>> from lmo.base import StepInfo
>>> tr = scale_by_momentum(0.5)
>>> u, entries = tr.update({"w": torch.tensor([2.0])}, tr.init({"w": torch.zeros(1)}), None,
...                        StepInfo(torch.tensor(0), 0.1, {}))
>>> u["w"], tr.fields
(tensor([1.]), ('momentum',))
"""
from __future__ import annotations

import math
from typing import Callable

import torch

from lmo import polar_factor
from lmo.base import Optimizer, check_matrices, decoupled_decay, zeros_like_tree


def ema(prev: torch.Tensor, x: torch.Tensor, weight) -> torch.Tensor:
    """(1 - w) prev + w x, computed as torch.lerp(prev, x, w) (docs/design.md §3: with
    w = mu this is the momentum m_t = (1 - mu) m_{t-1} + mu g_t).

    >>> ema(torch.tensor([0.0]), torch.tensor([4.0]), 0.25)
    tensor([1.])
    """
    return torch.lerp(prev, x, weight)


def stateless(fn: Callable, name: str, **kw) -> Optimizer:
    """A transform without state (``fields`` = ()): ``fn(u, params, step) -> u'``.

    >>> tr = stateless(lambda u, params, step: {k: 2 * v for k, v in u.items()}, "double")
    >>> tr.update({"w": torch.tensor([1.5])}, tr.init({}), None, None)
    ({'w': tensor([3.])}, ())
    """
    return Optimizer(lambda params: (), lambda u, entries, params, step: (fn(u, params, step), ()),
                     name=name, fields=(), **kw)


def per_entry(fn: Callable, name: str, **kw) -> Optimizer:
    """A stateless transform applied entry by entry: ``fn(key, u_k, params, step) -> u'_k``.

    >>> tr = per_entry(lambda k, v, params, step: v + params[k], "add_x")
    >>> tr.update({"w": torch.tensor([1.0])}, (), {"w": torch.tensor([2.0])}, None)[0]
    {'w': tensor([3.])}
    """
    return stateless(lambda u, params, step: {k: fn(k, v, params, step) for k, v in u.items()}, name, **kw)


# ----------------------------------------------------------------------------- momentum
def scale_by_momentum(mu: float, nesterov: bool = False, beta: float | None = None,
                      init_momentum: str = "zero") -> Optimizer:
    """Field ``momentum``::

        m_t = ema(m_{t-1}, g_t, mu) = (1 - mu) m_{t-1} + mu g_t     (init "grad": m_1 = g_1)
        u_t = m_t   or   ema(g_t, m_t, beta) = mu g_t + beta m_t   (nesterov, as torch)

    ``beta`` defaults to 1.0 - mu; an optimizer whose reference writes the Nesterov weight
    as its own beta passes it (1 - (1 - beta) need not equal beta in floating point).

    >>> from lmo.base import StepInfo
    >>> tr, g = scale_by_momentum(0.5, nesterov=True), {"w": torch.tensor([2.0])}
    >>> tr.update(g, tr.init(g), None, StepInfo(torch.tensor(0), 0.1, g))     # m_1 = 1, u_1 = 0.5 * 2 + 0.5 * 1
    ({'w': tensor([1.5000])}, ({'w': tensor([1.])},))
    """
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

    return Optimizer(init, update, name="scale_by_momentum", fields=("momentum",))


def scale_by_lion(b1: float, b2: float) -> Optimizer:
    """Field ``momentum`` (m_{t-1}): u_t = ema(m_{t-1}, g_t, 1 - b1), m_t = ema(m_{t-1}, g_t, 1 - b2).

    >>> from lmo.base import StepInfo
    >>> tr, g = scale_by_lion(0.9, 0.99), {"w": torch.tensor([1.0])}
    >>> tr.update(g, tr.init(g), None, StepInfo(torch.tensor(0), 0.1, g))     # u = 0.1 g, m = 0.01 g
    ({'w': tensor([0.1000])}, ({'w': tensor([0.0100])},))
    """

    def update(u, entries, params, step):
        (prev,) = entries
        out = {k: ema(prev[k], g, 1.0 - b1) for k, g in u.items()}
        return out, ({k: ema(prev[k], g, 1.0 - b2) for k, g in u.items()},)

    return Optimizer(lambda params: (zeros_like_tree(params),), update,
                     name="scale_by_lion", fields=("momentum",))


# ----------------------------------------------------------------------------- LMO step
def shape_scale(scale, shape) -> float:
    """The per-matrix step multiplier s(shape) for a (..., rows, cols) parameter.

    - ``None`` / a number: that number (None -> 1).
    - ``"original"``: sqrt(max(1, rows / cols))  (Keller Jordan's Muon; torch.optim.Muon default)
    - ``"match_rms_adamw"``: 0.2 * sqrt(max(rows, cols))  (Moonlight; torch.optim.Muon option)
    - ``"spectral"``: sqrt(fan_out / fan_in) = sqrt(rows / cols)  (the spectral condition)
    - a callable: ``scale(shape)``.

    >>> shape_scale("original", (8, 2)), shape_scale("match_rms_adamw", (4, 1)), shape_scale(None, (3, 3))
    (2.0, 0.4, 1.0)
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


def scale_by_lmo(geometry, scale=None, matrix_only: bool = False) -> Optimizer:
    """d = lmo(u) * (eta_t s(shape)): the LMO of ``geometry`` (one batched call per matrix
    shape where the geometry has ``lmo_many``), scaled by eta_t and the shape factor
    :func:`shape_scale`. ``matrix_only`` refuses entries with fewer than two dims.

    >>> from lmo.base import StepInfo
    >>> from lmo.geometry import Sign
    >>> tr, u = scale_by_lmo(Sign(event_ndim=1)), {"w": torch.tensor([2.0, -3.0])}
    >>> tr.update(u, (), None, StepInfo(torch.tensor(0), 0.1, u))[0]        # eta lmo(u) = -eta sign(u)
    {'w': tensor([-0.1000,  0.1000])}
    """

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
def add_decoupled_decay(weight_decay: float) -> Optimizer:
    """d - eta_t lambda x_t (AdamW-style decoupled decay, lmo.base.decoupled_decay); x_t = params.

    >>> from lmo.base import StepInfo
    >>> tr = add_decoupled_decay(0.1)
    >>> step = StepInfo(torch.tensor(0), 0.5, {})                # eta_t = 0.5: 1 - 0.5 * 0.1 * 2
    >>> tr.update({"w": torch.tensor([1.0])}, (), {"w": torch.tensor([2.0])}, step)[0]
    {'w': tensor([0.9000])}
    """
    return per_entry(lambda k, d, params, step: decoupled_decay(d, step.eta, weight_decay, params, k),
                     "add_decoupled_decay", needs_params=bool(weight_decay))


def add_coupled_decay(weight_decay: float) -> Optimizer:
    """g + lambda x_t (coupled L2, as torch.optim.Adam's / NAdam's weight_decay).

    >>> tr = add_coupled_decay(0.1)
    >>> tr.update({"w": torch.tensor([1.0])}, (), {"w": torch.tensor([2.0])}, None)[0]      # g + 0.1 x
    {'w': tensor([1.2000])}
    """
    return per_entry(lambda k, g, params, step: g + weight_decay * params[k], "add_coupled_decay",
                     needs_params=bool(weight_decay))


def add_proximal_decay(weight_decay: float) -> Optimizer:
    """d' = (x_t + d) / (1 + eta_t lambda) - x_t: x_{t+1} = (x_t + d) / (1 + eta_t lambda),
    the proximal step of the decay (Adan's default).

    >>> from lmo.base import StepInfo
    >>> tr = add_proximal_decay(1.0)                   # x_{t+1} = (2 + 0) / (1 + 1) = 1: d' = -1
    >>> step = StepInfo(torch.tensor(0), 1.0, {})
    >>> tr.update({"w": torch.tensor([0.0])}, (), {"w": torch.tensor([2.0])}, step)[0]
    {'w': tensor([-1.])}
    """
    return per_entry(lambda k, d, params, step: (params[k] + d) / (1 + step.eta * weight_decay) - params[k],
                     "add_proximal_decay", needs_params=bool(weight_decay))


def scale_by_learning_rate() -> Optimizer:
    """d = -eta_t u.

    >>> from lmo.base import StepInfo
    >>> step = StepInfo(torch.tensor(0), 0.1, {})
    >>> scale_by_learning_rate().update({"w": torch.tensor([2.0])}, (), None, step)[0]
    {'w': tensor([-0.2000])}
    """
    return per_entry(lambda k, u, params, step: -step.eta * u, "scale_by_learning_rate")


def cast_to_grad_dtype() -> Optimizer:
    """d cast to g_t's dtype (the update of a parameter has the parameter's gradient's dtype).

    >>> from lmo.base import StepInfo
    >>> g = {"w": torch.ones(1, dtype=torch.bfloat16)}
    >>> step = StepInfo(torch.tensor(0), 0.1, g)
    >>> cast_to_grad_dtype().update({"w": torch.ones(1)}, (), None, step)[0]["w"].dtype
    torch.bfloat16
    """
    return per_entry(lambda k, d, params, step: d.to(step.grads[k].dtype), "cast_to_grad_dtype")


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


# ----------------------------------------------------------------------------- Muon family
def orthogonalize(ns: dict, name: str, pre: Callable | None = None) -> Optimizer:
    """O = NS(pre(u)) ~ polar(pre(u)) for every entry (exact: the SVD polar factor), NS
    batched over same-shape matrices: lmo.polar_factor.orthogonalize_many with the keywords
    ``ns`` (the Muon family's one route, as Spectral's LMO), each in u's dtype; params must be
    matrices (..., m, n).

    >>> from lmo.base import StepInfo
    >>> tr = orthogonalize(dict(exact=True), "muon")
    >>> tr.update({"w": torch.diag(torch.tensor([2.0, 3.0]))}, (), None, None)[0]["w"]    # polar(diag(2, 3)) = I
    tensor([[1., 0.],
            [0., 1.]])
    """
    def fn(u, params, step):
        Os = polar_factor.orthogonalize_many([v if pre is None else pre(v) for v in u.values()], **ns)
        return dict(zip(u, Os))

    return stateless(fn, "orthogonalize", check_params=lambda tree, what: check_matrices(tree, name))


def scale_by_second_moment(second_moment_like: Callable, step_fn: Callable) -> Optimizer:
    """Field ``second_moment``: (v_t, D'_t) = step_fn(O_t, v_{t-1}, t, eta_t) per entry,
    v_0 = second_moment_like(x) (NorMuon's per-row, AdaMuon's element-wise second moment).

    >>> from lmo.base import StepInfo
    >>> tr = scale_by_second_moment(torch.zeros_like, lambda O, v, t, eta: (v + O * O, -eta * O))
    >>> step = StepInfo(torch.tensor(0), 0.1, {})
    >>> tr.update({"w": torch.tensor([3.0])}, tr.init({"w": torch.zeros(1)}), None, step)
    ({'w': tensor([-0.3000])}, ({'w': tensor([9.])},))
    """

    def init(params):
        return ({k: second_moment_like(v) for k, v in params.items()},)

    def update(u, entries, params, step):
        (prev,) = entries
        t, eta = step.t, step.eta
        out, vs = {}, {}
        for k, O in u.items():
            vs[k], out[k] = step_fn(O, prev[k], t, eta)
        return out, (vs,)

    return Optimizer(init, update, name="scale_by_second_moment", fields=("second_moment",))


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

"""Small pure transforms: the pieces the named optimizers are chained from (docs/design.md §7:
the optax ``alias.py`` way; the named optimizers are in lmo.adam_family, lmo.steepest_descent,
lmo.muon_family; the Adam family's moment transforms are lmo.adam_moments).

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

"""The optimizer protocol (docs/design.md §7), in the style of optax.

An optimizer is a pair of pure functions::

    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    params = apply_updates(params, updates)        # x_{t+1} = x_t + updates

``params``, ``grads`` and ``updates`` are mappings name -> tensor. ``updates`` are
displacements d_t (docs/design.md §3), so a step is ``x_{t+1} = x_t + d_t``; inputs are never
mutated. ``state`` is a tree of NamedTuples / dicts / tuples whose leaves are tensors
(the step counter included), so it can be flattened with :func:`state_dict` and
restored with :func:`load_state_dict`.

Wrappers (delay, error feedback, partition) return an :class:`Optimizer` too; the ones
that change which iterate the gradient is taken at also expose ``virtual(params,
state) -> y_t`` (docs/design.md §4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Union

import torch

Params = Mapping[str, torch.Tensor]
Updates = dict
State = Any
Schedule = Callable[[torch.Tensor], Union[float, torch.Tensor]]
ScalarOrSchedule = Union[float, Schedule]


@dataclass(frozen=True)
class Optimizer:
    """The one step type of lmo: ``init(params) -> state``, ``update(u, state, params) -> (u', state)``.

    A named optimizer, a wrapper (delay, error feedback, partition) and a piece it is built
    from (a *transform*: momentum, an LMO step, decay, ...) are all this type, as optax has
    one GradientTransformation; :func:`lmo.combine.chain` composes any of them.

    ``virtual(params, state) -> y`` is the virtual iterate y_t of docs/design.md §4 for the
    wrappers that have one (sync optimizers: y_t = x_t). ``hyper`` records the
    constructor's hyperparameters (for logs and cache keys).

    A transform declares ``fields``, the names of its state entries: its state is the tuple
    of those entries, and its update takes a fourth argument, the :class:`StepInfo` of the
    named optimizer it is part of (eta_t, t, g_t), ``update(u, entries, params, step)``;
    ``chain(..., state=S)`` lays the entries of every part flat into ``S(counter,
    *entries)``, so state_dict keys are field names. ``check_params`` / ``check_grads``:
    refusals ``(tree, what)`` that chain runs before any work; ``needs_params``: the update
    reads x_t (weight decay). An optimizer (``fields=None``) ignores the four.

    >>> opt = Optimizer(lambda p: (), lambda g, s, p=None: ({k: -v for k, v in g.items()}, s), name="neg")
    >>> opt.update({"w": torch.tensor([1.0, -2.0])}, opt.init({}))[0]["w"]
    tensor([-1.,  2.])
    >>> opt.virtual_iterate({"w": torch.tensor([3.0])}, ())       # no virtual: y_t = x_t
    {'w': tensor([3.])}
    """

    init: Callable[[Params], State]
    update: Callable[..., "tuple[Updates, State]"]
    virtual: Callable[[Params, State], dict] | None = None
    name: str = "optimizer"
    hyper: dict = field(default_factory=dict)
    fields: tuple | None = None
    check_params: Callable | None = None
    check_grads: Callable | None = None
    needs_params: bool = False

    def virtual_iterate(self, params: Params, state: State) -> dict:
        """y_t; equal to x_t for an optimizer that applies its update at once."""
        if self.virtual is None:
            return dict(params)
        return self.virtual(params, state)


class StepInfo(NamedTuple):
    """What every transform of one update sees: ``count`` = t - 1 (the state's counter
    tensor), eta = eta_t (None for an optimizer without lr) and the raw gradients g_t.

    >>> StepInfo(torch.tensor(4), 0.1, {}).t
    5
    """

    count: torch.Tensor
    eta: Any
    grads: Mapping

    @property
    def t(self) -> int:
        """t = 1, 2, ...: the number of steps taken once this one is."""
        return int(self.count) + 1


class EmptyState(NamedTuple):
    """State of a stateless transform."""


def apply_updates(params: Params, updates: Params) -> dict:
    """x_{t+1} = x_t + d_t, entry by entry; returns a new mapping (inputs untouched).

    >>> apply_updates({"w": torch.tensor([1.0, 2.0])}, {"w": torch.tensor([0.5, -0.5])})
    {'w': tensor([1.5000, 1.5000])}
    """
    missing = set(params) - set(updates)
    if missing:
        raise KeyError(f"updates: missing entries for params {sorted(missing)[:5]}")
    return {k: params[k] + updates[k].to(params[k].dtype) for k in params}


def tree_map(fn: Callable, *trees):
    """Map ``fn`` over the tensor leaves of equally-structured trees (dict, tuple, NamedTuple, list).

    >>> tree_map(lambda a, b: a + b, {"m": (torch.tensor(1.0),)}, {"m": (torch.tensor(2.0),)})
    {'m': (tensor(3.),)}
    """
    first = trees[0]
    if isinstance(first, torch.Tensor):
        return fn(*trees)
    if isinstance(first, Mapping):
        return {k: tree_map(fn, *(t[k] for t in trees)) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(tree_map(fn, *parts) for parts in zip(*trees)))
    if isinstance(first, (tuple, list)):
        return type(first)(tree_map(fn, *parts) for parts in zip(*trees))
    return first


def zeros_like_tree(params: Params) -> dict:
    """0 for every entry (m_{-1} = 0: the zero start of every moment).

    >>> zeros_like_tree({"w": torch.ones(2)})
    {'w': tensor([0., 0.])}
    """
    return {k: torch.zeros_like(v) for k, v in params.items()}


# ----------------------------------------------------------------------------- state I/O
def _flatten(tree, prefix: str, out: dict) -> None:
    if isinstance(tree, torch.Tensor):
        out[prefix] = tree
    elif isinstance(tree, Mapping):
        for k, v in tree.items():
            _flatten(v, f"{prefix}/{k}" if prefix else str(k), out)
    elif isinstance(tree, (tuple, list)):
        names = getattr(tree, "_fields", None) or [str(i) for i in range(len(tree))]
        for k, v in zip(names, tree):
            _flatten(v, f"{prefix}/{k}" if prefix else str(k), out)
    elif tree is None:
        pass
    elif isinstance(tree, (int, float, bool)):
        out[prefix] = torch.tensor(tree)
    else:
        raise TypeError(f"state leaf at '{prefix}' has unsupported type {type(tree).__name__}")


def state_dict(state: State) -> dict:
    """Flatten a state tree to ``{"path/to/leaf": tensor}`` (torch.save-able, weights_only safe).

    >>> from lmo.steepest_descent import signum
    >>> opt = signum(0.1)
    >>> sorted(state_dict(opt.init({"w": torch.zeros(2)})))
    ['momentum/w', 'step']
    """
    out: dict = {}
    _flatten(state, "", out)
    return {k: v.detach().clone() for k, v in out.items()}


def load_state_dict(template: State, flat: Mapping[str, torch.Tensor], prefix: str = "") -> State:
    """Rebuild a state with the structure of ``template`` (e.g. ``opt.init(params)``) from :func:`state_dict`.

    >>> from lmo.steepest_descent import signum
    >>> opt, params = signum(0.1), {"w": torch.zeros(2)}
    >>> _, state = opt.update({"w": torch.tensor([1.0, -1.0])}, opt.init(params), params)
    >>> back = load_state_dict(opt.init(params), state_dict(state))
    >>> back.step, back.momentum["w"]
    (tensor(1), tensor([ 0.1000, -0.1000]))
    """
    if isinstance(template, torch.Tensor):
        if prefix not in flat:
            raise KeyError(f"state_dict: missing entry '{prefix}'")
        v = flat[prefix]
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"state_dict: entry '{prefix}' is a {type(v).__name__}, not a tensor")
        if v.shape != template.shape:
            raise ValueError(f"state_dict: entry '{prefix}' has shape {tuple(v.shape)}, this optimizer's "
                             f"state needs {tuple(template.shape)} (a state of other parameters or "
                             f"another optimizer?); nothing was loaded")
        return v.to(device=template.device, dtype=template.dtype).clone()
    if isinstance(template, Mapping):
        return {k: load_state_dict(v, flat, f"{prefix}/{k}" if prefix else str(k)) for k, v in template.items()}
    if isinstance(template, (tuple, list)):
        names = getattr(template, "_fields", None) or [str(i) for i in range(len(template))]
        parts = [load_state_dict(v, flat, f"{prefix}/{k}" if prefix else str(k)) for k, v in zip(names, template)]
        if hasattr(template, "_fields"):
            return type(template)(*parts)
        return type(template)(parts)
    if isinstance(template, bool):
        return bool(flat[prefix].item())
    if isinstance(template, int):
        return int(flat[prefix].item())
    if isinstance(template, float):
        return float(flat[prefix].item())
    return template


# ----------------------------------------------------------------------------- validation
def check_nonneg(x: float, name: str) -> None:
    """x must be a finite number >= 0 (eps, weight decay, ...); ValueError naming it.

    >>> check_nonneg(0.0, "eps")
    >>> check_nonneg(float("nan"), "eps")
    Traceback (most recent call last):
    ...
    ValueError: eps must be a finite number >= 0, got nan
    """
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")


def check_int(value, name: str, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer argument (bools refused) in [minimum, maximum]; ValueError naming it.

    >>> check_int(3, "steps", 1)
    3
    >>> check_int(True, "steps")
    Traceback (most recent call last):
    ...
    ValueError: steps must be an int >= 0, got True
    """
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or (maximum is not None and value > maximum)):
        span = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be an int {span}, got {value!r}")
    return value


def step_counter() -> torch.Tensor:
    """t = 0: every optimizer's step counter, an int64 scalar tensor (so it is saved with
    the state by :func:`state_dict`).

    >>> step_counter()
    tensor(0)
    """
    return torch.zeros((), dtype=torch.int64)


def decoupled_decay(d: torch.Tensor, eta, weight_decay: float, params: Params | None, key: str) -> torch.Tensor:
    """d - eta_t lambda x_t with x_t = params[key]: decoupled (AdamW-style) weight decay
    added to a displacement; ``d`` itself when lambda = 0 (params may then be None)
    (docs/design.md §3).

    >>> decoupled_decay(torch.tensor([1.0]), 0.5, 0.1, {"w": torch.tensor([2.0])}, "w")   # 1 - 0.5 * 0.1 * 2
    tensor([0.9000])
    """
    return d - (eta * weight_decay) * params[key] if weight_decay else d


def check_finite(grads: Params, name: str = "grads") -> None:
    """Refuse sparse and NaN / Inf gradients before any state changes, naming the offending
    entry (:func:`check_dense` first: a sparse tensor has no elementwise isfinite).

    >>> check_finite({"w": torch.tensor([1.0, float("inf")])})
    Traceback (most recent call last):
    ...
    FloatingPointError: grads['w'] contains NaN or Inf
    """
    check_dense(grads, name)
    for k, g in grads.items():
        if not torch.isfinite(g).all():
            raise FloatingPointError(f"{name}['{k}'] contains NaN or Inf")


def check_dense(grads: Params, name: str = "grads") -> None:
    """Refuse sparse gradients (an ``nn.Embedding(sparse=True)``), naming the entry: every
    lmo update is a dense tensor the size of its parameter.

    >>> check_dense({"w": torch.zeros(2)})
    >>> check_dense({"e": torch.zeros(2).to_sparse()})
    Traceback (most recent call last):
    ...
    ValueError: grads['e'] is a sparse tensor (torch.sparse_coo); lmo optimizers take dense gradients only: ...
    """
    for k, g in grads.items():
        if g.layout != torch.strided:
            raise ValueError(f"{name}['{k}'] is a sparse tensor ({g.layout}); lmo optimizers take dense gradients "
                             f"only: make that parameter's gradient dense (nn.Embedding(..., sparse=False)) or "
                             f"train it with torch.optim.SparseAdam")


def check_matrices(params: Mapping, name: str) -> None:
    """Refuse parameters that are not matrices (..., m, n), naming them (the Muon family's
    orthogonalization needs a matrix).

    >>> check_matrices({"w": torch.zeros(2, 2)}, "muon")          # a matrix: nothing to say
    >>> check_matrices({"b": torch.zeros(2)}, "muon")
    Traceback (most recent call last):
    ...
    ValueError: muon: params['b'] has shape (2,); this matrix optimizer needs (..., m, n) ...
    """
    for k, v in params.items():
        if v.ndim < 2:
            raise ValueError(f"{name}: params['{k}'] has shape {tuple(v.shape)}; this matrix optimizer "
                             "needs (..., m, n) (route vectors to AdamW, e.g. lmo.registry.build)")


def check_real(tree: Params, optimizer: str, name: str = "params") -> None:
    """Refuse complex entries for an optimizer defined on real parameters only, naming the
    entry (lmo.adamw takes them, as torch.optim.AdamW does: as pairs of reals).

    >>> check_real({"z": torch.zeros(1, dtype=torch.complex64)}, "muon")
    Traceback (most recent call last):
    ...
    ValueError: muon: params['z'] is complex (torch.complex64); muon is defined for real parameters only ...
    """
    for k, v in tree.items():
        if v.is_complex():
            raise ValueError(f"{optimizer}: {name}['{k}'] is complex ({v.dtype}); {optimizer} is defined for real "
                             f"parameters only (lmo.adamw takes complex ones as pairs of reals, as "
                             f"torch.optim.AdamW does)")


def check_floating(tree: Params, optimizer: str, name: str = "params") -> None:
    """Refuse integer and boolean entries, naming the entry: an update is a real (or complex)
    displacement, which an integer tensor cannot hold.

    >>> check_floating({"w": torch.zeros(2)}, "muon")
    >>> check_floating({"w": torch.zeros(2, dtype=torch.int64)}, "muon")
    Traceback (most recent call last):
    TypeError: muon: params['w'] is torch.int64; lmo optimizers take floating-point tensors (cast it, e.g. .float(), or leave it out of the optimizer)
    """
    for k, v in tree.items():
        if not (v.is_floating_point() or v.is_complex()):
            raise TypeError(f"{optimizer}: {name}['{k}'] is {v.dtype}; lmo optimizers take floating-point "
                            f"tensors (cast it, e.g. .float(), or leave it out of the optimizer)")


def check_same_shapes(grads: Params, params: Params | None, name: str = "grads") -> None:
    """Refuse a gradient whose shape is not its parameter's, naming the entry and both shapes.

    >>> check_same_shapes({"w": torch.zeros(4, 4)}, {"w": torch.zeros(4, 4)})
    >>> check_same_shapes({"w": torch.zeros(4, 3)}, {"w": torch.zeros(4, 4)})
    Traceback (most recent call last):
    ValueError: grads['w'] has shape (4, 3) but params['w'] has (4, 4); a gradient has its parameter's shape
    """
    if params is None:
        return
    for k, g in grads.items():
        if k in params and tuple(g.shape) != tuple(params[k].shape):
            raise ValueError(f"{name}['{k}'] has shape {tuple(g.shape)} but params['{k}'] has "
                             f"{tuple(params[k].shape)}; a gradient has its parameter's shape")


def check_step_lr(value, what: str = "lr") -> float:
    """eta_t as one step uses it: a finite number >= 0 (a schedule may reach 0, never below:
    a negative lr ascends the loss). FloatingPointError / ValueError naming ``what`` and
    the value, before the step changes anything; returns it as a float.

    >>> check_step_lr(torch.tensor(0.5))
    0.5
    >>> check_step_lr(-0.1)
    Traceback (most recent call last):
    ...
    ValueError: lr is -0.1 < 0; a negative lr ascends the loss
    """
    try:
        v = float(value)
    except (TypeError, ValueError, RuntimeError):
        v = None
    if v is None or isinstance(value, bool):
        raise TypeError(f"{what} is {value!r}; it must be one number")
    if not math.isfinite(v):
        raise FloatingPointError(f"{what} is {v}; it must be finite")
    if v < 0:
        raise ValueError(f"{what} is {v} < 0; a negative lr ascends the loss")
    return v


def check_same_keys(grads: Params, params: Params | None, name: str = "grads") -> None:
    """grads and params (when given) must have the same entries; KeyError naming the extra ones.

    >>> check_same_keys({"a": 1}, {"a": 2, "b": 3})
    Traceback (most recent call last):
    ...
    KeyError: "grads and params have different entries: ['b']"
    """
    if params is not None and set(grads) != set(params):
        extra = sorted(set(grads) ^ set(params))[:5]
        raise KeyError(f"{name} and params have different entries: {extra}")


def find_field(state: State, field_name: str):
    """Depth-first search of a state tree for a NamedTuple field (e.g. ``"momentum"``).

    Wrapper states are NamedTuples with a field ``inner``; this digs through them, and
    through partition states (dicts of states), returning the first match or ``None``.
    For a partition, the matches of all groups are merged into one dict.

    >>> from lmo.steepest_descent import signum
    >>> from lmo.delay import delayed
    >>> opt = delayed(signum(0.1), 1)
    >>> find_field(opt.init({"w": torch.zeros(2)}), "momentum")
    {'w': tensor([0., 0.])}
    """
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        if field_name in state._fields:
            return getattr(state, field_name)
        for part in state:
            found = find_field(part, field_name)
            if found is not None:
                return found
        return None
    if isinstance(state, Mapping):
        merged = {}
        for part in state.values():
            found = find_field(part, field_name)
            if isinstance(found, Mapping):
                merged.update(found)
            elif found is not None:
                return found
        return merged or None
    if isinstance(state, (tuple, list)):
        for part in state:
            found = find_field(part, field_name)
            if found is not None:
                return found
    return None

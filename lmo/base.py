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
    """A pure optimizer: ``init(params) -> state``, ``update(grads, state, params) -> (updates, state)``.

    ``virtual(params, state) -> y`` is the virtual iterate y_t of docs/design.md §4 for the
    wrappers that have one (sync optimizers: y_t = x_t). ``hyper`` records the
    constructor's hyperparameters (for logs and cache keys).
    """

    init: Callable[[Params], State]
    update: Callable[[Params, State, Params], "tuple[Updates, State]"]
    virtual: Callable[[Params, State], dict] | None = None
    name: str = "optimizer"
    hyper: dict = field(default_factory=dict)

    def virtual_iterate(self, params: Params, state: State) -> dict:
        """y_t; equal to x_t for an optimizer that applies its update at once."""
        if self.virtual is None:
            return dict(params)
        return self.virtual(params, state)


class EmptyState(NamedTuple):
    """State of a stateless transform."""


def apply_updates(params: Params, updates: Params) -> dict:
    """x_{t+1} = x_t + d_t, entry by entry; returns a new mapping (inputs untouched)."""
    missing = set(params) - set(updates)
    if missing:
        raise KeyError(f"updates: missing entries for params {sorted(missing)[:5]}")
    return {k: params[k] + updates[k].to(params[k].dtype) for k in params}


def tree_map(fn: Callable, *trees):
    """Map ``fn`` over the tensor leaves of equally-structured trees (dict, tuple, NamedTuple, list)."""
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
    """Flatten a state tree to ``{"path/to/leaf": tensor}`` (torch.save-able, weights_only safe)."""
    out: dict = {}
    _flatten(state, "", out)
    return {k: v.detach().clone() for k, v in out.items()}


def load_state_dict(template: State, flat: Mapping[str, torch.Tensor], prefix: str = "") -> State:
    """Rebuild a state with the structure of ``template`` (e.g. ``opt.init(params)``) from :func:`state_dict`."""
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
def check_lr(lr: ScalarOrSchedule, name: str = "lr") -> None:
    """lr must be a positive finite number or a callable schedule."""
    if callable(lr):
        return
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"{name} must be a positive finite number or a schedule, got {lr!r}")


def check_mu(mu: float, name: str = "mu") -> None:
    """mu (weight of the new gradient, docs/design.md §3) must lie in (0, 1]."""
    if not isinstance(mu, (int, float)) or not (0.0 < mu <= 1.0):
        raise ValueError(f"{name} must lie in (0, 1] (mu = 1 - momentum), got {mu!r}")


def check_beta(beta: float, name: str) -> None:
    """A momentum / EMA coefficient beta must lie in [0, 1)."""
    if not isinstance(beta, (int, float)) or not (0.0 <= beta < 1.0):
        raise ValueError(f"{name} must lie in [0, 1), got {beta!r}")


def check_nonneg(x: float, name: str) -> None:
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")


def check_int(value, name: str, minimum: int = 0, maximum: int | None = None) -> int:
    """An integer argument (bools refused) in [minimum, maximum]; ValueError naming it."""
    if (isinstance(value, bool) or not isinstance(value, int) or value < minimum
            or (maximum is not None and value > maximum)):
        span = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be an int {span}, got {value!r}")
    return value


def step_counter() -> torch.Tensor:
    """t = 0: every optimizer's step counter, an int64 scalar tensor (so it is saved with
    the state by :func:`state_dict`)."""
    return torch.zeros((), dtype=torch.int64)


def decoupled_decay(d: torch.Tensor, eta, weight_decay: float, params: Params | None, key: str) -> torch.Tensor:
    """d - eta_t lambda x_t with x_t = params[key]: decoupled (AdamW-style) weight decay
    added to a displacement; ``d`` itself when lambda = 0 (params may then be None)
    (docs/design.md §3)."""
    return d - (eta * weight_decay) * params[key] if weight_decay else d


def check_finite(grads: Params, name: str = "grads") -> None:
    """Refuse sparse and NaN / Inf gradients before any state changes, naming the offending
    entry (:func:`check_dense` first: a sparse tensor has no elementwise isfinite)."""
    check_dense(grads, name)
    for k, g in grads.items():
        if not torch.isfinite(g).all():
            raise FloatingPointError(f"{name}['{k}'] contains NaN or Inf")


def check_dense(grads: Params, name: str = "grads") -> None:
    """Refuse sparse gradients (an ``nn.Embedding(sparse=True)``), naming the entry: every
    lmo update is a dense tensor the size of its parameter."""
    for k, g in grads.items():
        if g.layout != torch.strided:
            raise ValueError(f"{name}['{k}'] is a sparse tensor ({g.layout}); lmo optimizers take dense gradients "
                             f"only: make that parameter's gradient dense (nn.Embedding(..., sparse=False)) or "
                             f"train it with torch.optim.SparseAdam")


def check_real(tree: Params, optimizer: str, name: str = "params") -> None:
    """Refuse complex entries for an optimizer defined on real parameters only, naming the
    entry (lmo.adamw takes them, as torch.optim.AdamW does: as pairs of reals)."""
    for k, v in tree.items():
        if v.is_complex():
            raise ValueError(f"{optimizer}: {name}['{k}'] is complex ({v.dtype}); {optimizer} is defined for real "
                             f"parameters only (lmo.adamw takes complex ones as pairs of reals, as "
                             f"torch.optim.AdamW does)")


def check_floating(tree: Params, optimizer: str, name: str = "params") -> None:
    """Refuse integer and boolean entries, naming the entry: an update is a real (or complex)
    displacement, which an integer tensor cannot hold."""
    for k, v in tree.items():
        if not (v.is_floating_point() or v.is_complex()):
            raise TypeError(f"{optimizer}: {name}['{k}'] is {v.dtype}; lmo optimizers take floating-point "
                            f"tensors (cast it, e.g. .float(), or leave it out of the optimizer)")


def check_same_shapes(grads: Params, params: Params | None, name: str = "grads") -> None:
    """Refuse a gradient whose shape is not its parameter's, naming the entry and both shapes."""
    if params is None:
        return
    for k, g in grads.items():
        if k in params and tuple(g.shape) != tuple(params[k].shape):
            raise ValueError(f"{name}['{k}'] has shape {tuple(g.shape)} but params['{k}'] has "
                             f"{tuple(params[k].shape)}; a gradient has its parameter's shape")


def check_step_lr(value, what: str = "lr") -> float:
    """eta_t as one step uses it: a finite number >= 0 (a schedule may reach 0, never below:
    a negative lr ascends the loss). FloatingPointError / ValueError naming ``what`` and
    the value, before the step changes anything; returns it as a float."""
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
    if params is not None and set(grads) != set(params):
        extra = sorted(set(grads) ^ set(params))[:5]
        raise KeyError(f"{name} and params have different entries: {extra}")


def resolve(value: ScalarOrSchedule, step: torch.Tensor):
    """A hyperparameter at step t: a constant, or ``schedule(t)``."""
    return value(step) if callable(value) else value


def resolve_lr(lr: ScalarOrSchedule, step: torch.Tensor):
    """eta_t: the constant ``lr``, or ``lr(t)`` for a schedule, which must return a finite
    number >= 0 (FloatingPointError / ValueError naming the step otherwise, before the
    update computes anything)."""
    if not callable(lr):
        return lr
    eta = lr(step)
    check_step_lr(eta, f"the lr schedule at step {int(step)}")
    return eta


def find_field(state: State, field_name: str):
    """Depth-first search of a state tree for a NamedTuple field (e.g. ``"momentum"``).

    Wrapper states are NamedTuples with a field ``inner``; this digs through them, and
    through partition states (dicts of states), returning the first match or ``None``.
    For a partition, the matches of all groups are merged into one dict.
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


def betas_with_mu(betas, mu: float | None = None) -> tuple:
    """Validated (beta_1, beta_2, ...) as floats; ``mu`` (if given) overrides beta_1 = 1 - mu.

    This is how every Adam-family constructor exposes docs/design.md's mu (one number for a
    gap-vs-momentum sweep): each beta must lie in [0, 1), mu in (0, 1].
    """
    betas = tuple(float(b) for b in betas)
    if mu is not None:
        check_mu(mu)
        betas = (1.0 - mu,) + betas[1:]
    for i, b in enumerate(betas):
        check_beta(b, f"betas[{i}]")
    return betas


def check_update_inputs(grads: Params, params: Params | None, state_entries: Mapping,
                        weight_decay: float = 0.0) -> None:
    """The checks every ``update`` runs before computing anything (so a refusal changes
    nothing): same entries as params and as the state, finite gradients, params present
    when weight decay needs them."""
    check_same_keys(grads, params)
    check_same_keys(grads, state_entries, "grads and optimizer state")
    check_same_shapes(grads, params)
    check_finite(grads)
    if weight_decay and params is None:
        raise ValueError("params is required when weight_decay != 0")

"""Combinators (optax's combine module): ``chain`` composes steps, ``partition`` routes
parameters to different optimizers by rule (optax.multi_transform style).

Every step is one type, :class:`lmo.base.Optimizer`, whose ``update`` maps incoming values
(gradients, or the output of the previous step) to outgoing ones, and :func:`chain` is the
one composer, in two state layouts:

- ``chain(a, b)`` feeds a's output into b, each part keeping its own state:
  ``chain(clip_by_global_norm(1.0), adamw(1e-3))`` (clipping in :mod:`lmo.clipping`) clips
  the gradient and then takes an AdamW step; state ``ChainState((s_a, s_b))``.
- ``chain(*transforms, name=, lr=, state=S)`` makes a *named optimizer* of transforms (parts
  with ``fields``, lmo.transforms), the optax ``adamw = chain(scale_by_adam, decay)`` way:
  it runs the input checks once, resolves eta_t once (a :class:`lmo.base.StepInfo` every
  part reads), counts the steps, and lays every part's entries flat into
  ``S(counter, *entries)``, so the state_dict keys are the optimizer's own field names.

Standard Muon practice: hidden-layer matrices go to Muon, everything else (embeddings,
the output head, norm gains, biases, any vector) to AdamW. :func:`muon_labels` encodes
that rule by name and shape; ``partition(rules, muon_labels)`` applies it.
"""
from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

import torch

from lmo.base import (Optimizer, ScalarOrSchedule, StepInfo, check_finite, check_floating, check_real,
                      check_same_keys, check_same_shapes, step_counter)
from lmo.hyperparameters import resolve_lr


class ChainState(NamedTuple):
    """The states of the chained steps, in order (field ``inner``: a tuple)."""

    inner: tuple


def as_real(tree):
    """Complex entries as their real views (shape (..., 2): real and imaginary parts), the
    others as they are: how torch.optim.AdamW treats a complex parameter (a pair of reals).

    >>> as_real({"z": torch.tensor([1 + 2j])})["z"]
    tensor([[1., 2.]])
    """
    if tree is None:
        return None
    return {k: torch.view_as_real(v) if v.is_complex() else v for k, v in tree.items()}


def as_complex(updates, like):
    """The inverse of :func:`as_real` for the entries that are complex in ``like``.

    >>> as_complex({"z": torch.tensor([[1.0, 2.0]])}, {"z": torch.zeros(1, dtype=torch.complex64)})["z"]
    tensor([1.+2.j])
    """
    return {k: torch.view_as_complex(u.contiguous()) if like[k].is_complex() else u for k, u in updates.items()}


def chain(*parts: Optimizer | None, name: str | None = None, lr: ScalarOrSchedule | None = None,
          state: type | None = None, hyper: dict | None = None, complex_as_real: bool = False) -> Optimizer:
    """u^{(0)} = grads, u^{(i)} = T_i(u^{(i-1)}); the last one is the update (module
    docstring). ``None`` parts are skipped (an optional decay).

    Without ``state``: the state is ``ChainState(tuple of the parts' states)``, the virtual
    iterate the last part's. With ``state`` (a NamedTuple type whose fields are a counter
    then every part's ``fields``, in order): the named optimizer ``name``, its eta_t from
    ``lr`` (a number or a schedule of the counter; None: no lr), resolved once per update.
    Complex parameters are then refused (naming the entry) unless ``complex_as_real``: then
    they are treated as pairs of reals (:func:`as_real`; their state entries are real,
    shape (..., 2)), as torch.optim.AdamW does.

    >>> from lmo.clipping import clip_by_global_norm
    >>> from lmo.transforms import scale_by_learning_rate
    >>> class SGDState(NamedTuple):
    ...     step: torch.Tensor
    >>> sgd = chain(scale_by_learning_rate(), name="sgd", lr=0.5, state=SGDState)
    >>> sgd.update({"w": torch.tensor([2.0])}, sgd.init({"w": torch.zeros(1)}))[0]
    {'w': tensor([-1.])}
    >>> clipped = chain(clip_by_global_norm(1.0), sgd)
    >>> clipped.update({"w": torch.tensor([4.0])}, clipped.init({"w": torch.zeros(1)}))[0]
    {'w': tensor([-0.5000])}
    """
    parts = tuple(p for p in parts if p is not None)
    if not parts:
        raise ValueError("transforms: chain needs at least one transform")
    named = state is not None
    if named and any(p.fields is None for p in parts):
        raise TypeError(f"chain(state=...): every part must be a transform (declare fields), got "
                        f"{[p.name for p in parts if p.fields is None]}")
    needs_params = any(p.needs_params for p in parts)

    def split(st):
        """The parts' states and the counter of the chain's state ``st``."""
        if not named:
            return st.inner, None
        out, i = [], 1
        for p in parts:
            out.append(tuple(st[i:i + len(p.fields)]))
            i += len(p.fields)
        return out, st[0]

    def join(part_states, count):
        if not named:
            return ChainState(tuple(part_states))
        return state(count, *(e for entries in part_states for e in entries))

    def init(params):
        if named:
            params = as_real(params) if complex_as_real else params
            check_real(params, name)
            check_floating(params, name)
            for p in parts:
                if p.check_params is not None:
                    p.check_params(params, "params")
        return join([p.init(params) for p in parts], step_counter() if named else None)

    def update(grads, st, params=None):
        part_states, count = split(st)
        given, info = grads, None
        if named:
            check_same_keys(grads, params)
            entries = next((e for e in st[1:] if isinstance(e, Mapping)), None)
            if entries is not None:     # a chain of stateless transforms has no entries to compare
                check_same_keys(grads, entries, "grads and optimizer state")
            check_same_shapes(grads, params)
            check_floating(grads, name, "grads")
            check_finite(grads)
            if complex_as_real:
                grads, params = as_real(grads), as_real(params)
            check_real(grads, name, "grads")
            for p in parts:
                if p.check_grads is not None:
                    p.check_grads(grads, "grads")
            if needs_params and params is None:
                raise ValueError("params is required when weight_decay != 0")
            info = StepInfo(count, None if lr is None else resolve_lr(lr, count), grads)
        u, new = grads, []
        for p, s in zip(parts, part_states):
            u, s = p.update(u, s, params, info) if named else p.update(u, s, params)
            new.append(s)
        if complex_as_real:
            u = as_complex(u, given)
        return u, join(new, None if count is None else count + 1)

    def virtual(params, st):
        return parts[-1].virtual_iterate(params, split(st)[0][-1])

    return Optimizer(init, update, virtual=virtual if parts[-1].virtual is not None else None,
                     name=name or "chain(" + ", ".join(p.name for p in parts) + ")",
                     hyper=hyper if hyper is not None else {p.name: p.hyper for p in parts})


#: substrings of a parameter name that mark an embedding / output head
EMBED_HEAD_MARKERS = ("emb", "wte", "wpe", "lm_head", "head", "output", "classifier", "logits")


class PartitionState(NamedTuple):
    """One state per label (field ``inner``: dict label -> state)."""

    inner: dict


def muon_labels(params: Mapping) -> dict:
    """name -> "matrix" for 2-D hidden weights, "other" for embeddings / head / norms / vectors.

    Leading batch dims are not supported here (a 3-D tensor counts as a matrix stack:
    "matrix"); names containing any of EMBED_HEAD_MARKERS or "norm" are "other".

    >>> muon_labels({"wte.weight": torch.zeros(8, 4), "h.0.w": torch.zeros(4, 4), "h.0.norm.weight": torch.zeros(4)})
    {'wte.weight': 'other', 'h.0.w': 'matrix', 'h.0.norm.weight': 'other'}
    """
    out = {}
    for k, v in params.items():
        low = k.lower()
        special = any(m in low for m in EMBED_HEAD_MARKERS) or "norm" in low
        out[k] = "matrix" if v.ndim >= 2 and not special else "other"
    return out


def partition(rules: Mapping[str, Optimizer], label_fn: Callable[[Mapping], Mapping] | Mapping) -> Optimizer:
    """Each parameter gets the optimizer ``rules[label]`` with label = label_fn(params)[name].

    ``label_fn`` is a function params -> {name: label} or a fixed mapping. The update is
    the union of the per-group updates; the virtual iterate is the union of the groups'.

    >>> from lmo.steepest_descent import signum
    >>> opt = partition({"matrix": signum(0.1), "other": signum(0.01)}, muon_labels)
    >>> params = {"h.w": torch.zeros(2, 2), "h.b": torch.zeros(2)}
    >>> updates, _ = opt.update({k: torch.ones_like(v) for k, v in params.items()}, opt.init(params), params)
    >>> updates["h.w"][0], updates["h.b"]
    (tensor([-0.1000, -0.1000]), tensor([-0.0100, -0.0100]))
    """
    rules = dict(rules)
    if not rules:
        raise ValueError("rules: partition needs at least one optimizer")

    def labels_of(params):
        labels = dict(label_fn(params)) if callable(label_fn) else dict(label_fn)
        missing = [k for k in params if k not in labels]
        if missing:
            raise KeyError(f"label_fn: no label for params {missing[:5]}")
        unknown = sorted({lab for k, lab in labels.items() if k in params and lab not in rules})
        if unknown:
            raise KeyError(f"label_fn: labels {unknown} have no optimizer in rules {sorted(rules)}")
        return labels

    def split(tree, labels, lab):
        return {k: v for k, v in tree.items() if labels[k] == lab}

    def init(params):
        labels = labels_of(params)
        return PartitionState({lab: opt.init(split(params, labels, lab)) for lab, opt in rules.items()})

    def update(grads, state, params=None):
        check_same_keys(grads, params)
        check_finite(grads)     # every group's gradients, before any group computes its update
        labels = labels_of(params if params is not None else grads)
        out, new = {}, {}
        for lab, opt in rules.items():
            u, new[lab] = opt.update(split(grads, labels, lab), state.inner[lab],
                                     None if params is None else split(params, labels, lab))
            out.update(u)
        return out, PartitionState(new)

    def virtual(params, state):
        labels = labels_of(params)
        y = {}
        for lab, opt in rules.items():
            y.update(opt.virtual_iterate(split(params, labels, lab), state.inner[lab]))
        return y

    has_virtual = any(o.virtual is not None for o in rules.values())
    return Optimizer(init, update, virtual=virtual if has_virtual else None,
                     name="partition(" + ", ".join(f"{k}={o.name}" for k, o in rules.items()) + ")",
                     hyper={k: o.hyper for k, o in rules.items()})

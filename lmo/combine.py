"""Combinators (optax's combine module): ``chain`` composes transforms, ``partition`` routes
parameters to different optimizers by rule (optax.multi_transform style).

A *transform* is an :class:`lmo.base.Optimizer` whose ``update`` maps incoming values
(gradients, or the output of the previous transform) to outgoing ones. ``chain(a, b)``
feeds a's output into b: ``chain(clip_by_global_norm(1.0), adamw(1e-3))`` (clipping in
:mod:`lmo.clipping`) clips the gradient and then takes an AdamW step.

Standard Muon practice: hidden-layer matrices go to Muon, everything else (embeddings,
the output head, norm gains, biases, any vector) to AdamW. :func:`muon_labels` encodes
that rule by name and shape; ``partition(rules, muon_labels)`` applies it.
"""
from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

from lmo.base import Optimizer, check_finite, check_same_keys


class ChainState(NamedTuple):
    """The states of the chained transforms, in order (field ``inner``: a tuple)."""

    inner: tuple


def chain(*transforms: Optimizer) -> Optimizer:
    """u^{(0)} = grads, u^{(i)} = T_i(u^{(i-1)}); the last one is the update."""
    if not transforms:
        raise ValueError("transforms: chain needs at least one transform")

    def init(params):
        return ChainState(tuple(t.init(params) for t in transforms))

    def update(grads, state, params=None):
        new_states = []
        u = grads
        for t, s in zip(transforms, state.inner):
            u, s = t.update(u, s, params)
            new_states.append(s)
        return u, ChainState(tuple(new_states))

    last_virtual = transforms[-1].virtual

    def virtual(params, state):
        return transforms[-1].virtual_iterate(params, state.inner[-1])

    return Optimizer(init, update, virtual=virtual if last_virtual else None,
                     name="chain(" + ", ".join(t.name for t in transforms) + ")",
                     hyper={t.name: t.hyper for t in transforms})


#: substrings of a parameter name that mark an embedding / output head
EMBED_HEAD_MARKERS = ("emb", "wte", "wpe", "lm_head", "head", "output", "classifier", "logits")


class PartitionState(NamedTuple):
    """One state per label (field ``inner``: dict label -> state)."""

    inner: dict


def muon_labels(params: Mapping) -> dict:
    """name -> "matrix" for 2-D hidden weights, "other" for embeddings / head / norms / vectors.

    Leading batch dims are not supported here (a 3-D tensor counts as a matrix stack:
    "matrix"); names containing any of EMBED_HEAD_MARKERS or "norm" are "other".
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

"""Every optimizer of the package by name, read from its record (lmo.presets.PRESETS), and
``build`` for a whole model.

``build`` applies the standard Muon practice for the matrix optimizers (a record with
``matrix_only``: muon, normuon, adamuon): hidden 2-D weights go to the named optimizer,
everything else (embeddings, head, norms, vectors: lmo.combine.muon_labels) to AdamW with
AdamW's own lr. ``scion`` (lmo.layer_geometry) takes every parameter itself: Muon's hidden
group plus LMOs of their own norms for the embedding, the head and the vectors.

The name lists here are views of the records, read when asked: a record added to
``PRESETS`` is listed, built, and offered by ``python -m gpu_runs.train --optimizer`` with
no other edit (docs/interfaces.md, "How to add an optimizer").

>>> sorted(OPTIMIZERS)[:3], "muon" in MATRIX_OPTIMIZERS, "adamw" in NS_OPTIMIZERS
(['adamuon', 'adamw', 'adan'], True, False)
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Callable

from lmo.adam_family import adamw
from lmo.base import Optimizer
from lmo.hyperparameters import check_beta, resolve
from lmo.combine import muon_labels, partition
from lmo.presets import DECOUPLED_DECAY, PRESETS, Preset, peak_lr


class UnknownOptimizer(KeyError, ValueError):
    """An optimizer name that is not registered; the message lists the valid ones. A
    KeyError (as a mapping lookup) and a ValueError (a bad argument), printed without quotes.

    >>> str(UnknownOptimizer("unknown optimizer 'x'"))
    "unknown optimizer 'x'"
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _unknown(name) -> UnknownOptimizer:
    return UnknownOptimizer(f"unknown optimizer {name!r}; valid names: {', '.join(sorted(PRESETS))}")


class Registry(Mapping):
    """name -> constructor (``PRESETS[name].build``), every optimizer of the package; a missing
    name raises :class:`UnknownOptimizer` listing the valid ones.

    >>> OPTIMIZERS["adamw"].__name__, len(OPTIMIZERS) == len(PRESETS)
    ('adamw', True)
    """

    def __getitem__(self, name) -> Callable[..., Optimizer]:
        if not isinstance(name, str) or name not in PRESETS:
            raise _unknown(name)
        return PRESETS[name].build

    def __iter__(self):
        return iter(PRESETS)

    def __len__(self):
        return len(PRESETS)

    def __repr__(self):
        return f"Registry({sorted(PRESETS)})"


class Names(Sequence):
    """The names whose record satisfies ``keep(record)``, in registration order (a tuple-like
    view, read when asked).

    >>> tuple(Names(lambda p: p.lr >= 0.02))
    ('muon', 'normalized_sgd', 'scion')
    """

    def __init__(self, keep: Callable[[Preset], bool]):
        self.keep = keep

    def _names(self) -> tuple:
        return tuple(n for n, p in PRESETS.items() if self.keep(p))

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self):
        return len(self._names())

    def __contains__(self, name):
        return name in self._names()

    def __repr__(self):
        return repr(self._names())


#: name -> constructor, every optimizer of the package
OPTIMIZERS: Mapping[str, Callable[..., Optimizer]] = Registry()
#: optimizers that only take matrices; build() routes the rest to AdamW
MATRIX_OPTIMIZERS = Names(lambda p: p.matrix_only)
#: optimizers that run Newton-Schulz (those whose constructor has an ``ns_dtype`` option): for
#: every other one the NS dtype cannot change a number
NS_OPTIMIZERS = Names(lambda p: "ns_dtype" in inspect.signature(p.build).parameters)


def check_name(name) -> str:
    """``name`` if it is a registered optimizer, else :class:`UnknownOptimizer` listing them.

    >>> check_name("muon")
    'muon'
    """
    if not isinstance(name, str) or name not in PRESETS:
        raise _unknown(name)
    return name


def geometries(name: str, params: Mapping) -> dict:
    """param name -> the Geometry the optimizer ``name``'s steps are measured in (its record's
    ``geometry``, per lmo.combine.muon_labels group): the spectral norm on a matrix
    optimizer's hidden matrices, l_2 for normalized_sgd, the sign geometry (l_inf) otherwise.
    An unknown name is refused (:class:`UnknownOptimizer`), never given a fallback.

    >>> import torch
    >>> geo = geometries("muon", {"h.w": torch.zeros(4, 4), "h.b": torch.zeros(4)})
    >>> geo["h.w"].name, geo["h.b"].name
    ('spectral', 'sign')
    """
    geometry = PRESETS[check_name(name)].geometry
    labels = muon_labels(params)
    return {k: geometry[labels[k]]() for k in params}


def default_lr(name: str) -> float:
    """``lmo.presets.DEFAULT_LR[name]`` (``lmo.presets.peak_lr`` with no lr given).

    >>> default_lr("muon")
    0.02
    """
    return peak_lr(name)


def lr_of(opt: Optimizer):
    """The lr the named optimizer of ``opt`` received (a number or a schedule value such as
    ``lmo.schedules.WarmupCosine``), read from its recorded hyperparameters: the first ``lr``
    of ``opt.hyper`` depth-first, through wrappers (``inner``), chains (clip, then the
    optimizer) and :func:`build`'s partition (``matrix`` before ``other``). KeyError when none.

    >>> import torch
    >>> lr_of(build("muon", {"h.w": torch.zeros(4, 4), "h.b": torch.zeros(4)}, lr=0.01))
    0.01
    """
    found = _first_lr(opt.hyper)
    if found is _NONE:
        raise KeyError(f"lr_of: optimizer {opt.name!r} records no lr in its hyperparameters")
    return found


_NONE = object()


def _first_lr(hyper):
    if not isinstance(hyper, Mapping):
        return _NONE
    if "lr" in hyper:
        return hyper["lr"]
    for v in hyper.values():
        if (found := _first_lr(v)) is not _NONE:
            return found
    return _NONE


def lr_at(opt: Optimizer, step) -> float:
    """eta_t of ``opt`` at step t: :func:`lr_of` evaluated at t (a number: itself), the value the
    optimizer's own update resolves from its step counter (``lmo.hyperparameters.resolve_lr``).

    >>> from lmo.schedules import WarmupCosine
    >>> opt = make("adamw", WarmupCosine(1e-3, 100))
    >>> lr_at(opt, 9), lr_at(opt, 100)
    (0.001, 0.0001)
    """
    return float(resolve(lr_of(opt), step))


def make(name: str, lr=None, momentum: float | None = None, **kw) -> Optimizer:
    """One optimizer by name; ``momentum`` (beta) overrides its primary momentum via ``mu = 1 - beta``.

    >>> make("lion", 1e-4, momentum=0.8).hyper["betas"]
    (0.8, 0.99)
    """
    ctor = OPTIMIZERS[check_name(name)]
    if momentum is not None:
        check_beta(momentum, "momentum")
        kw["mu"] = 1.0 - momentum
    return ctor(peak_lr(name) if lr is None else lr, **kw)


def build(name: str, params: Mapping, lr=None, momentum: float | None = None,
          weight_decay: float = 0.1, *, schedule: Callable | None = None, adamw_lr: float | None = None,
          adamw_betas=(0.9, 0.95), **kw) -> Optimizer:
    """The optimizer for a whole model.

    ``lr``: the peak lr, a number (None -> ``lmo.presets.peak_lr(name)``), or a schedule value
    with a peak (``lmo.schedules.WarmupCosine``: anything with ``peak`` and ``with_peak``): the
    named optimizer receives it as its lr and evaluates it at its own step counter; every other
    group gets the same shape from its own peak (``lr.with_peak(adamw_lr)``). ``schedule``: the
    older form, a function peak -> (step -> lr) applied to every group's peak. A plain callable
    ``lr`` is refused (TypeError), since it would reach the named optimizer's group only and
    leave the AdamW group of a matrix optimizer at a constant lr. For matrix optimizers the
    non-matrix group is AdamW at ``adamw_lr`` (default ``lmo.presets.peak_lr("adamw")``) with
    ``adamw_betas`` and the same weight decay.

    ``weight_decay`` is decoupled for every optimizer, ``d_t - eta_t lambda x_t``: an
    optimizer whose constructor defaults to coupled L2 (NAdam, as torch.optim.NAdam) gets
    ``lmo.presets.DECOUPLED_DECAY[name]`` unless ``kw`` says otherwise.

    >>> import torch
    >>> build("muon", {"h.w": torch.zeros(4, 4), "h.b": torch.zeros(4)}).name
    'partition(matrix=muon, other=adamw)'
    >>> build("adamw", {"h.b": torch.zeros(4)}).hyper["weight_decay"]
    0.1
    """
    check_name(name)
    shaped = hasattr(lr, "with_peak") and hasattr(lr, "peak")
    if callable(lr) and not shaped:
        raise TypeError(
            f"build: lr must be a number (the peak lr) or a schedule value with a peak "
            f"(lmo.schedules.WarmupCosine), got the callable {lr!r}; or pass the "
            f"schedule as schedule=lambda peak: warmup_cosine(peak, T) so that every parameter "
            f"group (the AdamW group of {', '.join(MATRIX_OPTIMIZERS)} included) follows it")
    if schedule is not None and not callable(schedule):
        raise TypeError(f"build: schedule must be a function peak -> (step -> lr), got {schedule!r}")
    if shaped and schedule is not None:
        raise TypeError("build: lr is already a schedule value; give it or schedule=, not both")
    kw = {**DECOUPLED_DECAY.get(name, {}), **kw}
    if shaped:      # the value itself is the named optimizer's lr; the other groups take its shape
        own, sched = lr, lr.with_peak
    else:
        sched = schedule or (lambda p: p)
        own = sched(peak_lr(name) if lr is None else lr)
    if name not in MATRIX_OPTIMIZERS:
        return make(name, own, momentum, weight_decay=weight_decay, **kw)
    labels = muon_labels(params)
    rules = {"matrix": make(name, own, momentum, weight_decay=weight_decay, **kw)}
    if any(v == "other" for v in labels.values()):
        a_lr = peak_lr("adamw") if adamw_lr is None else adamw_lr
        rules["other"] = adamw(sched(a_lr), betas=adamw_betas, weight_decay=weight_decay)
    return partition(rules, labels)

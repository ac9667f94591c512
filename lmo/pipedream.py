"""The stale-point model of the original PipeDream (weight stashing), for any training loop.

With P stages, the parameter block of stage s has delay tau_s = P - 1 - s (the first
stage the stalest): at step t the gradient is evaluated at the *mixed* point z_t whose
block k is x^k_{t - tau_k} (x_{<0} = x_0), and the update is applied at once::

    z_t^k = x^k_{t - tau_k},     g_t = g(z_t; xi_t),     x_{t+1} = x_t + u_t(g_t)

The history is a pure state (:class:`StaleHistory`, a NamedTuple of tensors, like an
optimizer's state); usage in a loop::

    delays = pipedream_delays(stage_of, P)
    hist = history_init(delays)
    for t in range(T):
        z = mixed_point(hist, x)         # block k from x_{t - tau_k}
        g = grad(z)
        d, state = opt.update(g, state, x)
        hist = history_push(hist, x, delays)   # remember x_t
        x = apply_updates(x, d)

:class:`ParamHistory` is the same as a mutable object (its older interface), and
``history_state_dict`` / ``history_load`` give its checkpoint layout {"k/i": x}.

Relation to the update-delay model (lmo.delay.delayed): for a uniform delay tau = 1 the
two coincide after the index alignment x^{delayed}_{t+1} = x^{stale}_t (the delayed model
spends one step filling), provided the inner optimizer's weight decay is off (the
update-delay model decays x^{delayed}_t = x^{stale}_{t-1}, the stale model decays x_t).
For non-uniform delays they differ: the stale-point model mixes iterates of different
ages inside one gradient, the update-delay model never does.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import torch

from lmo.base import check_int


def pipedream_delays(stage_of: Mapping[str, int], num_stages: int) -> dict:
    """tau_k = P - 1 - stage_of[k] for every parameter k (stage 0 is the stalest).

    >>> pipedream_delays({"emb": 0, "h.0": 1, "head": 2}, 3)
    {'emb': 2, 'h.0': 1, 'head': 0}
    """
    check_int(num_stages, "num_stages", 1)
    out = {}
    for k, s in stage_of.items():
        check_int(s, f"stage_of['{k}']", 0, num_stages - 1)
        out[k] = num_stages - 1 - s
    return out


def contiguous_stages(names: Sequence[str], num_stages: int) -> dict:
    """Split an ordered list of parameter names into P contiguous, nearly equal stages.

    >>> contiguous_stages(["emb", "h.0", "h.1", "head"], 2)
    {'emb': 0, 'h.0': 0, 'h.1': 1, 'head': 1}
    """
    names = list(names)
    check_int(num_stages, "num_stages", 1, len(names))
    return {k: (i * num_stages) // len(names) for i, k in enumerate(names)}


class StaleHistory(NamedTuple):
    """past[k] = (x^k_{t-tau_k}, ..., x^k_{t-1}) after t pushes: at most tau_k iterates of
    block k, oldest first (fewer while t < tau_k; an empty tuple for tau_k = 0)."""

    past: dict


def _check_delays(delays: Mapping[str, int]) -> None:
    for k, tau in delays.items():
        check_int(tau, f"delays['{k}']")


def _check_blocks(blocks, params) -> None:
    missing = set(blocks) - set(params)
    if missing:
        raise KeyError(f"params: missing blocks {sorted(missing)[:5]} of the delay map")


def history_init(delays: Mapping[str, int]) -> StaleHistory:
    """The empty history (t = 0) of the blocks of ``delays`` (name -> tau_k).

    >>> history_init({"a": 2, "b": 0})
    StaleHistory(past={'a': (), 'b': ()})
    """
    _check_delays(delays)
    return StaleHistory({k: () for k in delays})


def history_push(hist: StaleHistory, params: Mapping[str, torch.Tensor],
                 delays: Mapping[str, int]) -> StaleHistory:
    """The history after recording x_t = ``params`` (once per step, after the gradient at
    step t was taken): past[k] <- (past[k] + (x^k_t,))[-tau_k:]. Inputs are not mutated.

    >>> hist = history_push(history_init({"a": 1}), {"a": torch.tensor([1.0])}, {"a": 1})
    >>> history_push(hist, {"a": torch.tensor([2.0])}, {"a": 1})          # keeps tau_a = 1 iterate
    StaleHistory(past={'a': (tensor([2.]),)})
    """
    _check_blocks(delays, params)
    return StaleHistory({k: ((hist.past[k] + (params[k].detach().clone(),))[-tau:] if tau else ())
                         for k, tau in delays.items()})


def mixed_point(hist: StaleHistory, params: Mapping[str, torch.Tensor]) -> dict:
    """z^k = x^k_{t - tau_k} for the current iterate x_t = ``params`` (x_{<0} = x_0): the
    oldest recorded iterate of block k, or x^k_t itself when none is recorded (tau_k = 0).

    >>> delays = {"a": 1, "b": 0}
    >>> hist = history_push(history_init(delays), {"a": torch.tensor([1.0]), "b": torch.tensor([1.0])}, delays)
    >>> mixed_point(hist, {"a": torch.tensor([2.0]), "b": torch.tensor([2.0])})     # a from x_{t-1}, b from x_t
    {'a': tensor([1.]), 'b': tensor([2.])}
    """
    _check_blocks(hist.past, params)
    out = {}
    for k, v in params.items():
        h = hist.past.get(k, ())
        out[k] = h[0] if h else v
    return out


def history_state_dict(hist: StaleHistory) -> dict:
    """{"k/i": tensor} (i = 0 oldest): the trainer's checkpoint entry ``history``.

    >>> hist = history_push(history_init({"a": 2}), {"a": torch.tensor([1.0])}, {"a": 2})
    >>> history_state_dict(hist)
    {'a/0': tensor([1.])}
    """
    return {f"{k}/{i}": x.clone() for k, h in hist.past.items() for i, x in enumerate(h)}


def history_load(flat: Mapping[str, torch.Tensor], delays: Mapping[str, int]) -> StaleHistory:
    """The inverse of :func:`history_state_dict`, checked against ``delays``.

    >>> history_load({"a/0": torch.tensor([1.0])}, {"a": 2})
    StaleHistory(past={'a': (tensor([1.]),)})
    """
    _check_delays(delays)
    past = {k: [] for k in delays}
    for key in sorted(flat, key=lambda s: (s.rsplit("/", 1)[0], int(s.rsplit("/", 1)[1]))):
        k, _ = key.rsplit("/", 1)
        if k not in past:
            raise KeyError(f"state_dict: block '{k}' is not in the delay map")
        past[k].append(flat[key].clone())
    for k, h in past.items():
        if len(h) > delays[k]:
            raise ValueError(f"state_dict: {len(h)} entries for '{k}' but its delay is {delays[k]}")
    return StaleHistory({k: tuple(h) for k, h in past.items()})


class ParamHistory:
    """A mutable holder of a :class:`StaleHistory` (the older interface; the functions above
    are the pure one).

    >>> h = ParamHistory({"a": 1})
    >>> h.push({"a": torch.tensor([1.0])})
    >>> h.mixed_point({"a": torch.tensor([2.0])})
    {'a': tensor([1.])}
    """

    def __init__(self, delays: Mapping[str, int]):
        self.state = history_init(delays)
        self.delays = dict(delays)

    @property
    def history(self) -> dict:
        """name -> tuple of recorded iterates, oldest first."""
        return self.state.past

    def push(self, params: Mapping[str, torch.Tensor]) -> None:
        """Record x_t (call once per step, after the gradient at step t was taken)."""
        self.state = history_push(self.state, params, self.delays)

    def mixed_point(self, params: Mapping[str, torch.Tensor]) -> dict:
        """z^k = x^k_{t - tau_k} for the current iterate x_t = ``params`` (x_{<0} = x_0)."""
        return mixed_point(self.state, params)

    def state_dict(self) -> dict:
        """{"k/i": tensor} (i = 0 oldest); restore with :meth:`load_state_dict`."""
        return history_state_dict(self.state)

    def load_state_dict(self, flat: Mapping[str, torch.Tensor]) -> None:
        self.state = history_load(flat, self.delays)

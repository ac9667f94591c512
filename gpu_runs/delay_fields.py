"""The delay's flat spelling in a run spec: the keys a run's JSON and both command lines
give it, and the one place they become the run's stored ``lmo.variants.Delay`` and back.

``TrainConfig.delay`` holds the delay as one value (built once, where a spec is parsed or
read back). Its JSON (config.json, the checkpoints' configuration, the kept records and
their keys) and the options of ``python -m gpu_runs.train`` and ``python -m gpu_runs.pipeline``
spell it as the flat fields of :class:`DelayFields`, as they did before the value existed::

    read back   TrainConfig(**{"mode": "2bw", "ef": True, ...})  ->  delay_of(flat, stages)
    written     TrainConfig.as_dict()                          ->  flat_of(delay)

so every earlier run keeps its keys and values. The rules (the kinds, the ranges, what needs
the one-step delay) are ``Delay``'s alone; nothing here re-checks them.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Mapping

from lmo.variants import EF, PIPEDREAM, TWO_BW, Delay


class _Unset:
    """The value of a flat key that was not given (``TrainConfig``'s constructor-only fields).
    Loud when read as a value: the delay is ``TrainConfig.delay``, not these keys."""

    def _refuse(self, *_):
        raise TypeError("a TrainConfig's flat delay keys (mode, ef, ...) are constructor arguments only: "
                        "ask TrainConfig.delay (kind, tau, one_step, stale_point, label, config_fields)")

    __eq__ = __ne__ = __bool__ = __str__ = __format__ = _refuse
    __hash__ = object.__hash__

    def __repr__(self):
        return "<unset>"


#: a flat key not given
UNSET = _Unset()


@dataclass(frozen=True)
class DelayFields:
    """The delay of a run as its JSON and its command lines spell it (the options of both
    command lines are generated from these fields, their defaults and their docstrings)."""

    mode: str = "sync"
    """the delay (lmo.variants.Delay): sync | 2bw | ef (= 2bw --ef) | pipedream"""
    ef: bool = False
    """error feedback x+2d_{t-1}-d_{t-2} (with --delay 2bw: the same as --delay ef)"""
    sync_start: int = 0
    """2bw: the first K steps synchronous"""
    sync_cooldown: int = 0
    """2bw: the last K steps synchronous"""
    dc_asgd: float = 0.0
    """2bw: DC-ASGD lambda"""
    tau: int | None = None
    """2bw: the delay in steps (None: 1, PipeDream-2BW; more: a uniform queue of tau updates; with
    --delay-profile pipedream it is --stages - 1)"""
    corrector: str = "none"
    """2bw: a delay corrector of lmo.CORRECTORS at its defaults (none, weight_prediction,
    nesterov_lookahead, dc_asgd_adaptive, dc_asgd_ema, lr_damping; plain DC-ASGD is --dc-asgd)"""
    delay_profile: str = "uniform"
    """2bw: uniform (every block tau) or pipedream (the blocks of stage s of --stages P delayed by
    P - 1 - s, as an update delay)"""
    delayed_groups: str = "all"
    """2bw: the blocks delayed: all, matrix (the hidden 2-D weights: Muon's group) or other
    (embeddings, head, norms, vectors: the Muon family's AdamW group); the rest synchronous"""


#: the flat keys, in the order a run's JSON writes them (``mode`` first, then ``stages``, then these)
KEYS = tuple(f.name for f in fields(DelayFields))
#: the delay's newer keys (tau > 1, correctors, profiles, groups) at their "off" values: a run's
#: JSON leaves them out there, so every run from before they existed keeps its JSON and key
SHAPE_OFF = {"tau": None, "corrector": "none", "delay_profile": "uniform", "delayed_groups": "all"}


def delay_of(flat: Mapping, stages: int, base: Delay | None = None) -> Delay:
    """The delay of the flat fields ``flat`` (any of :data:`KEYS`) over ``base`` (default: the
    synchronous delay): ``base``'s own flat fields updated with ``flat``, then
    ``Delay.of_config`` (a pipedream delay's tau is ``stages`` - 1). ValueError, naming the
    option, for what the delay's rules refuse."""
    unknown = set(flat) - set(KEYS)
    if unknown:
        raise TypeError(f"not a field of the delay: {sorted(unknown)}")
    given = {**flat_of(base or Delay(), shape_off=False), **flat}
    if given["mode"] == PIPEDREAM or given["delay_profile"] == PIPEDREAM:
        given["tau"] = None if "tau" not in flat else flat["tau"]   # base's tau is its stages'
    try:
        return Delay.of_config(given.pop("mode"), given.pop("ef"), stages=stages, **given)
    except ValueError as e:
        raise ValueError(f"TrainConfig.delay: {e}") from None


def delay_of_json(config: Mapping) -> Delay:
    """The delay of a run's JSON (config.json, a checkpoint's configuration): its flat keys and
    its ``stages`` (default 2), read by :func:`delay_of`."""
    return delay_of({k: config[k] for k in KEYS if k in config}, config.get("stages", 2))


def flat_of(delay: Delay, shape_off: bool = True) -> dict:
    """``delay`` as its flat fields (``Delay.config_fields``: mode, ef, the mitigations, tau,
    corrector, delay_profile, delayed_groups); ``shape_off``: the :data:`SHAPE_OFF` keys left
    out while off, as a run's JSON writes them."""
    flat = delay.config_fields
    return {k: v for k, v in flat.items() if not (shape_off and k in SHAPE_OFF and v == SHAPE_OFF[k])}


def options_of_kind(kind: str, ef: bool = False) -> dict:
    """``{"mode", "ef"}`` of ``--delay KIND`` with ``--ef``: the kind ef is mode 2bw with
    ``ef=True`` (``--ef`` stays its alias), every other kind is its mode."""
    return dict(mode=TWO_BW if kind == EF else kind, ef=bool(ef) or kind == EF)

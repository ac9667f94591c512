"""One training, one key: a run's identity is its configuration after its defaults are
resolved, without what cannot change its trajectory.

``identity(config)`` is the full TrainConfig dict (:func:`paper_figs.records.runs.full_config`) with

- ``momentum`` equal to the optimizer's preset (``lmo.presets.DEFAULT_MOMENTUM``) written as
  ``None``: an explicit preset and an omitted one build the same optimizer (its ``hyper``,
  tested for every optimizer), so they are one run;
- the diagnostics fields (``DIAGNOSTICS``) at their "off" values: the diagnostics only read the state and
  draw their own batches, so a diagnosed run trains its plain twin's trajectory bit for bit
  (tests/gpu_runs/test_diagnostics.py; the kept records held 17 such pairs with identical
  curves before they were merged).

The key is ``config_hash(identity(config))``; spellings that were already canonical (momentum
omitted, no diagnostics) keep the key they had. A record can stand for a run that asks for
diagnostics only if it was trained with the same diagnostics (:func:`covers`); among the
settings that share a key, the one asking for diagnostics is the one trained
(:func:`representative`).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from lmo.presets import DEFAULT_MOMENTUM

from .cache import config_hash

#: fields that say what a run measures besides training, never how it trains, at their
#: "off" values (TrainConfig's defaults; a test checks they are)
DIAGNOSTICS_OFF = {"diag_every": 0, "diag_micro": 4}
DIAGNOSTICS = tuple(DIAGNOSTICS_OFF)


def preset_momentum(values: Mapping[str, Any]) -> bool:
    """Whether ``values`` spell out the optimizer's preset momentum (an omitted one is the same run)."""
    m = values.get("momentum")
    return m is not None and DEFAULT_MOMENTUM.get(values.get("optimizer")) == m


def identity(config: Mapping[str, Any]) -> dict:
    """The run's identity (module docstring): ``config`` with a preset momentum as None and
    the :data:`DIAGNOSTICS` fields it has set to off (so a plain run keeps its key)."""
    out = {k: (DIAGNOSTICS_OFF[k] if k in DIAGNOSTICS_OFF else v) for k, v in config.items()}
    if preset_momentum(out):
        out["momentum"] = None
    return out


def settings_identity(settings: Mapping[str, Any]) -> dict:
    """The same rule on a figure's settings (TrainConfig arguments, not the full config): a
    preset momentum and the diagnostics fields left out."""
    out = {k: v for k, v in settings.items() if k not in DIAGNOSTICS}
    if preset_momentum(out):
        del out["momentum"]
    return out


def diagnosed(config: Mapping[str, Any]) -> bool:
    """Whether a run with ``config`` records the theory diagnostics (diag_every > 0)."""
    return bool(config.get("diag_every"))


def covers(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    """Whether a record trained with config ``have`` answers a run asked with ``want`` (same
    identity assumed): always when ``want`` asks for no diagnostics, else only when ``have``
    recorded the same ones."""
    return not diagnosed(want) or all(have.get(k) == want.get(k) for k in DIAGNOSTICS)


def representative(configs: Sequence[Mapping[str, Any]]) -> int:
    """Index of the config to train among ``configs`` of one identity: the one asking for
    diagnostics (the first if none does). ValueError when two ask for different diagnostics:
    no single run answers both."""
    asked = [i for i, c in enumerate(configs) if diagnosed(c)]
    for i in asked[1:]:
        if not covers(configs[i], configs[asked[0]]):
            raise ValueError("two runs of one training ask for different diagnostics: "
                             f"{ {k: configs[asked[0]].get(k) for k in DIAGNOSTICS} } and "
                             f"{ {k: configs[i].get(k) for k in DIAGNOSTICS} }")
    return asked[0] if asked else 0


def run_key(config: Mapping[str, Any]) -> str:
    """The run's key: ``config_hash(identity(config))`` (cache file, kept record, run directory)."""
    return config_hash(identity(config))

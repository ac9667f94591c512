"""Which regime a training run belongs to, and which kind of machine made a record: the two
labels the cross-machine spread is measured and used by (``python -m paper_figs.cross_machine``).

A run's trajectory on two CPUs starts bit-identical and drifts apart by float rounding; how
far it drifts by the end depends on how chaotic the run is. The regimes are fixed here
before any spread was measured, from what is known to amplify rounding (a large lr, a high
momentum under delay) and from the figures that compare such runs::

    small model       config "small" (any lr, any variant)
    MoE               config "tiny_moe"
    long horizon      more than 1500 steps
    high lr           peak lr >= 2x the optimizer's preset
    low lr            peak lr <= 0.5x the preset
    high momentum     primary momentum >= 0.98 other than the preset, or a betas[1] override
    mitigation        sync start, sync cool-down or DC-ASGD (2BW)
    EF                2BW + error feedback, preset lr and momentum
    delayed           2BW or PipeDream, preset lr and momentum
    sync              synchronous, preset lr and momentum

The first that applies is the regime (a 2x-lr run at momentum 0.98 is "high lr").

A machine kind is the CPU model of the record's provenance plus, when the record has it, the
vector instruction set torch dispatched to (``cpu_capability``). Records made before the
capability was recorded carry the model name only.
"""
from __future__ import annotations

from typing import Any, Mapping

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM

REGIMES = ("small model", "MoE", "long horizon", "high lr", "low lr", "high momentum",
           "mitigation", "EF", "delayed", "sync")
#: the lr multiplier at or above which a run is "high lr", at or below which "low lr"
HIGH_LR, LOW_LR = 2.0, 0.5
HIGH_MOMENTUM = 0.98
BASE_STEPS = 1500


def lr_multiplier(settings: Mapping[str, Any]) -> float:
    """Peak lr / the optimizer's preset peak lr (1 when the run takes the preset)."""
    lr = settings.get("lr")
    return 1.0 if lr is None else float(lr) / DEFAULT_LR[settings["optimizer"]]


def regime_of(settings: Mapping[str, Any]) -> str:
    """The regime of a run's settings (module docstring): the first of :data:`REGIMES` that applies."""
    opt = settings["optimizer"]
    if settings.get("config") == "small":
        return "small model"
    if settings.get("config") == "tiny_moe":
        return "MoE"
    if int(settings.get("steps", BASE_STEPS)) > BASE_STEPS:
        return "long horizon"
    m = lr_multiplier(settings)
    if m >= HIGH_LR * (1 - 1e-9):
        return "high lr"
    if m <= LOW_LR * (1 + 1e-9):
        return "low lr"
    mom = settings.get("momentum")
    if ((mom is not None and mom >= HIGH_MOMENTUM and mom != DEFAULT_MOMENTUM.get(opt))
            or "betas" in (settings.get("opt_kwargs") or {})):
        return "high momentum"
    if settings.get("sync_start") or settings.get("sync_cooldown") or settings.get("dc_asgd"):
        return "mitigation"
    if settings.get("ef"):
        return "EF"
    if settings.get("mode", "sync") != "sync":
        return "delayed"
    return "sync"


def machine_kind(provenance: Mapping[str, Any]) -> str:
    """The CPU model of ``provenance["machine"]`` (the text before ", Linux ..."), with
    ``provenance["cpu_capability"]`` in brackets when recorded: e.g. ``AMD EPYC x2 [AVX2]``."""
    model = str(provenance.get("machine", "unknown")).split(", ")[0]
    cap = provenance.get("cpu_capability")
    return f"{model} [{cap}]" if cap else model

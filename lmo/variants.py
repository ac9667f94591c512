"""The ways a step can apply its update, named once for every package (docs/design.md §4).

Every package that lists or compares them (the trainer's modes, the sweep, the
predictions, the benchmarks, the paper's figures) spells them with these names::

    sync        x_{t+1} = x_t + d_t
    2bw         x_{t+1} = x_t + d_{t-1}                 lmo.delayed(opt, 1) (PipeDream-2BW)
    ef          x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}     lmo.error_feedback(opt)
    pipedream   g_t at the stale point z_t^k = x^k_{t - tau_k}, tau_k = P - 1 - s   lmo.pipedream

A run's configuration (``gpu_runs.recipe.TrainConfig``) stores a variant as a *mode*, the
delay schedule, plus the EF flag (ef is the 2bw mode with ``ef=True``): :data:`MODES` are
the three modes, :func:`variant_of` and :func:`mode_of` convert between the two spellings.
"""
from __future__ import annotations

SYNC, TWO_BW, EF, PIPEDREAM = "sync", "2bw", "ef", "pipedream"

#: every variant, in the order of docs/design.md §4
VARIANTS = (SYNC, TWO_BW, EF, PIPEDREAM)
#: the one-step-delay comparison of the paper (sync vs delayed vs delayed + EF)
ONE_STEP = (SYNC, TWO_BW, EF)
#: the delay schedules a run's configuration names (``TrainConfig.mode``); EF is 2bw + ef
MODES = (SYNC, TWO_BW, PIPEDREAM)


def variant_of(mode: str, ef: bool = False) -> str:
    """The variant of a configuration: ``mode``, or ``ef`` for mode 2bw with ``ef=True``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if ef and mode != TWO_BW:
        raise ValueError(f"ef: error feedback corrects the one-step delay (mode {TWO_BW!r}), got mode {mode!r}")
    return EF if ef else mode


def mode_of(variant: str) -> dict:
    """The configuration fields of ``variant``: ``{"mode": ..., "ef": ...}`` (ef: 2bw + ef=True)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    return dict(mode=TWO_BW, ef=True) if variant == EF else dict(mode=variant, ef=False)

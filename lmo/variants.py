"""The ways a step can apply its update, named once for every package, and the one function
that turns a variant into its optimizer (docs/design.md §4).

Every package that lists or compares them (the trainer's modes, the pipeline's DelayRule,
the sweep, the predictions, the verifier, the benchmarks, the paper's figures) spells them
with these names and builds them with :func:`wrap`::

    sync        x_{t+1} = x_t + d_t                     opt itself
    2bw         x_{t+1} = x_t + d_{t-1}                 lmo.delayed(opt, 1) (PipeDream-2BW)
    ef          x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}     lmo.error_feedback(opt)
    pipedream   g_t at the stale point z_t^k = x^k_{t - tau_k}, tau_k = P - 1 - s   lmo.pipedream

and, for the theory's bounds and the verifier, the delayed update of any delay tau::

    delayed     x_{t+1} = x_t + d_{t-tau}               lmo.delayed(opt, tau): tau = 1 is 2bw

A run's configuration (``gpu_runs.recipe.TrainConfig``) stores a variant as a *mode*, the
delay schedule, plus the EF flag (ef is the 2bw mode with ``ef=True``): :data:`MODES` are
the three modes, :func:`variant_of` and :func:`mode_of` convert between the two spellings.
The theory's bounds are about :data:`THEORY_VARIANTS` (sync, delayed, ef; ``theory.bound``
spells them the same, since theory imports nothing of ours, and a test keeps the two
equal); a verifier run is one of :data:`RUN_VARIANTS`, and :func:`theory_variant` says
which bounds describe it.
"""
from __future__ import annotations

from lmo.delay import delayed
from lmo.ef_correction import error_feedback

SYNC, TWO_BW, EF, PIPEDREAM = "sync", "2bw", "ef", "pipedream"
#: the delayed update of any delay tau (the theory's and the verifier's name; tau = 1 is 2bw)
DELAYED = "delayed"

#: every variant, in the order of docs/design.md §4
VARIANTS = (SYNC, TWO_BW, EF, PIPEDREAM)
#: the one-step-delay comparison of the paper (sync vs delayed vs delayed + EF)
ONE_STEP = (SYNC, TWO_BW, EF)
#: the delay schedules a run's configuration names (``TrainConfig.mode``); EF is 2bw + ef
MODES = (SYNC, TWO_BW, PIPEDREAM)
#: the recursions the theory's bounds are about (``theory.bound.VARIANTS``)
THEORY_VARIANTS = (SYNC, DELAYED, EF)
#: a verifier run's variants (``verify.run``): delayed with a delay tau >= 1 (default 1, the
#: 2bw step), pipedream as one parameter block of delay tau >= 2 (default 2)
RUN_VARIANTS = (SYNC, DELAYED, EF, PIPEDREAM)
#: the theory variant whose bounds describe each variant (2bw and pipedream are delayed updates)
_THEORY_OF = {SYNC: SYNC, TWO_BW: DELAYED, DELAYED: DELAYED, EF: EF, PIPEDREAM: DELAYED}
#: the mitigations of a delayed update (lmo.delay): a sync / pipedream variant takes none
MITIGATIONS = ("sync_start", "sync_cooldown", "dc_asgd")


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


def theory_variant(variant: str) -> str:
    """Which theory variant's bounds describe ``variant`` (2bw, pipedream: delayed)."""
    if variant not in _THEORY_OF:
        raise ValueError(f"variant must be one of {tuple(_THEORY_OF)}, got {variant!r}")
    return _THEORY_OF[variant]


def wrap(opt, variant: str, *, delay=None, sync_start: int = 0, sync_cooldown: int = 0,
         total_steps: int | None = None, dc_asgd: float = 0.0):
    """The optimizer of ``variant`` around the synchronous optimizer ``opt``: the one place a
    variant becomes a wrapper.

    ====================  =========================================================
    ``sync``              ``opt`` itself
    ``2bw``               ``lmo.delay.delayed(opt, 1, ...)``
    ``delayed``           ``lmo.delay.delayed(opt, delay, ...)`` (delay default 1)
    ``ef``                ``lmo.ef_correction.error_feedback(opt, ...)`` (delay 1)
    ``pipedream``         ``opt`` itself: the staleness is in the gradient's point, which
                          the loop threads (``lmo.pipedream``'s StaleHistory); with
                          ``delay`` (an int or per-block mapping) the update-delay model
                          ``lmo.delay.delayed(opt, delay)`` instead (the same recursion
                          for a uniform delay, see lmo.pipedream)
    ====================  =========================================================

    The mitigations of a delayed update (``sync_start``, ``sync_cooldown`` with
    ``total_steps``, ``dc_asgd``; lmo.delay) go to the wrapper; a variant without a
    wrapper refuses them.
    """
    mitigations = dict(sync_start=sync_start, sync_cooldown=sync_cooldown, total_steps=total_steps,
                       dc_asgd=dc_asgd)
    if variant not in VARIANTS and variant != DELAYED:
        raise ValueError(f"variant must be one of {VARIANTS + (DELAYED,)}, got {variant!r}")
    if variant == SYNC or (variant == PIPEDREAM and delay is None):
        given = [k for k in MITIGATIONS if mitigations[k]]
        if given or delay is not None:
            raise ValueError(f"variant {variant!r} applies its update at once: "
                             f"{', '.join(given) or 'delay'} needs a delayed variant")
        return opt
    if variant == TWO_BW and delay not in (None, 1):
        raise ValueError(f"delay: variant {TWO_BW!r} is the one-step delay, got {delay!r}")
    if variant == EF:
        return error_feedback(opt, delay=1 if delay is None else delay, **mitigations)
    return delayed(opt, 1 if delay is None else delay, **mitigations)

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
The theory's bounds are about :data:`THEORY_VARIANTS` (sync, delayed, ef; ``theory.records.bound``
spells them the same, since theory imports nothing of ours, and a test keeps the two
equal); a verifier run is one of :data:`RUN_VARIANTS`, and :func:`theory_variant` says
which bounds describe it.

A run's delay is one value, :class:`Delay` (kind, tau, the mitigations sync_start,
sync_cooldown and DC-ASGD's lambda): its rules (the kinds, the ranges, and that EF and the
mitigations need the one-step delay of 2bw) are checked once, in its constructor, and every
package asks it (``Delay.wrap``, ``.one_step``, ``.stale_point``, ``.label``,
``.theory_variant``) instead of comparing names. :func:`wrap`, :func:`variant_of` and
:func:`mode_of` go through it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

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
#: the recursions the theory's bounds are about (``theory.records.bound.VARIANTS``)
THEORY_VARIANTS = (SYNC, DELAYED, EF)
#: a verifier run's variants (``verify.run``): delayed with a delay tau >= 1 (default 1, the
#: 2bw step), pipedream as one parameter block of delay tau >= 2 (default 2)
RUN_VARIANTS = (SYNC, DELAYED, EF, PIPEDREAM)
#: the theory variant whose bounds describe each variant (2bw and pipedream are delayed updates)
_THEORY_OF = {SYNC: SYNC, TWO_BW: DELAYED, DELAYED: DELAYED, EF: EF, PIPEDREAM: DELAYED}
#: the mitigations of a delayed update (lmo.delay): a sync / pipedream variant takes none
MITIGATIONS = ("sync_start", "sync_cooldown", "dc_asgd")
#: tau of each kind but pipedream's (P - 1, from the run's stages)
_TAU = {SYNC: 0, TWO_BW: 1, EF: 1}
#: the display labels of the figures and tables: the kinds, and a 2bw run with one mitigation
LABELS = {SYNC: "synchronous", TWO_BW: "one-step delay (PipeDream-2BW)", EF: "one-step delay + error feedback",
          PIPEDREAM: "PipeDream (variable delay)", "sync_start": "delay + synchronous start",
          "sync_cooldown": "delay + synchronous cool-down", "dc_asgd": "delay + DC-ASGD"}


def variant_of(mode: str, ef: bool = False) -> str:
    """The variant of a configuration: ``mode``, or ``ef`` for mode 2bw with ``ef=True``
    (``Delay.of_config(mode, ef).kind``)."""
    return Delay.of_config(mode, ef).kind


def mode_of(variant: str) -> dict:
    """The configuration fields of ``variant``: ``{"mode": ..., "ef": ...}`` (ef: 2bw + ef=True)."""
    fields = Delay(variant).config_fields
    return dict(mode=fields["mode"], ef=fields["ef"])


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
    wrapper refuses them. For sync, 2bw, ef and pipedream without ``delay`` this is
    ``Delay(variant, delay, **mitigations).wrap(opt, total_steps)``: the delay's rules are
    :class:`Delay`'s (``delay`` is its tau: 0 or None for sync, 1 or None for 2bw and ef).
    """
    if variant in VARIANTS and (variant != PIPEDREAM or delay is None):
        # the kinds of a run: Delay checks delay (its tau) and the mitigations, and builds
        return Delay(variant, delay, sync_start, sync_cooldown, dc_asgd).wrap(opt, total_steps)
    if variant not in VARIANTS and variant != DELAYED:
        raise ValueError(f"variant must be one of {VARIANTS + (DELAYED,)}, got {variant!r}")
    # delayed of any tau, or pipedream's update-delay model (an int or per-block delays)
    return delayed(opt, 1 if delay is None else delay, sync_start=sync_start, sync_cooldown=sync_cooldown,
                   total_steps=total_steps, dc_asgd=dc_asgd)


def _check_count(name: str, v) -> None:
    """ValueError unless ``v`` is an int >= 0 (bools refused)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{name} (--{name.replace('_', '-')}) must be an int >= 0, got {v!r}")


@dataclass(frozen=True)
class Delay:
    """The delay of a run as one value: its kind (:data:`VARIANTS`: sync, 2bw, ef, pipedream)
    with its delay tau and the mitigations of a one-step delay, checked once, here.

    - ``kind``: sync (x_{t+1} = x_t + d_t), 2bw (x_t + d_{t-1}), ef (x_t + 2 d_{t-1} - d_{t-2}),
      pipedream (stage s of P takes its gradient at x_{t - tau_s}, tau_s = P - 1 - s);
    - ``tau``: the largest gradient delay in steps: 0 for sync, 1 for 2bw and ef, P - 1 for
      pipedream with P stages (its first stage's);
    - ``sync_start`` / ``sync_cooldown``: the first / last K steps synchronous; ``dc_asgd``:
      DC-ASGD's lambda, g~ = g + lambda g * g * (y_t - x_t). The three mitigate the one-step
      delay of 2bw and ef: every other kind refuses them (they would be ignored there).

    A run's configuration spells the same value in flat fields (``mode``, ``ef``, ...):
    :meth:`of_config` reads them, :attr:`config_fields` writes them back."""

    kind: str = SYNC
    tau: int | None = None
    sync_start: int = 0
    sync_cooldown: int = 0
    dc_asgd: float = 0.0

    def __post_init__(self):
        """The one check of a delay's rules: the kind, tau (0 sync, 1 for 2bw / ef, >= 0
        pipedream), the mitigations' ranges, and that the mitigations need 2bw or ef."""
        if self.kind not in VARIANTS:
            raise ValueError(f"delay kind (the variant, --delay) must be one of {VARIANTS}, got {self.kind!r}")
        if self.tau is None:
            object.__setattr__(self, "tau", _TAU.get(self.kind, 1))
        if isinstance(self.tau, bool) or not isinstance(self.tau, int):
            raise ValueError(f"delay tau must be an int, got {self.tau!r}")
        if self.kind == PIPEDREAM and self.tau < 0:
            raise ValueError(f"pipedream: tau = stages - 1 must be >= 0, i.e. stages (--stages) >= 1, "
                             f"got tau {self.tau}")
        if self.kind != PIPEDREAM and self.tau != _TAU[self.kind]:
            raise ValueError(f"delay {self.kind!r} has tau {_TAU[self.kind]}, got {self.tau}")
        _check_count("sync_start", self.sync_start)
        _check_count("sync_cooldown", self.sync_cooldown)
        if isinstance(self.dc_asgd, bool) or not (isinstance(self.dc_asgd, (int, float))
                                                  and math.isfinite(self.dc_asgd) and self.dc_asgd >= 0):
            raise ValueError(f"dc_asgd (--dc-asgd) must be a finite number >= 0, got {self.dc_asgd!r}")
        given = [k for k in MITIGATIONS if getattr(self, k)]
        if given and not self.one_step:
            named = ", ".join(f"{k} (--{k.replace('_', '-')})" for k in given)
            raise ValueError(f"{named} mitigates the one-step delay: it needs --delay 2bw or ef "
                             f"(pipeline: --schedule 2bw), got --delay {self.kind}")

    @classmethod
    def of_config(cls, mode: str, ef: bool = False, sync_start: int = 0, sync_cooldown: int = 0,
                  dc_asgd: float = 0.0, stages: int = 2) -> "Delay":
        """The delay of a configuration's flat fields (``TrainConfig.mode``, ``ef``, ...):
        kind = ``ef`` for mode 2bw with ``ef=True``, else ``mode``; tau = stages - 1 for
        pipedream (``stages`` is read for pipedream only)."""
        if mode not in MODES:
            raise ValueError(f"mode (--delay) must be one of {MODES}, got {mode!r}")
        if ef and mode != TWO_BW:
            raise ValueError(f"ef (--ef): error feedback corrects the one-step delay: it needs --delay 2bw "
                             f"(pipeline: --schedule 2bw), got mode {mode!r}")
        return cls(EF if ef else mode, stages - 1 if mode == PIPEDREAM else None, sync_start, sync_cooldown, dc_asgd)

    @property
    def config_fields(self) -> dict:
        """The flat configuration fields of this delay: ``{"mode": ..., "ef": ...}`` (ef: 2bw +
        ef=True) and the mitigations (pipedream's stages are the run's own field)."""
        return dict(mode=TWO_BW if self.kind == EF else self.kind, ef=self.kind == EF,
                    **{k: getattr(self, k) for k in MITIGATIONS})

    @property
    def one_step(self) -> bool:
        """2bw or ef: the update goes through a wrapper with a one-step queue (and takes the
        mitigations)."""
        return self.kind in (TWO_BW, EF)

    @property
    def stale_point(self) -> bool:
        """pipedream: the gradient is taken at a stale point, which the loop threads
        (``lmo.pipedream``'s StaleHistory); the update itself applies at once."""
        return self.kind == PIPEDREAM

    @property
    def state_prefix(self) -> str:
        """Where the synchronous optimizer's state sits in ``state_dict`` of :meth:`wrap`'s
        optimizer: ``"inner/"`` under a one-step wrapper (its state's field ``inner``), else ""."""
        return "inner/" if self.one_step else ""

    @property
    def label(self) -> str:
        """The display label the figures and tables use (:data:`LABELS`): the kind's, or for 2bw
        with one mitigation the mitigation's ("delay + DC-ASGD")."""
        given = [k for k in MITIGATIONS if getattr(self, k)]
        return LABELS[given[0]] if self.kind == TWO_BW and len(given) == 1 else LABELS[self.kind]

    @property
    def theory_variant(self) -> str:
        """The theory variant whose bounds describe this delay (2bw, pipedream: delayed)."""
        return _THEORY_OF[self.kind]

    def wrap(self, opt, total_steps: int | None = None):
        """The optimizer of this delay around the synchronous optimizer ``opt``::

            sync, pipedream   opt itself (pipedream's staleness is the loop's history)
            2bw               lmo.delay.delayed(opt, 1, **mitigations)
            ef                lmo.ef_correction.error_feedback(opt, delay=1, **mitigations)

        ``total_steps``: the horizon that ``sync_cooldown`` counts back from."""
        if not self.one_step:
            return opt
        mitigations = dict(sync_start=self.sync_start, sync_cooldown=self.sync_cooldown,
                           total_steps=total_steps, dc_asgd=self.dc_asgd)
        if self.kind == EF:
            return error_feedback(opt, delay=1, **mitigations)
        return delayed(opt, 1, **mitigations)

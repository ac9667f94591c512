"""The delay of a step, declared once for every package: its kinds, and :class:`Delay`, the
one value a run's delay is and the one builder of its optimizer (docs/design.md §4)::

    sync        x_{t+1} = x_t + d_t                     Delay("sync").wrap(opt) is opt itself
    2bw         x_{t+1} = x_t + d_{t-tau}               lmo.delayed(opt, tau); tau = 1: PipeDream-2BW
    ef          x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}     lmo.error_feedback(opt)
    pipedream   g_t at the stale point z_t^k = x^k_{t - tau_k}, tau_k = P - 1 - s   lmo.pipedream

:data:`KINDS` are the four kinds. ``Delay(kind, tau, sync_start, sync_cooldown, dc_asgd,
corrector, profile, groups)`` checks every rule once, in its constructor (the kinds, the
ranges, that EF and the mitigations need the one-step delay), and every package asks it
instead of comparing names: ``.wrap`` (the optimizer), ``.one_step``, ``.stale_point``,
``.wrapped``, ``.taus``, ``.label`` (the figures' text), ``.theory_variant``.

A run stores its delay as this value (``gpu_runs.recipe.TrainConfig.delay``); its JSON spells
it in flat keys, ``mode`` (:data:`MODES`: sync, 2bw, pipedream; ef is mode 2bw with ``ef``
true) and the rest, which :meth:`Delay.of_config` reads and :attr:`Delay.config_fields`
writes. The theory's bounds are about :data:`THEORY_VARIANTS` (sync, delayed, ef; the delayed
update of any tau is 2bw; ``theory.records.bound`` spells them the same, since theory imports
nothing of ours, and a test keeps the two equal); a verifier run is one of
:data:`RUN_VARIANTS`, whose delay is :meth:`Delay.of_run_variant`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from typing import Mapping

from lmo.corrector_registry import CORRECTORS, with_corrector
from lmo.delay import delayed
from lmo.delay_profiles import delay_by_label
from lmo.ef_correction import error_feedback

SYNC, TWO_BW, EF, PIPEDREAM = "sync", "2bw", "ef", "pipedream"
#: the delayed update of any delay tau (the theory's and the verifier's name; tau = 1 is 2bw)
DELAYED = "delayed"

#: the kinds of a delay, in the order of docs/design.md §4 (``--delay``)
KINDS = (SYNC, TWO_BW, EF, PIPEDREAM)
#: retired name of :data:`KINDS` (callers outside gpu_runs still import it)
VARIANTS = KINDS
#: the one-step-delay comparison of the paper (sync vs delayed vs delayed + EF)
ONE_STEP = (SYNC, TWO_BW, EF)
#: the values of a run's JSON key ``mode`` (the delay's flat spelling); EF is 2bw + ef
MODES = (SYNC, TWO_BW, PIPEDREAM)
#: the recursions the theory's bounds are about (``theory.records.bound.VARIANTS``)
THEORY_VARIANTS = (SYNC, DELAYED, EF)
#: a verifier run's variants (``verify.run``): delayed with a delay tau >= 1 (default 1, the
#: 2bw step), pipedream as one parameter block of delay tau >= 2 (default 2)
RUN_VARIANTS = (SYNC, DELAYED, EF, PIPEDREAM)
#: the theory variant whose bounds describe each kind (2bw and pipedream are delayed updates)
_THEORY_OF = {SYNC: SYNC, TWO_BW: DELAYED, DELAYED: DELAYED, EF: EF, PIPEDREAM: DELAYED}
#: the mitigations of a delayed update (lmo.delay): a sync / pipedream variant takes none
MITIGATIONS = ("sync_start", "sync_cooldown", "dc_asgd")
#: tau of each kind but pipedream's (P - 1, from the run's stages); 2bw's is its default (>= 1)
_TAU = {SYNC: 0, TWO_BW: 1, EF: 1}
#: how a delayed update's tau spreads over the blocks: every block tau (uniform), or the
#: per-stage profile of a P-stage pipeline, tau_s = P - 1 - s = tau - s (pipedream)
PROFILES = ("uniform", "pipedream")
#: which group of ``lmo.combine.muon_labels`` is delayed (the other stays synchronous, tau 0)
GROUPS = ("all", "matrix", "other")
#: the correctors a run's delay can name (``lmo.CORRECTORS``); DC-ASGD's plain form is the
#: mitigation ``dc_asgd`` (its lambda), so a run spells it one way only
RUN_CORRECTORS = tuple(c for c in CORRECTORS if c != "dc_asgd")   # "none" first
#: the display labels of the figures and tables: the kinds, and a 2bw run with one mitigation
LABELS = {SYNC: "synchronous", TWO_BW: "one-step delay (PipeDream-2BW)", EF: "one-step delay + error feedback",
          PIPEDREAM: "PipeDream (variable delay)", "sync_start": "delay + synchronous start",
          "sync_cooldown": "delay + synchronous cool-down", "dc_asgd": "delay + DC-ASGD"}


def theory_variant(variant: str) -> str:
    """Which theory variant's bounds describe ``variant`` (2bw, pipedream: delayed)."""
    if variant not in _THEORY_OF:
        raise ValueError(f"variant must be one of {tuple(_THEORY_OF)}, got {variant!r}")
    return _THEORY_OF[variant]


def _check_count(name: str, v) -> None:
    """ValueError unless ``v`` is an int >= 0 (bools refused)."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{name} (--{name.replace('_', '-')}) must be an int >= 0, got {v!r}")


@dataclass(frozen=True)
class Delay:
    """The delay of a run as one value: its kind (:data:`KINDS`: sync, 2bw, ef, pipedream)
    with its delay tau, the mitigations of a one-step delay, and the corrector, the per-block
    profile and the delayed group of a longer or partial delay, checked once, here.

    - ``kind``: sync (x_{t+1} = x_t + d_t), 2bw (x_t + d_{t-tau}), ef (x_t + 2 d_{t-1} - d_{t-2}),
      pipedream (stage s of P takes its gradient at x_{t - tau_s}, tau_s = P - 1 - s);
    - ``tau``: the largest gradient delay in steps: 0 for sync, 1 for ef, >= 1 for 2bw (1:
      PipeDream-2BW; more: a uniform queue of tau updates), P - 1 for pipedream with P stages;
    - ``sync_start`` / ``sync_cooldown``: the first / last K steps synchronous; ``dc_asgd``:
      DC-ASGD's lambda, g~ = g + lambda g * g * (y_t - x_t). The three mitigate the one-step
      delay (2bw with tau 1, and ef): every other delay refuses them;
    - ``corrector``: a name of :data:`RUN_CORRECTORS` (``lmo.CORRECTORS``: weight prediction,
      the Nesterov look-ahead, DC-ASGD-a / -EMA, lr damping) around a 2bw delay of any tau;
    - ``profile``: :data:`PROFILES`; ``pipedream`` delays the blocks of stage s by tau - s
      (tau = P - 1: the original PipeDream's tau_s = P - 1 - s as an update delay);
    - ``groups``: :data:`GROUPS`, the blocks delayed (``lmo.combine.muon_labels``' "matrix" or
      "other"; the rest synchronous): the attribution of a delay penalty to a group.

    ``one_step`` (2bw with tau 1 and no corrector, profile or group, or ef) is the delay that
    takes the mitigations; the real pipeline's 2BW schedule runs it and, stage by stage with
    :meth:`taus`, the longer and shaped delays (but the correctors that correct before the clip).

    A run stores this value (``TrainConfig.delay``); its JSON spells it in flat fields (``mode``,
    ``ef``, ``tau``, ...): :meth:`of_config` reads them, :attr:`config_fields` writes them back."""

    kind: str = SYNC
    tau: int | None = None
    sync_start: int = 0
    sync_cooldown: int = 0
    dc_asgd: float = 0.0
    corrector: str = "none"
    profile: str = "uniform"
    groups: str = "all"

    def __post_init__(self):
        """The one check of a delay's rules: the kind, tau (0 sync, 1 ef, >= 1 2bw, >= 0
        pipedream), the mitigations' ranges, that the mitigations need the one-step delay,
        and that a corrector, a profile or a group needs 2bw."""
        if self.kind not in KINDS:
            raise ValueError(f"delay kind (--delay) must be one of {KINDS}, got {self.kind!r}")
        if self.tau is None:
            object.__setattr__(self, "tau", _TAU.get(self.kind, 1))
        if isinstance(self.tau, bool) or not isinstance(self.tau, int):
            raise ValueError(f"delay tau (--tau) must be an int, got {self.tau!r}")
        if self.kind == PIPEDREAM and self.tau < 0:
            raise ValueError(f"pipedream: tau = stages - 1 must be >= 0, i.e. stages (--stages) >= 1, "
                             f"got tau {self.tau}")
        if self.kind == TWO_BW and self.tau < 1:
            raise ValueError(f"delay '2bw' (--tau) needs tau >= 1 (tau 0 is --delay sync), got {self.tau}")
        if self.kind in (SYNC, EF) and self.tau != _TAU[self.kind]:
            raise ValueError(f"delay {self.kind!r} has tau {_TAU[self.kind]} (--tau), got {self.tau}")
        _check_count("sync_start", self.sync_start)
        _check_count("sync_cooldown", self.sync_cooldown)
        if isinstance(self.dc_asgd, bool) or not (isinstance(self.dc_asgd, (int, float))
                                                  and math.isfinite(self.dc_asgd) and self.dc_asgd >= 0):
            raise ValueError(f"dc_asgd (--dc-asgd) must be a finite number >= 0, got {self.dc_asgd!r}")
        for name, v, domain in (("corrector", self.corrector, RUN_CORRECTORS),
                                ("profile", self.profile, PROFILES), ("groups", self.groups, GROUPS)):
            if v not in domain:
                hint = " (plain DC-ASGD is --dc-asgd LAMBDA)" if v == "dc_asgd" else ""
                raise ValueError(f"delay {name} (--{_FLAG[name]}) must be one of {domain}, got {v!r}{hint}")
        extra = [f"--{_FLAG[k]} {getattr(self, k)}" for k, off in _OFF.items() if getattr(self, k) != off]
        if extra and self.kind != TWO_BW:
            raise ValueError(f"{', '.join(extra)} shapes a delayed update: it needs --delay 2bw, "
                             f"got --delay {self.kind}")
        given = [k for k in MITIGATIONS if getattr(self, k)]
        if given and not self.one_step:
            named = ", ".join(f"{k} (--{k.replace('_', '-')})" for k in given)
            why = " with tau 1" + (f" and no {', '.join(extra)}" if extra else "") if self.kind == TWO_BW else ""
            raise ValueError(f"{named} mitigates the one-step delay: it needs --delay 2bw or ef{why} "
                             f"(pipeline: --schedule 2bw), got --delay {self.kind} tau {self.tau}"
                             + (f" {' '.join(extra)}" if extra else ""))
        if self.profile == "pipedream" and self.groups != "all":
            raise ValueError("a pipedream profile delays every stage: it takes --delayed-groups all")

    @classmethod
    def of_run_variant(cls, variant: str, delay=None, sync_start: int = 0, sync_cooldown: int = 0,
                       dc_asgd: float = 0.0) -> "Delay":
        """The delay of a verifier run (:data:`RUN_VARIANTS`, plus the kinds) and of the theory's
        recursions: ``delayed`` of delay tau is 2bw of tau (default 1); ``pipedream`` with a
        ``delay`` (an int, or a per-block mapping whose largest value is tau) is its update-delay
        model, the same 2bw update (lmo.pipedream: the same recursion for a uniform delay);
        without one it is the kind pipedream (the loop threads the stale point). Every other
        name is a kind, ``delay`` its tau."""
        if variant == DELAYED or (variant == PIPEDREAM and delay is not None):
            tau = 1 if delay is None else (max(delay.values()) if isinstance(delay, Mapping) else delay)
            return cls(TWO_BW, tau, sync_start, sync_cooldown, dc_asgd)
        return cls(variant, delay, sync_start, sync_cooldown, dc_asgd)

    @classmethod
    def of_config(cls, mode: str, ef: bool = False, sync_start: int = 0, sync_cooldown: int = 0,
                  dc_asgd: float = 0.0, stages: int = 2, tau: int | None = None, corrector: str = "none",
                  delay_profile: str = "uniform", delayed_groups: str = "all") -> "Delay":
        """The delay of a configuration's flat fields (``TrainConfig.mode``, ``ef``, ...):
        kind = ``ef`` for mode 2bw with ``ef=True``, else ``mode``; tau = stages - 1 for
        pipedream and for the pipedream profile (``stages`` is read for those only; an explicit
        ``tau`` is then refused), else ``tau`` (None: the kind's)."""
        if mode not in MODES:
            raise ValueError(f"mode (--delay) must be one of {MODES}, got {mode!r}")
        if ef and mode != TWO_BW:
            raise ValueError(f"ef (--ef): error feedback corrects the one-step delay: it needs --delay 2bw "
                             f"(pipeline: --schedule 2bw), got mode {mode!r}")
        if mode == PIPEDREAM or delay_profile == "pipedream":
            if tau is not None:
                raise ValueError(f"tau (--tau): a pipedream delay's tau is stages - 1 (--stages), got tau {tau}")
            tau = stages - 1
        return cls(EF if ef else mode, tau, sync_start, sync_cooldown, dc_asgd, corrector, delay_profile,
                   delayed_groups)

    @property
    def config_fields(self) -> dict:
        """The flat configuration fields of this delay: ``{"mode": ..., "ef": ...}`` (ef: 2bw +
        ef=True), the mitigations, and ``tau`` / ``corrector`` / ``delay_profile`` /
        ``delayed_groups`` (tau None where it is the kind's own or the stages'; pipedream's
        stages are the run's own field)."""
        own = self.kind == PIPEDREAM or self.profile == "pipedream" or self.tau == _TAU.get(self.kind)
        return dict(mode=TWO_BW if self.kind == EF else self.kind, ef=self.kind == EF,
                    **{k: getattr(self, k) for k in MITIGATIONS}, tau=None if own else self.tau,
                    corrector=self.corrector, delay_profile=self.profile, delayed_groups=self.groups)

    @property
    def one_step(self) -> bool:
        """The one-step delay of the paper: ef, or 2bw with tau 1 and no corrector, profile or
        group (the update goes through a wrapper with a one-step queue, and takes the
        mitigations; the pipeline's 2BW schedule runs it)."""
        return self.kind == EF or (self.kind == TWO_BW and self.tau == 1 and not self.shaped)

    @property
    def shaped(self) -> bool:
        """A corrector, a per-stage profile or a delayed group is set (a 2bw delay only)."""
        return any(getattr(self, k) != off for k, off in _OFF.items())

    @property
    def wrapped(self) -> bool:
        """2bw or ef: the update goes through a delay wrapper (a queue of tau updates)."""
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
        with one mitigation the mitigation's ("delay + DC-ASGD"); a longer or shaped delay names
        its tau, corrector, profile and group."""
        if self.kind == TWO_BW and (self.tau != 1 or self.shaped):
            parts = [f"delay tau={self.tau}" if self.profile == "uniform" else f"PipeDream profile tau<={self.tau}"]
            if self.groups != "all":
                parts.append(f"{self.groups} group only")
            if self.corrector != "none":
                parts.append(f"+ {self.corrector.replace('_', ' ')}")
            return " ".join(parts)
        given = [k for k in MITIGATIONS if getattr(self, k)]
        return LABELS[given[0]] if self.kind == TWO_BW and len(given) == 1 else LABELS[self.kind]

    @property
    def theory_variant(self) -> str:
        """The theory variant whose bounds describe this delay (2bw, pipedream: delayed)."""
        return _THEORY_OF[self.kind]

    def taus(self, stage_of: Mapping[str, int] | None = None, labels: Mapping[str, str] | None = None):
        """The delay of each block: ``tau`` (an int) for a uniform delay of every block, else
        {name: tau_k} with tau_k = tau - stage_of[name] (profile pipedream) and tau_k = 0 for a
        block outside ``groups`` (``labels``: ``lmo.combine.muon_labels`` of the parameters)."""
        if self.profile == "uniform" and self.groups == "all":
            return self.tau
        names = stage_of if self.profile == "pipedream" else labels
        if names is None:
            raise ValueError(f"Delay.taus: profile {self.profile!r} / groups {self.groups!r} needs the blocks' "
                             f"{'stages (stage_of)' if self.profile == 'pipedream' else 'labels'}")
        if self.profile == "pipedream":
            bad = {k: s for k, s in stage_of.items() if not 0 <= s <= self.tau}
            if bad:
                raise ValueError(f"Delay.taus: stages must lie in 0..{self.tau} (tau = P - 1), got {bad}")
            return {k: self.tau - s for k, s in stage_of.items()}
        return delay_by_label(labels, {g: (self.tau if g == self.groups else 0) for g in ("matrix", "other")})

    def wrap(self, opt, total_steps: int | None = None, taus=None):
        """The optimizer of this delay around the synchronous optimizer ``opt``::

            sync, pipedream   opt itself (pipedream's staleness is the loop's history)
            2bw               lmo.delay.delayed(opt, tau, **mitigations), or with a corrector
                              lmo.corrector_registry.with_corrector(opt, corrector, tau)
            ef                lmo.ef_correction.error_feedback(opt, delay=1, **mitigations)

        ``total_steps``: the horizon that ``sync_cooldown`` counts back from; ``taus``: the
        per-block delays (:meth:`taus`) that a profile or a group needs (default: ``tau``)."""
        if not self.wrapped:
            return opt
        if taus is None:
            taus = self.taus()
        if self.corrector != "none":
            return with_corrector(opt, self.corrector, taus)
        mitigations = dict(sync_start=self.sync_start, sync_cooldown=self.sync_cooldown,
                           total_steps=total_steps, dc_asgd=self.dc_asgd)
        if self.kind == EF:
            return error_feedback(opt, delay=1, **mitigations)
        return delayed(opt, taus, **mitigations)


#: the shaping fields of a delay at their "off" values, and their command-line flags
_OFF = {"corrector": "none", "profile": "uniform", "groups": "all"}
_FLAG = {"corrector": "corrector", "profile": "delay-profile", "groups": "delayed-groups"}

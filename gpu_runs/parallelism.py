"""The parallelism section of a run (:class:`Parallelism`, the field ``TrainConfig.parallel``):
how a run is laid out over processes, and the checks of a layout that need no process.

A run is one :class:`gpu_runs.recipe.TrainConfig`, whoever executes it. The trainer
(``gpu_runs.train``) runs it in one process: its section is the default ``Parallelism()``
(``schedule=None``). The pipeline (``python -m gpu_runs.pipeline``) runs it over
P x D processes with a schedule: ``Parallelism(schedule, microbatches, dp)``, and the
number of stages P is ``TrainConfig.stages`` (the same number the trainer's pipedream delay
reads). The schedule runs a delay (``lmo.variants.Delay``; :func:`schedules_of`: gpipe /
1f1b run sync, 2bw runs 2bw of any tau, profile, group and corrector, and ef; pipedream
pipedream), so a pipeline run
and the trainer run with the same other fields have the same trajectory
(``tests/gpu_runs/test_pipeline_llama.py``).

In the spirit of torchtitan's job-config sections: a small frozen record, one field of
the run spec, its defaults the single-process case. The section is left out of the run's
JSON while it is the default (``TrainConfig.as_dict``), so trainer runs keep the identity
(config.json, checkpoint config, ``paper_figs`` cache key) they had before it existed.
"""
from __future__ import annotations

from dataclasses import dataclass

from lmo.variants import EF, PIPEDREAM, SYNC, TWO_BW, Delay

#: the schedules and the delay kind (lmo.variants.Delay) each one runs: gpipe and 1f1b
#: are synchronous, 2bw runs the delayed update (2bw of any tau, or ef with --ef), pipedream its own
KIND_OF_SCHEDULE = {"gpipe": SYNC, "1f1b": SYNC, TWO_BW: TWO_BW, PIPEDREAM: PIPEDREAM}
SCHEDULES = tuple(KIND_OF_SCHEDULE)
SYNC_SCHEDULES = tuple(s for s, kind in KIND_OF_SCHEDULE.items() if kind == SYNC)
#: the schedule of a pipeline run given ``--delay`` alone
DEFAULT_SCHEDULE = {SYNC: "1f1b", TWO_BW: TWO_BW, EF: TWO_BW, PIPEDREAM: PIPEDREAM}


def schedules_of(delay: Delay) -> tuple:
    """The schedules that run ``delay``: gpipe / 1f1b for sync, 2bw for 2bw and ef, pipedream
    for pipedream (:data:`KIND_OF_SCHEDULE`: the kind a schedule runs without ``--ef``; ef runs
    on 2bw)."""
    kind = TWO_BW if delay.kind == EF else delay.kind
    return tuple(s for s, k in KIND_OF_SCHEDULE.items() if k == kind)


def check_schedule_runs(schedule: str, delay: Delay) -> None:
    """ValueError, one line naming both flags, when ``--schedule`` cannot run ``--delay``."""
    if schedule not in schedules_of(delay):
        raise ValueError(f"--schedule {schedule} does not run --delay {delay.kind}: "
                         f"use --schedule {' or '.join(schedules_of(delay))} (or leave --schedule out)")


#: correctors whose correction (with its EMA of g * g) runs inside the wrapper on the raw gradient,
#: before the trainer's clip: a stage runs the wrapper's two halves around the cross-stage clip
#: (gpu_runs.pipeline.delay)
COMPENSATING_CORRECTORS = ("dc_asgd_adaptive", "dc_asgd_ema")
#: correctors whose gradient point z_t (lmo.lookahead.gradient_point) is not x_t
LOOKAHEAD_CORRECTORS = ("weight_prediction", "nesterov_lookahead")


def looks_ahead(delay: Delay) -> bool:
    """Whether a run of ``delay`` takes its gradient at z_t != x_t (a wrapped delay with one of
    :data:`LOOKAHEAD_CORRECTORS`): the stage forwards at z_t, and a tied head's owner sends it."""
    return delay.wrapped and delay.corrector in LOOKAHEAD_CORRECTORS


def flushed_steps(delay: Delay) -> bool:
    """Whether the 2bw schedule runs ``delay`` as flushed 1F1B steps (U(t) before step t + 1's
    first forward, creating x_{t+1} = x_t + a_t from the wrapper's own update) instead of the
    2BW stream (U(t) after step t + 1's forwards, creating x_{t+2} = x_{t+1} + next_applied):

    a group left synchronous (delay 0 on every stage): its a_t = d_t needs g_t before step
    t + 1's forward, which a stage but the last can only have after a flush. Every other wrapped
    delay (2bw of any tau, ef, the correctors, the pipedream profile: see :func:`applies_at_once`)
    runs the 2BW stream."""
    return delay.kind == TWO_BW and delay.groups != "all"


def applies_at_once(delay: Delay, stage: int, num_stages: int) -> bool:
    """The last stage of the pipedream profile on the 2BW stream: its blocks' delay is
    tau - (P - 1) = 0, so its U(t) comes right before step t + 1's first forward and creates
    x_{t+1} = x_t + a_t (a_t = d_t, the wrapper's own output); it waits there for the clip's
    all-reduce of step t only, which every other stage launches without waiting for this one
    (unit-time simulator, F = 1, B = 2: 2 (P - 1) per step more than the 2BW stream, P - 1 less
    than flushed 1F1B steps; with --clip 0 the 2BW stream's time)."""
    return (delay.kind == TWO_BW and delay.profile == "pipedream" and not flushed_steps(delay)
            and stage == num_stages - 1)


@dataclass(frozen=True)
class Parallelism:
    """How a run is laid out over processes (module docstring).

    - ``schedule``: None, the trainer's single process; else a pipeline schedule of
      :data:`SCHEDULES` (``--schedule``), one process per stage, P = ``TrainConfig.stages``;
    - ``microbatches``: M, microbatches per optimizer step (``--microbatches``; None: P);
      pipedream streams one microbatch per step and does not read it;
    - ``dp``: D data-parallel replicas (``--dp``), each with batch_size / D rows of every step.
    """

    schedule: str | None = None
    microbatches: int | None = None
    dp: int = 1


def check_parallelism(par: Parallelism, *, delay: Delay, stages: int, steps: int, batch_size: int,
                      num_layers: int | None) -> None:
    """ValueError naming the option for a layout that cannot run the rest of the run:
    the schedule must run ``delay`` (:func:`check_schedule_runs`), M and P fit the schedule
    (:func:`check_schedule_args`), the mitigations' horizon fits it (:func:`check_sync_args`),
    D >= 1 and D x M divides the batch. Only for a pipeline layout (``schedule`` set); the
    trainer's default passes."""
    if par.schedule is None:
        if par.microbatches is not None or par.dp != 1:
            raise ValueError(f"TrainConfig.parallel: microbatches / dp need a pipeline schedule, got {par}")
        return
    if par.schedule not in SCHEDULES:
        raise ValueError(f"schedule (--schedule) must be one of {SCHEDULES}, got {par.schedule!r}")
    M = stages if par.microbatches is None else par.microbatches
    check_schedule_args(par.schedule, stages, M, steps, num_layers)
    check_schedule_runs(par.schedule, delay)
    check_sync_args(par.schedule, steps, delay.sync_start, delay.sync_cooldown)
    if isinstance(par.dp, bool) or not isinstance(par.dp, int) or par.dp < 1:
        raise ValueError(f"dp (--dp) must be an int >= 1, got {par.dp!r}")
    per_step = 1 if delay.stale_point else M   # pipedream: one microbatch per step
    if batch_size % (par.dp * per_step):
        raise ValueError(f"batch_size (--batch-size {batch_size}) must be divisible by --dp ({par.dp}) x "
                         f"--microbatches ({per_step})")


def check_schedule_args(schedule: str, num_stages: int, microbatches: int, steps: int,
                        num_layers: int | None = None) -> None:
    """Refuse impossible pipeline settings before any process starts (names the parameter)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ValueError(f"num_stages (--nproc-per-node) must be an int >= 1, got {num_stages!r}")
    if not isinstance(microbatches, int) or microbatches < 1:
        raise ValueError(f"microbatches must be an int >= 1, got {microbatches!r}")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be an int >= 1, got {steps!r}")
    if schedule == TWO_BW and microbatches < num_stages:
        raise ValueError(
            f"microbatches (M={microbatches}) must be >= the number of stages (P={num_stages}) "
            "for 2bw: otherwise step t+1's forwards start before step t-1's backwards end "
            "and two weight versions do not suffice")
    if num_layers is not None and num_stages > num_layers:
        raise ValueError(f"num_stages (P={num_stages}) exceeds the model's {num_layers} layers: "
                         "every stage needs at least one layer")


def check_sync_args(schedule: str, steps: int, sync_start: int = 0, sync_cooldown: int = 0) -> None:
    """--sync-start / --sync-cooldown: ints >= 0, for 2bw only (the delay's own rules,
    ``lmo.variants.Delay``, of the kind ``schedule`` runs), and the cool-down within the steps."""
    Delay(KIND_OF_SCHEDULE.get(schedule, schedule), None, sync_start, sync_cooldown)
    if sync_cooldown > steps:
        raise ValueError(f"sync_cooldown (--sync-cooldown {sync_cooldown}) exceeds steps ({steps})")

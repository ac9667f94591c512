"""The parallelism section of a run (:class:`Parallelism`, the field ``TrainConfig.parallel``):
how a run is laid out over processes, and the checks of a layout that need no process.

A run is one :class:`gpu_runs.recipe.TrainConfig`, whoever executes it. The trainer
(``gpu_runs.train``) runs it in one process: its section is the default ``Parallelism()``
(``schedule=None``). The pipeline (``python -m gpu_runs.pipeline``) runs it over
P x D processes with a schedule: ``Parallelism(schedule, microbatches, dp)``, and the
number of stages P is ``TrainConfig.stages`` (the same number the trainer's pipedream mode
reads). The schedule fixes the trainer mode it reproduces (:data:`MODE_OF_SCHEDULE`:
gpipe / 1f1b are sync, 2bw and pipedream the modes of the same names), so a pipeline run
and the trainer run with the same other fields have the same trajectory
(``tests/gpu_runs/test_pipeline_llama.py``).

In the spirit of torchtitan's job-config sections: a small frozen record, one field of
the run spec, its defaults the single-process case. The section is left out of the run's
JSON while it is the default (``TrainConfig.as_dict``), so trainer runs keep the identity
(config.json, checkpoint config, ``paper_figs`` cache key) they had before it existed.
"""
from __future__ import annotations

from dataclasses import dataclass

from lmo.variants import PIPEDREAM, SYNC, TWO_BW

#: the schedules and the trainer mode (lmo.variants.MODES) each one runs: gpipe and 1f1b
#: are synchronous, 2bw and pipedream are the variants of the same names
MODE_OF_SCHEDULE = {"gpipe": SYNC, "1f1b": SYNC, TWO_BW: TWO_BW, PIPEDREAM: PIPEDREAM}
SCHEDULES = tuple(MODE_OF_SCHEDULE)
SYNC_SCHEDULES = tuple(s for s, mode in MODE_OF_SCHEDULE.items() if mode == SYNC)


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


def check_parallelism(par: Parallelism, *, mode: str, stages: int, steps: int, batch_size: int,
                      sync_start: int, sync_cooldown: int, num_layers: int | None) -> None:
    """ValueError naming the option for a layout that cannot run the rest of the run:
    the schedule's mode must be ``mode``, M and P fit the schedule (:func:`check_schedule_args`),
    the mitigations fit it (:func:`check_sync_args`), D >= 1 and D x M divides the batch.
    Only for a pipeline layout (``schedule`` set); the trainer's default passes."""
    if par.schedule is None:
        if par.microbatches is not None or par.dp != 1:
            raise ValueError(f"TrainConfig.parallel: microbatches / dp need a pipeline schedule, got {par}")
        return
    if par.schedule not in SCHEDULES:
        raise ValueError(f"schedule (--schedule) must be one of {SCHEDULES}, got {par.schedule!r}")
    M = stages if par.microbatches is None else par.microbatches
    check_schedule_args(par.schedule, stages, M, steps, num_layers)
    check_sync_args(par.schedule, steps, sync_start, sync_cooldown)
    if MODE_OF_SCHEDULE[par.schedule] != mode:
        raise ValueError(f"TrainConfig.mode {mode!r} is not what --schedule {par.schedule} runs "
                         f"({MODE_OF_SCHEDULE[par.schedule]!r})")
    if isinstance(par.dp, bool) or not isinstance(par.dp, int) or par.dp < 1:
        raise ValueError(f"dp (--dp) must be an int >= 1, got {par.dp!r}")
    rows = par.dp * (1 if par.schedule == PIPEDREAM else M)
    if batch_size % rows:
        raise ValueError(f"batch_size (--batch-size {batch_size}) must be divisible by --dp ({par.dp}) x "
                         f"--microbatches ({1 if par.schedule == PIPEDREAM else M})")


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
    """--sync-start / --sync-cooldown: ints >= 0, for 2bw only (the other schedules are
    synchronous already, or, pipedream, have no flush to fall back to)."""
    for name, v in (("sync_start", sync_start), ("sync_cooldown", sync_cooldown)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name} (--{name.replace('_', '-')}) must be an int >= 0, got {v!r}")
    if (sync_start or sync_cooldown) and schedule != TWO_BW:
        raise ValueError(f"--sync-start / --sync-cooldown need --schedule 2bw, got {schedule!r} "
                         "(gpipe / 1f1b are synchronous at every step; pipedream has no flush)")
    if sync_cooldown > steps:
        raise ValueError(f"sync_cooldown (--sync-cooldown {sync_cooldown}) exceeds steps ({steps})")

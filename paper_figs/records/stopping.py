"""Ctrl-C during ``python -m paper_figs``: stop every run at once and say how to go on.

The terminal sends SIGINT to the whole process group. The training processes of the pool
ignore it (:func:`worker_signals`): the parent alone decides. On the first SIGINT it stops
queueing, terminates the workers (:func:`terminate`: SIGTERM, which a worker turns into an
exception so a checkpoint being written is abandoned cleanly, then SIGKILL for one that does
not exit within ``grace`` seconds), ignores further SIGINTs while it does, and raises
:class:`RunsInterrupted`, whose message is the one line the command prints
(:func:`summary`): how many runs finished (each is in the cache), which were interrupted and
the checkpoint step each resumes from, how many never started, and the command that
continues. No traceback, no worker left behind.
"""
from __future__ import annotations

import contextlib
import os
import signal
import time


class RunsInterrupted(KeyboardInterrupt):
    """Ctrl-C while runs trained; ``str(self)`` is what finished, what was interrupted, what
    never started (:func:`summary`)."""


class WorkerStopped(BaseException):
    """Raised in a training worker by the SIGTERM of :func:`terminate` (unwinds the trainer:
    a checkpoint being written is abandoned, its temporary files removed)."""


_busy = [False]


def _stop_worker(signum, frame):
    if _busy[0]:
        raise WorkerStopped
    os._exit(128 + signum)    # idle between runs: nothing to unwind


def worker_signals() -> None:
    """In a pool worker (its initializer): SIGINT ignored (the parent stops the workers),
    SIGTERM raises :class:`WorkerStopped` inside :func:`training`, else ends the process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)


@contextlib.contextmanager
def training():
    """The block in which a worker trains: a SIGTERM raises :class:`WorkerStopped` there
    (caught by the worker, which then exits without taking another run)."""
    _busy[0] = True
    try:
        yield
    except WorkerStopped:
        os._exit(128 + signal.SIGTERM)
    finally:
        _busy[0] = False


def ignoring_sigint():
    """Ignore SIGINT until the returned function is called (it restores the handler)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    return lambda: signal.signal(signal.SIGINT, previous)


def terminate(processes, grace: float = 10.0) -> None:
    """SIGTERM every process of ``processes`` (multiprocessing.Process), wait up to ``grace``
    seconds for all of them, then SIGKILL and reap those left."""
    processes = [p for p in processes if p.is_alive()]
    for p in processes:
        try:
            p.terminate()
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + grace
    for p in processes:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            try:
                os.kill(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.join(5.0)


def checkpoint_step(run_dir) -> int | None:
    """The step a run resumes from: its newest intact checkpoint's (what the trainer's
    ``--resume`` reads, :func:`gpu_runs.checkpoint.newest_intact`), None without one."""
    from gpu_runs.checkpoint import newest_intact
    newest = newest_intact(run_dir) if os.path.isdir(run_dir) else None
    return None if newest is None else newest[1]


def summary(finished: int, total: int, interrupted: list[tuple[str, int | None]], not_started: int) -> str:
    """'N of M runs finished (cached); interrupted: LABEL (resumes from its step-K checkpoint),
    LABEL (no checkpoint yet: starts over); K not started' (``interrupted``: (label, checkpoint
    step or None))."""
    parts = [f"{finished} of {total} run(s) finished (cached)"]
    if interrupted:
        parts.append("interrupted: " + ", ".join(
            f"{label} ({'no checkpoint yet: starts over' if step is None else f'resumes from its step-{step} checkpoint'})"
            for label, step in interrupted))
    if not_started:
        parts.append(f"{not_started} not started")
    return "; ".join(parts)

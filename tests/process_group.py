"""Helpers for the Ctrl-C tests: start a command in a process group of its own (as a
terminal's job), send the group SIGINT (what Ctrl-C does) once a condition holds, and list
the processes of the group still alive afterwards.

``SLOW_STEPS``: a PYTHONPATH entry whose ``sitecustomize`` makes every training step sleep
``SLOW_STEP_S`` seconds (``gpu_runs.data.Batcher.batch``), so that a real command is caught
in the middle of a run, not before or after it."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

SLOW_STEPS = str(Path(__file__).with_name("slow_steps"))
GUARD = 240.0   # hang guard, not a timing assertion


def start(cmd: list[str], slow_step_s: float = 0.0, **env) -> subprocess.Popen:
    e = dict(os.environ, OMP_NUM_THREADS="1", **env)
    if slow_step_s:
        e.update(SLOW_STEP_S=str(slow_step_s), PYTHONPATH=os.pathsep.join(
            [SLOW_STEPS, *filter(None, [os.environ.get("PYTHONPATH")])]))
    # SIGINT at its default in the child, as in a terminal's job: a test suite started in the
    # background (`make test &`, nohup) ignores SIGINT, its children inherit that, and Python
    # then installs no KeyboardInterrupt handler, so the Ctrl-C under test would be ignored
    return subprocess.Popen(cmd, start_new_session=True, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=e,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def interrupt_when(p: subprocess.Popen, ready, timeout: float = GUARD) -> tuple[str, str]:
    """Wait until ``ready()`` (or the process ended), send SIGINT to its process group, and
    return its (stdout, stderr) once it exits."""
    deadline = time.monotonic() + timeout
    while not ready() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert p.poll() is None, f"the command ended before it could be interrupted:\n{p.stderr.read()[-3000:]}"
    os.killpg(p.pid, signal.SIGINT)
    try:
        return p.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"still running {GUARD:.0f} s after Ctrl-C:\n{err[-3000:]}")


def survivors(pgid: int, settle: float = 5.0) -> list[str]:
    """'pid state command' of every process of group ``pgid`` still running (zombies, which
    have ended and only wait to be reaped, do not count); waits up to ``settle`` s for
    processes that are on their way out."""
    deadline = time.monotonic() + settle
    while True:
        alive = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            state, _, pgrp = stat[stat.rindex(")") + 2:].split()[:3]
            if int(pgrp) == pgid and state != "Z":
                alive.append(f"{d.name} {state} {cmd[:200]}")
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)

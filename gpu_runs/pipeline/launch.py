"""Start the ranks of ``gpu_runs.pipeline`` on one machine without torchrun (tests, the
benchmark): each rank gets torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT on a free port). ``launch_local`` / ``run_local`` start fresh
interpreters (``python -m gpu_runs.pipeline``); ``run_forked`` forks them from a process
that has torch imported already (POSIX; seconds faster per launch, for tests).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from gpu_runs.pipeline.worker import main


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_local(argv: list[str], nproc: int, timeout: float = 120.0, env: dict | None = None):
    """Start ``nproc`` ranks of this module as plain subprocesses with torchrun's
    environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT on a free port); returns the
    list of ``subprocess.Popen`` (for tests that kill one) after starting them."""
    port = free_port()
    procs = []
    for r in range(nproc):
        e = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc),
                 LOCAL_WORLD_SIZE=str(nproc), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                 OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
        e.update(env or {})
        procs.append(subprocess.Popen([sys.executable, "-m", "gpu_runs.pipeline", *argv], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def run_local(argv: list[str], nproc: int, timeout: float = 120.0, env: dict | None = None):
    """:func:`launch_local` and wait: list of (returncode, stdout, stderr) per rank."""
    procs = launch_local(argv, nproc, timeout, env)
    res = []
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            o, e = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        res.append((p.returncode, o, e))
    return res


def _forked_rank(argv, env, log_path):
    # A forked child must not enter the OpenMP pool the parent may have started (GNU
    # OpenMP deadlocks there): run the rank single-threaded.
    torch.set_num_threads(1)
    os.environ.update(env)
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)

    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc or 0)


def rank_logs() -> str:
    """A fresh folder for the ranks' log files in the system temp directory (``pipeline_*``);
    :func:`close_rank_logs` removes it."""
    return tempfile.mkdtemp(prefix="pipeline_")


def close_rank_logs(tmp: str, failed: bool) -> str | None:
    """Remove the rank-log folder ``tmp`` after a launch that succeeded; after a failure keep
    it and return a line saying where it is (None otherwise)."""
    if failed:
        return f"[gpu_runs.pipeline.launch] a rank failed: its logs are kept in {tmp}"
    shutil.rmtree(tmp, ignore_errors=True)
    return None


def run_forked(argv: list[str], nproc: int, timeout: float = 120.0, tmp: str | None = None):
    """Like :func:`run_local` but the ranks are ``fork``-ed from this process (which has
    already imported torch), skipping the interpreter start; POSIX only, for tests.
    Returns a list of (returncode, output) per rank. The ranks write their output into
    ``tmp`` (default: a ``pipeline_*`` folder in the system temp directory, removed after
    the launch unless a rank failed; then stderr says where it is)."""
    ctx = mp.get_context("fork")
    port = free_port()
    own = tmp is None
    tmp = tmp or rank_logs()
    procs = []
    for r in range(nproc):
        env = dict(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        p = ctx.Process(target=_forked_rank, args=(argv, env, os.path.join(tmp, f"rank{r}.out")))
        p.start()
        procs.append(p)
    deadline = time.monotonic() + timeout
    res = []
    for r, p in enumerate(procs):
        p.join(max(0.1, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()
        res.append((p.exitcode, Path(tmp, f"rank{r}.out").read_text()))
    if own and (note := close_rank_logs(tmp, any(rc != 0 for rc, _ in res))):
        print(note, file=sys.stderr, flush=True)
    return res

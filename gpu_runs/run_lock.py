"""One writer per run directory: an exclusive lock file that holds the writer's pid.

``with run_lock(out): ...`` creates ``out`` if needed, opens ``out/.lock`` and takes an
exclusive, non-blocking ``flock`` on it, then writes this process's pid into it. A second
writer on the same directory (another trainer, a pipeline rank, a sweep) is refused at
once with :class:`RunLockError`, naming the directory and the holder's pid. The kernel
drops the lock when its holder exits, SIGKILL included, so a killed run never leaves a
stale lock behind: the file stays (with the last holder's pid), the lock does not. A
holder that ends normally removes the file while it still holds the lock
(:func:`release` with the path); :func:`acquire` checks, once locked, that its file is
still the one at the path, so two writers can never both hold it.

A pipeline run has several writing processes; each takes its own file
(``lock_name(rank)``), rank 0 the same ``.lock`` as the trainer, so a trainer and a
pipeline, or two pipelines, cannot share a directory either.

The directory must be writable: an OS error (read-only file system, no permission, a file
in the way) is :class:`RunDirUnusable`, a message that says which directory and why.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from pathlib import Path

LOCK = ".lock"


class RunLockError(ValueError):
    """Another process writes to this run directory (the message names it and its pid)."""


class RunDirUnusable(ValueError):
    """The run directory cannot be created or written (the message gives the OS reason)."""


def lock_name(rank: int = 0) -> str:
    """The lock file of a writing process: ``.lock`` (trainer, pipeline rank 0), ``.lock.rank{r}``."""
    return LOCK if rank == 0 else f"{LOCK}.rank{rank}"


def _holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid else "a process that has not written its pid yet"


def acquire(out, rank: int = 0, _tries: int = 3) -> int:
    """Create ``out``, lock its lock file exclusively and write our pid; returns the open
    file descriptor (the lock lives as long as it is open: :func:`release`)."""
    out = Path(out)
    path = out / lock_name(rank)
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise RunDirUnusable(f"--out {out} cannot be used as a run directory: {e.strerror or e} "
                             f"({type(e).__name__}); nothing was started") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise RunLockError(f"--out {out} is in use by another run ({_holder(path)} holds {path}); "
                               f"wait for it to finish or choose another --out (nothing was written)") from None
        raise RunDirUnusable(f"--out {out}: cannot lock {path}: {e.strerror or e}") from None
    if not _still_linked(fd, path) and _tries > 1:   # its holder removed it as we opened it: a fresh one
        os.close(fd)
        return acquire(out, rank, _tries - 1)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as e:
        os.close(fd)
        raise RunDirUnusable(f"--out {out} is not writable: {e.strerror or e} ({type(e).__name__}); "
                             f"nothing was started") from None
    return fd


def _still_linked(fd: int, path: Path) -> bool:
    """Is the locked file still the one at ``path`` (not unlinked by a releasing holder)?"""
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def release(fd: int | None, path=None) -> None:
    """Drop the lock (closing the descriptor); None is a no-op. ``path``: the lock file,
    removed first while the lock is still held (a writer that opened it meanwhile sees it
    unlinked and takes a fresh one: :func:`acquire`), so a finished or refused run leaves no
    ``.lock`` behind."""
    if fd is None:
        return
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass
    os.close(fd)


@contextlib.contextmanager
def run_lock(out, rank: int = 0):
    """``acquire`` on entry, ``release`` on exit (exceptions included)."""
    fd = acquire(out, rank)
    try:
        yield fd
    finally:
        release(fd, Path(out) / lock_name(rank))

"""Ctrl-C in a training command: stop at once, keep the newest checkpoint, say how to resume.

A terminal's Ctrl-C sends SIGINT to every process of the foreground process group: the
trainer, every rank of a pipeline (torchrun forwards it too). What each command prints then
is one line (:func:`stopped_line`): where the newest intact checkpoint is, and the command
that continues the run (the trainer's: :func:`trainer_line`; a pipeline's, which finds its newest
complete set of stage checkpoints, is ``gpu_runs.pipeline.checkpoint.interrupted_line``: the
trainer imports no pipeline module) (:func:`resume_command`: the same command with ``--resume``). Nothing
new is written on the way out: a checkpoint being written when the signal came is abandoned
(its temporary files removed, :mod:`gpu_runs.verified_files`), so the newest intact one stays
what it was.

:class:`OnceInterrupt` is the pipeline ranks' SIGINT handler: the first SIGINT raises
KeyboardInterrupt, later ones are only counted, so a rank that is already stopping (a peer's
death reported by gloo, a checkpoint being abandoned) is never interrupted a second time and
always ends with its one line, never a traceback.
"""
from __future__ import annotations

import shlex
import signal
import sys

from gpu_runs import checkpoint


def resume_command(prefix: list[str], argv: list[str] | None) -> str:
    """``prefix + argv`` as a shell line, with ``--resume`` added when it is not there
    (``argv`` None: this process's arguments)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--resume" not in argv:
        argv.append("--resume")
    return shlex.join([*prefix, *argv])


def stopped_line(prog: str, where: str | None, command: str, restart: str) -> str:
    """The one line a command prints on Ctrl-C: ``where`` describes the newest intact
    checkpoint and ``command`` resumes from it; without one (None) ``restart`` says what to do."""
    if where is None:
        return f"{prog}: interrupted; no checkpoint to resume from: {restart}"
    return f"{prog}: interrupted; newest checkpoint {where}; resume with: {command}"


def trainer_line(out, argv: list[str] | None) -> str:
    """:func:`stopped_line` of ``python -m gpu_runs.train`` writing to ``out`` (None: no --out)."""
    prog = "python -m gpu_runs.train"
    if out is None:
        return f"{prog}: interrupted (no --out: nothing was saved)"
    newest = checkpoint.newest_intact(out)
    where = None if newest is None else f"{newest[0]} (step {newest[1]})"
    return stopped_line(prog, where, resume_command(["python", "-m", "gpu_runs.train"], argv),
                        f"start again with another --out, or remove {out}")


class OnceInterrupt:
    """SIGINT handler that raises KeyboardInterrupt the first time only (module docstring);
    ``seen`` says whether a SIGINT came."""

    def __init__(self):
        self.seen, self.previous = False, None

    def __call__(self, signum, frame):
        if not self.seen:
            self.seen = True
            raise KeyboardInterrupt

    def install(self) -> "OnceInterrupt":
        self.previous = signal.signal(signal.SIGINT, self)
        return self

    def restore(self) -> None:
        """The SIGINT handler from before :meth:`install`."""
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

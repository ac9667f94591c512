"""``python -m gpu_runs.pipeline.torchrun``: torchrun, quiet after a rank's own last line.

Every option and argument is torchrun's (``torch.distributed.run``)::

    python -m gpu_runs.pipeline.torchrun --nproc-per-node 2 -m gpu_runs.pipeline --model llama ...

A rank that refuses a run or is interrupted says so in one line (``refused: ...``,
``interrupted ...``) and exits 2 or 130. torchrun itself then logs that it stops the other
ranks and raises ``ChildFailedError`` / ``SignalException``, whose traceback repeats nothing
the rank's line did not say. Here those end the launcher with the rank's exit status
(:func:`exit_code`) and nothing more is printed; the launcher's own log is kept for its
errors only.
"""
from __future__ import annotations

import logging
import shutil
import signal
import sys
import tempfile

from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed import run as torch_run


def exit_code(e: BaseException) -> int:
    """The launcher's exit status for how it ended::

        ChildFailedError   the first failed rank's exit code (a rank killed by signal s: 128 + s)
        SignalException    128 + s, s the signal the launcher received (Ctrl-C: 130)
    """
    if isinstance(e, SignalException):
        return 128 + int(e.sigval)
    failures = getattr(e, "failures", {}) or {}
    codes = [f.exitcode for _, f in sorted(failures.items())]
    first = next((c for c in codes if c not in (None, 0, -signal.SIGTERM)), codes[0] if codes else 1)
    return 128 - first if first < 0 else first


def main(argv=None) -> int:
    """torchrun's ``main(argv)``; its own temporary folder (``torchelastic_*``) goes with it."""
    for name in ("torch.distributed.elastic", "torch.distributed.run"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    own, before = tempfile.mkdtemp(prefix="torchrun_"), tempfile.tempdir
    tempfile.tempdir = own       # this process's temporary files only (the ranks keep theirs)
    try:
        torch_run.main(argv)
    except (ChildFailedError, SignalException) as e:
        return exit_code(e)
    except KeyboardInterrupt:
        return 130
    finally:
        tempfile.tempdir = before
        shutil.rmtree(own, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fault injection into the trainer (issue 50), a property over where the fault lands.

For a random k, one fault is injected into a tiny run (5 steps, batch 2, seq 16):

- ``enospc`` / ``eio``: the k-th file opened for writing (any file: config, log, checkpoint,
  sidecar, result; through ``open`` or ``os.fdopen``) takes half of its first write, then the
  disk is full (ENOSPC) or fails (EIO);
- ``replace``: the k-th ``os.replace`` fails with EIO;
- ``kill``: the process dies at the k-th ``os.replace`` (nothing after it runs in the writer:
  its temporary file stays, as after SIGKILL between the fsync and the rename);
- ``sigint``: Ctrl-C at the k-th step.

Properties:

1. during the fault nothing that existed is lost or truncated: every file that was in the
   run directory when the fault struck is still there and whole (config.json and
   result.json parse, log.jsonl is a prefix of the uninterrupted run's log, every
   checkpoint passes its sha256 check), and no temporary file is left but a killed writer's
   (which the next run, holding the lock, removes);
2. a failed run ends in one line (rc 2 or 130, no traceback);
3. repeating the same command once the fault is gone either finishes, or stops with one
   line naming what to do (``--resume``), which then finishes; either way the log and the
   final parameters are bit-identical to an uninterrupted run's, and no temporary file or
   lock is left.

A writer that writes a file in place instead of atomically fails property 1 (a full disk
truncates the file it was rewriting).
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from fault_files import assert_whole, fail_writes, in_place, log_records, temps

import gpu_runs.train as train_mod
from gpu_runs import verified_files
from gpu_runs.train import main

ARGV = ["--steps", "5", "--batch-size", "2", "--seq-len", "16", "--eval-every", "2", "--eval-batches", "1",
        "--log-every", "1"]
#: upper bound of k: a 5-step run opens about 17 files for writing and replaces as many
MAX_K = 20


class Killed(BaseException):
    """The process died here (a SIGKILL as the files see it)."""


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted run: its log and final parameters."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "run"
        assert main([*ARGV, "--out", str(out)]) == 0
        blob = torch.load(out / "ckpt.pt", weights_only=True)
        yield log_records(out / "log.jsonl"), blob["params"], json.loads((out / "config.json").read_text())


@contextlib.contextmanager
def inject(kind: str, k: int, out: Path, seen: dict):
    """The fault ``kind`` at the k-th occasion (module docstring); ``seen`` gets a snapshot of
    the run directory's files (name -> bytes) at the moment it strikes."""
    count = [0]

    def strike() -> bool:
        count[0] += 1
        if count[0] != k:
            return False
        seen.update({p.name: p.read_bytes() for p in out.glob("*") if p.is_file()})
        return True

    real_replace, real_lag = os.replace, train_mod.loss_and_grads
    mp = pytest.MonkeyPatch()
    if kind in ("enospc", "eio"):
        fail_writes(mp, kind, strike)
    elif kind in ("replace", "kill"):
        def replace(src, dst, *a, **kw):
            if strike():
                if kind == "kill":
                    raise Killed()
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
            return real_replace(src, dst, *a, **kw)
        mp.setattr(os, "replace", replace)
    elif kind == "sigint":
        def lag(*a, **kw):
            if strike():
                raise KeyboardInterrupt
            return real_lag(*a, **kw)
        mp.setattr(train_mod, "loss_and_grads", lag)
    try:
        yield count
    finally:
        mp.undo()


@settings(max_examples=int(os.environ.get("FAULT_EXAMPLES", "10")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # capsys is read out per example
@given(kind=st.sampled_from(["enospc", "eio", "replace", "kill", "sigint"]), k=st.integers(1, MAX_K))
def test_a_fault_anywhere_loses_nothing_and_the_same_command_finishes_the_run(reference, capsys, kind, k):
    check_fault(reference, capsys, kind, k)


def test_the_property_fails_when_one_write_is_not_atomic(reference, capsys, monkeypatch):
    """The property test can fail: with the package's atomic write (config.json, log.jsonl,
    result.json) replaced by an in-place one, a full disk while the log is rewritten (the 3rd
    file opened: config.json, the log's first record, then its rewrite) truncates the log."""
    monkeypatch.setattr(verified_files, "atomic_write", in_place)
    with pytest.raises(AssertionError, match="log.jsonl is not"):
        check_fault(reference, capsys, "enospc", 3)


def check_fault(reference, capsys, kind: str, k: int) -> None:
    """The module's properties for one fault."""
    ref_log, ref_params, ref_config = reference
    k = min(k, 5) if kind == "sigint" else k
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "run"
        argv = [*ARGV, "--out", str(out)]
        seen: dict = {}
        capsys.readouterr()
        try:
            with inject(kind, k, out, seen):
                rc = main(argv)
        except Killed:
            rc = None
        err = capsys.readouterr().err.strip()
        if seen:                                               # the fault struck
            if rc is not None:                                 # property 2: one line
                assert rc in (2, 130), (rc, err)
                assert "Traceback" not in err and len(err.splitlines()) == 1, err
            for name in seen:                                  # property 1 (the run's own lock goes with it)
                if verified_files.is_temp_name(name) or name == ".lock":
                    continue
                if name.endswith(verified_files.SUFFIX) and name[:-len(verified_files.SUFFIX)] not in seen:
                    continue        # the sidecar of a file being written when the fault struck: part of that write
                assert_whole(out, name, ref_log, ref_config, killed=kind == "kill")
            # a killed checkpoint writer leaves its file's and its sidecar's temporary files
            assert len(temps(out)) <= (2 if kind == "kill" else 0), temps(out)
        # property 3: the same command, the fault gone
        rc = main(argv)
        err = capsys.readouterr().err.strip()
        if rc == 2:
            assert len(err.splitlines()) == 1 and "--resume" in err, err
            rc = main([*argv, "--resume"])
        assert rc == 0, capsys.readouterr().err
        assert log_records(out / "log.jsonl") == ref_log
        params = torch.load(out / "ckpt.pt", weights_only=True)["params"]
        assert params.keys() == ref_params.keys()
        assert all(torch.equal(params[n], ref_params[n]) for n in params)
        assert not temps(out) and not (out / ".lock").exists()
        shutil.rmtree(out)

"""Fault injection into a 2-rank pipeline (issue 50), the trainer's property
(tests/gpu_runs/test_fault_injection.py) over where the fault lands.

A tiny Llama pipeline (2 stages on gloo, schedule 2bw, 4 steps, a periodic checkpoint set at
step 2, the final set at 4) runs in ranks forked from this process (``launch.run_forked``),
so a fault planted here with monkeypatch is in every rank; it strikes in one rank ``r`` at
its k-th occasion:

- ``enospc`` / ``eio``: the k-th file rank r opens for writing takes half of its first write,
  then the disk is full (ENOSPC) or fails (EIO);
- ``replace``: rank r's k-th ``os.replace`` fails with EIO;
- ``kill``: rank r is SIGKILL-ed at its k-th ``os.replace`` (its temporary files stay);
- ``sigint``: Ctrl-C (SIGINT to every rank) after the update of step k.

Properties:

1. during the fault nothing that existed is lost or truncated: every file in ``--out`` when
   the fault struck is still there and whole (config.json is the run's, log.jsonl a prefix of
   the uninterrupted run's log, every checkpoint passes its sha256 check; the one exception is
   a kill between a checkpoint's two renames, which its check detects); no temporary file is
   left but a killed writer's, and no rank prints a traceback;
2. repeating the same command once the fault is gone either finishes, or is refused in one
   line naming ``--resume``, which then finishes; either way the log and every stage's final
   parameters are bit-identical to an uninterrupted run's, and no temporary file or lock is
   left (a killed writer's temporary files go with the next run that holds the rank's lock).

``PIPELINE_FAULT_EXAMPLES`` (default 2) sets how many faults one test run draws; the
``slow`` test draws 25.
"""
from __future__ import annotations

import builtins
import contextlib
import errno
import json
import os
import pickle
import signal
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from fault_files import assert_whole, fail_writes, in_place, log_records, temps

from gpu_runs import run_lock, verified_files
from gpu_runs.pipeline import worker
from gpu_runs.pipeline.args import build_parser
from gpu_runs.pipeline.checkpoint import stage_file
from gpu_runs.pipeline.launch import run_forked

ARGV = ["--model", "llama", "--schedule", "2bw", "--steps", "4", "--batch-size", "2", "--seq-len", "16",
        "--eval-every", "2", "--eval-batches", "1", "--quiet", "--timeout", "20"]
P = 2
STEPS = 4
#: files each rank opens for writing (and renames) in a whole run: rank 0 two checkpoints and
#: their sidecars; rank 1 those, config.json and the log, rewritten at each of its records
WRITES = {0: 4, 1: 10}
GUARD = 120   # hang guard for a launch, not a timing assertion
KINDS = ("enospc", "eio", "replace", "kill", "sigint")
DROP = ("step_time", "dp_allreduce_time")     # the log's timings, the only fields that differ between runs


def _params(out: Path) -> list[dict]:
    return [torch.load(stage_file(out, s), weights_only=True)["params"] for s in range(P)]


def _launch(out: Path, logs: Path, *extra: str) -> list[tuple[int, str]]:
    logs.mkdir(exist_ok=True)
    return run_forked([*ARGV, "--out", str(out), *extra], P, timeout=GUARD, tmp=str(logs))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run: its log, every stage's final parameters and its config.json.
    Checking the options once here also imports what torch loads lazily (seconds), so that
    the ranks forked later start without it."""
    worker.prepare(build_parser().parse_args(ARGV), P)
    d = tmp_path_factory.mktemp("reference")
    res = _launch(d / "run", d / "logs")
    assert all(rc == 0 for rc, _ in res), res
    return log_records(d / "run" / "log.jsonl", DROP), _params(d / "run"), json.loads((d / "run" / "config.json").read_text())


@contextlib.contextmanager
def inject(kind: str, rank: int, k: int, out: Path, snap: Path):
    """Plant the fault (module docstring) in every rank forked while it is active; the rank it
    strikes writes a snapshot of ``out`` (name -> bytes) at that moment into ``snap``."""
    count = [0]
    real_open, real_replace, real_on_action = builtins.open, os.replace, worker.StageBooks.on_action

    def strike() -> bool:
        if os.environ.get("RANK") != str(rank):
            return False
        count[0] += 1
        if count[0] != k:
            return False
        files = {p.name: p.read_bytes() for p in out.glob("*") if p.is_file()}
        with real_open(snap, "wb") as f:
            pickle.dump(files, f)
        return True

    mp = pytest.MonkeyPatch()
    if kind in ("enospc", "eio"):
        fail_writes(mp, kind, strike)
    elif kind in ("replace", "kill"):
        def replace(src, dst, *a, **kw):
            if strike():
                if kind == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
            return real_replace(src, dst, *a, **kw)
        mp.setattr(os, "replace", replace)
    else:
        def on_action(self, a):
            real_on_action(self, a)
            if a.kind == "U" and a.step + 1 == k:     # Ctrl-C reaches every rank after step k
                if os.environ.get("RANK") == str(rank):
                    files = {p.name: p.read_bytes() for p in out.glob("*") if p.is_file()}
                    with real_open(snap, "wb") as f:
                        pickle.dump(files, f)
                os.kill(os.getpid(), signal.SIGINT)
        mp.setattr(worker.StageBooks, "on_action", on_action)
    try:
        yield
    finally:
        mp.undo()


def check_fault(reference, tmp: Path, kind: str, rank: int, k: int) -> None:
    """The module's properties for one fault."""
    ref_log, ref_params, ref_config = reference
    out, snap = tmp / "run", tmp / "snapshot.pkl"
    with inject(kind, rank, k, out, snap):
        res = _launch(out, tmp / "logs")
    outputs = "\n".join(o for _, o in res)
    if snap.exists():                                              # the fault struck
        assert any(rc != 0 for rc, _ in res), res
        if kind != "kill":
            assert "Traceback" not in outputs, outputs
        if kind in ("enospc", "eio"):
            assert os.strerror(errno.ENOSPC if kind == "enospc" else errno.EIO) in outputs, outputs
        seen = pickle.loads(snap.read_bytes())
        for name in seen:                                          # property 1
            if verified_files.is_temp_name(name) or name.startswith(run_lock.LOCK):
                continue
            if name.endswith(verified_files.SUFFIX) and name[:-len(verified_files.SUFFIX)] not in seen:
                continue        # the sidecar of a file being written when the fault struck: part of that write
            assert_whole(out, name, ref_log, ref_config, killed=kind == "kill", read_log=lambda f: log_records(f, DROP))
        assert len(temps(out)) <= (2 if kind == "kill" else 0), temps(out)
    # property 2: the same command, the fault gone
    res = _launch(out, tmp / "logs2")
    if any(rc != 0 for rc, _ in res):
        said = res[0][1].strip().splitlines()
        assert len(said) == 1 and "refused:" in said[0] and "--resume" in said[0], res
        res = _launch(out, tmp / "logs3", "--resume")
    assert all(rc == 0 for rc, _ in res), res
    assert log_records(out / "log.jsonl", DROP) == ref_log
    for got, want in zip(_params(out), ref_params):
        assert got.keys() == want.keys() and all(torch.equal(got[n], want[n]) for n in got)
    assert not temps(out), temps(out)
    assert not list(out.glob(run_lock.LOCK + "*"))


def test_the_property_fails_when_one_write_is_not_atomic(reference, tmp_path, monkeypatch):
    """The property test can fail: with the atomic write of config.json and the log replaced by
    an in-place one (in every rank), a full disk while rank 1 rewrites the log (its 3rd file:
    the log's first record, config.json, then the log again) truncates it."""
    monkeypatch.setattr(verified_files, "atomic_write", in_place)
    with pytest.raises(AssertionError, match="log.jsonl is not whole"):
        check_fault(reference, tmp_path, "enospc", 1, 3)


def faults():
    """(kind, rank, k): k within the rank's writes (a step for Ctrl-C)."""
    return st.tuples(st.sampled_from(KINDS), st.integers(0, P - 1)).flatmap(lambda kr: st.tuples(
        st.just(kr[0]), st.just(kr[1]),
        st.integers(1, STEPS - 1) if kr[0] == "sigint" else st.integers(1, WRITES[kr[1]])))


def _run(reference, tmp_path_factory, fault):
    kind, rank, k = fault
    check_fault(reference, tmp_path_factory.mktemp(f"{kind}{rank}_{k}"), kind, rank, k)


@settings(max_examples=int(os.environ.get("PIPELINE_FAULT_EXAMPLES", "2")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fault=faults())
def test_a_fault_in_a_pipeline_rank_loses_nothing_and_the_same_command_finishes(reference, tmp_path_factory, fault):
    _run(reference, tmp_path_factory, fault)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fault=faults())
def test_many_faults_in_pipeline_ranks(reference, tmp_path_factory, fault):
    _run(reference, tmp_path_factory, fault)

"""Fault injection into the main job (issue 50): ``run_profile`` on the micro profile, Figure 3
only, with the fake trainer (tests/paper_figs/paper_figs_fakes.py), the trainer's and the
pipeline's property over where the fault lands:

- ``enospc`` / ``eio``: the k-th file the job opens for writing (a run's cache record, a
  figure, a page, the CSVs, REPORT.md) takes half of its first write, then fails;
- ``replace``: the job's k-th ``os.replace`` fails with EIO;
- ``sigint``: Ctrl-C (KeyboardInterrupt) in the k-th run.

Properties:

1. the first failed write stops the job: the command's error (``DiskFailed`` or the disk's
   OSError, which ``paper_figs.cli`` prints as one line) comes out of ``run_profile`` and no
   file is opened for writing after it (no figure, page or REPORT.md);
2. nothing that existed when the fault struck is lost or truncated (every cache record
   parses), and no temporary file is left anywhere under ``--out``;
3. the same command once the fault is gone finishes, with the same runs and curves
   (curves.csv, byte for byte) as an uninterrupted job.

Each fault costs a Figure 3 job or two (10-20 s here), so both tests are ``slow``
(``make test PYTEST_ARGS="-m slow"``); the trainer's and the pipeline's own property tests
run in the default suite.
"""
from __future__ import annotations

import builtins
import contextlib
import errno
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from fault_files import FaultyFile, temps, writing
from paper_figs_fakes import FailingAt, FakeTrainer, fake_deps

import paper_figs.pipeline as pipeline_mod
import paper_figs.records.runs as runs_mod
from paper_figs.pipeline import run_profile
from paper_figs.records.kept import KeptStore
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import DiskFailed, disk_error

pytestmark = pytest.mark.slow

#: writes of a whole Figure 3 job on the micro profile: its runs' cache records, the figure's
#: png / pdf, its page, the CSVs and REPORT.md
WRITES = 30
RUNS = 12


def interrupted_at(k: int) -> FailingAt:
    """The fake trainer, Ctrl-C-ed in its k-th run."""
    return FailingAt(k, lambda cfg: KeyboardInterrupt())


def job(out: Path, trainer=None, kept: Path | None = None) -> dict:
    return run_profile(get_profile("micro"), out, only=["fig3"], deps=fake_deps(trainer or FakeTrainer()),
                       log=lambda s: None, kept=KeptStore(kept or out.parent / "no_kept"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "figs"
    job(out)
    return sorted(p.name for p in (out / "cache").glob("*.json")), (out / "curves.csv").read_bytes()


@contextlib.contextmanager
def inject(kind: str, k: int, out: Path, where: str = ""):
    """The fault at the k-th write (of a path containing ``where``); yields a dict that gets
    ``seen`` (the files under ``out`` when it struck) and ``after`` (writes opened after it)."""
    state = {"count": 0, "seen": None, "after": []}
    real_open, real_fdopen, real_replace = builtins.open, os.fdopen, os.replace

    def strike(path) -> bool:
        if state["seen"] is not None:
            return False
        if where not in str(path):
            return False
        state["count"] += 1
        if state["count"] != k:
            return False
        state["seen"] = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        return True

    mp = pytest.MonkeyPatch()
    if kind in ("enospc", "eio"):
        err = errno.ENOSPC if kind == "enospc" else errno.EIO

        def opener(real, fd_paths):
            def f(file, mode="r", *a, **kw):
                h = real(file, mode, *a, **kw)
                if not writing(mode, update=False):
                    return h
                path = getattr(h, "name", file) if fd_paths else file
                if state["seen"] is not None:
                    state["after"].append(str(path))
                return FaultyFile(h, err) if strike(path) else h
            return f
        mp.setattr(builtins, "open", opener(real_open, False))
        mp.setattr(os, "fdopen", opener(real_fdopen, True))
    elif kind == "replace":
        def replace(src, dst, *a, **kw):
            if state["seen"] is not None:
                state["after"].append(str(dst))
            if strike(dst):
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(dst))
            return real_replace(src, dst, *a, **kw)
        mp.setattr(os, "replace", replace)
    try:
        yield state
    finally:
        mp.undo()


def check_fault(reference, tmp: Path, kind: str, k: int, where: str = "") -> None:
    ref_keys, ref_curves = reference
    out = tmp / "figs"
    stopped = None
    with inject(kind, k, out, where) as state:
        try:
            job(out, interrupted_at(k) if kind == "sigint" else None)
        except (DiskFailed, OSError, KeyboardInterrupt) as e:
            stopped = e
    if kind == "sigint":
        assert k > RUNS or isinstance(stopped, KeyboardInterrupt), stopped
    elif state["seen"] is not None:                     # property 1: the job stopped at the failed write
        assert stopped is not None and (isinstance(stopped, DiskFailed) or disk_error(stopped)), \
            f"the job went on after a failed write: {stopped!r}"
        assert not state["after"], f"written after the failed write: {state['after']}"
        assert not (out / "REPORT.md").exists() or "REPORT.md" in state["seen"]
        for name, data in state["seen"].items():        # property 2
            if name.endswith(".json") and name.startswith("cache/"):
                try:
                    json.loads((out / name).read_text())
                except (OSError, ValueError) as e:
                    raise AssertionError(f"{name} existed before the fault and is not whole: {e}") from None
    assert not temps(out, deep=True), temps(out, deep=True)
    job(out)                                            # property 3: the same command, the fault gone
    assert sorted(p.name for p in (out / "cache").glob("*.json")) == ref_keys
    assert (out / "curves.csv").read_bytes() == ref_curves
    assert (out / "REPORT.md").exists() and not temps(out, deep=True)


@settings(max_examples=int(os.environ.get("MAIN_JOB_FAULT_EXAMPLES", "6")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["enospc", "eio", "replace", "sigint"]), k=st.integers(1, WRITES))
def test_a_fault_anywhere_stops_the_main_job_and_the_same_command_finishes_it(reference, tmp_path_factory, kind, k):
    if kind == "sigint":
        k = 1 + (k - 1) % RUNS
    check_fault(reference, tmp_path_factory.mktemp(f"{kind}{k}"), kind, k)


def test_the_property_fails_when_the_job_ignores_a_failed_write(reference, tmp_path, monkeypatch):
    """The property can fail: with the figures' failed write contained like any broken figure
    (``disk_error`` answering no), the job goes on after a full disk at Figure 3's png."""
    monkeypatch.setattr(pipeline_mod, "disk_error", lambda e: False)
    monkeypatch.setattr(runs_mod, "disk_error", lambda e: False)
    with pytest.raises(AssertionError, match="went on after a failed write|written after the failed write"):
        check_fault(reference, tmp_path, "enospc", 1, where="figures/")

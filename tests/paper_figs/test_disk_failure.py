"""Issue 50: the main job stops at the first write that fails for want of space or a failing
disk, in one line, with nothing after it run (no verify, theory or bench for minutes, no half
REPORT.md); the finished runs stay cached."""
from __future__ import annotations

import errno

import pytest
from paper_figs_fakes import FailingAt, fake_deps

from paper_figs import cli
from paper_figs.pipeline import run_profile
from paper_figs.records.kept import KeptStore
from paper_figs.records.profiles import get_profile
from paper_figs.records.runs import DiskFailed


def full_disk_at(k: int) -> FailingAt:
    """A trainer whose k-th run fails to write its checkpoint: no space left."""
    return FailingAt(k, lambda cfg: OSError(errno.ENOSPC, "No space left on device", str(cfg.out)))


@pytest.mark.parametrize("k", [1, 3])
def test_the_first_failed_write_stops_the_job(tmp_path, k):
    trainer, called = full_disk_at(k), []
    deps = fake_deps(trainer, run_report=lambda *a, **kw: called.append("verify"))
    with pytest.raises(DiskFailed, match="No space left"):
        run_profile(get_profile("micro"), tmp_path, only=["fig3", "theory"], deps=deps, log=lambda s: None,
                    kept=KeptStore(tmp_path / "none"))
    assert trainer.calls == k and not called              # no later run, no verify after it
    assert not (tmp_path / "REPORT.md").exists()           # no report written on a failed disk
    assert len(list((tmp_path / "cache").glob("*.json"))) == k - 1   # what finished is cached


def test_the_command_says_it_in_one_line(tmp_path, monkeypatch, capsys):
    def stop(*a, **kw):
        raise DiskFailed("a write failed while training x (OSError: No space left on device); the job stopped")
    monkeypatch.setattr("paper_figs.pipeline.run_profile", stop)
    rc = cli.main(["--profile", "micro", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].startswith("python -m paper_figs: error: a write failed")

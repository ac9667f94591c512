"""A run that dies before its first checkpoint is not stranded, and a refusal leaves nothing
it created behind: no lock, no directory, no temporary file (issue 50)."""
import errno
import json

import pytest

from gpu_runs import verified_files
from gpu_runs.train import main

ARGV = ["--steps", "4", "--batch-size", "2", "--seq-len", "16", "--eval-every", "2", "--eval-batches", "1"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def _full_disk_at_first_checkpoint(monkeypatch):
    real = verified_files._write_temp

    def full(path, write):
        if path.name.startswith("ckpt"):
            raise verified_files._not_written(path, OSError(errno.ENOSPC, "No space left on device"))
        return real(path, write)
    monkeypatch.setattr(verified_files, "_write_temp", full)


@pytest.mark.parametrize("again", [[], ["--resume"]])
def test_a_run_that_died_before_its_first_checkpoint_continues(tmp_path, monkeypatch, capsys, again):
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _full_disk_at_first_checkpoint(m)
        assert main([*ARGV, "--out", str(out)]) == 2
    err = _one_line(capsys)
    assert "No space left" in err and "then run the same command" in err and "--resume" not in err
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "log.jsonl"]     # no lock, no temp
    assert main([*ARGV, "--out", str(out), *again]) == 0                             # space freed
    assert "restarting it from step 0" in capsys.readouterr().err
    whole = tmp_path / "whole"
    assert main([*ARGV, "--out", str(whole)]) == 0
    log = lambda d: [{k: v for k, v in r.items() if k != "step_time"} for r in
                     map(json.loads, (d / "log.jsonl").read_text().splitlines())]
    assert log(out) == log(whole)


def test_another_configuration_is_still_refused(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _full_disk_at_first_checkpoint(m)
        assert main([*ARGV, "--out", str(out)]) == 2
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    assert main([*ARGV, "--seed", "1", "--out", str(out)]) == 2
    assert "already holds a run" in _one_line(capsys)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_refused_resume_into_a_missing_directory_creates_nothing(tmp_path, capsys):
    out = tmp_path / "nowhere"
    assert main([*ARGV, "--out", str(out), "--resume"]) == 2
    assert "no checkpoint" in _one_line(capsys)
    assert not out.exists()


def test_a_killed_writers_temporary_files_go_even_when_the_resume_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".ckpt_step2.pt.ab12cd34.tmp").write_bytes(b"half a checkpoint")      # what kill -9 leaves
    (out / ".ckpt_step2.pt.sha256.zz99yy88.tmp").write_bytes(b"")
    (out / "notes.txt").write_text("mine")                                           # not ours: kept
    assert main([*ARGV, "--out", str(out), "--resume"]) == 2
    _one_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_finished_run_leaves_no_lock(tmp_path):
    out = tmp_path / "run"
    assert main([*ARGV, "--out", str(out)]) == 0
    assert not (out / ".lock").exists()

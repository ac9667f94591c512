"""The trainer's run directory under misuse (issue 30): one writer per directory, atomic
checkpoints with unique temporary names, the newest N kept, a corrupted ckpt.pt falling
back to the newest complete one, OS errors as one line before any work, and --resume of
a finished run changing nothing."""
import errno
import json
import os
import pytest
import torch

import gpu_runs.checkpoint as ckpt
import gpu_runs.train as train_mod
from gpu_runs import run_lock
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import main, train

FAST = dict(config="tiny", steps=4, batch_size=4, seq_len=16, eval_every=1, eval_batches=1, log_every=1)
ARGV = ["--steps", "4", "--batch-size", "4", "--seq-len", "16", "--eval-every", "1", "--eval-batches", "1"]


def _err_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_second_writer_refused_with_the_holders_pid(tmp_path, capsys):
    out = tmp_path / "run"
    fd = run_lock.acquire(out)        # another run holds the directory
    try:
        assert main([*ARGV, "--out", str(out)]) == 2
        err = _err_line(capsys)
        assert "in use by another run" in err and f"pid {os.getpid()}" in err
        assert sorted(p.name for p in out.iterdir()) == [".lock"]      # nothing written
    finally:
        run_lock.release(fd)
    assert main([*ARGV, "--out", str(out)]) == 0                      # released: usable again


def test_lock_is_released_when_the_run_ends(tmp_path):
    out = tmp_path / "run"
    train(TrainConfig(**FAST, out=str(out)), progress=False)
    run_lock.release(run_lock.acquire(out))                            # free again


def test_checkpoint_temporary_names_are_unique_and_synced(tmp_path, monkeypatch):
    (tmp_path / "ckpt.tmp").mkdir()            # the old fixed temporary name, taken by another writer
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    ckpt.save_checkpoint(tmp_path / "ckpt.pt", {"x": torch.ones(2)})
    ckpt.save_checkpoint(tmp_path / "ckpt.pt", {"x": torch.zeros(2)})
    assert torch.equal(torch.load(tmp_path / "ckpt.pt", weights_only=True)["x"], torch.zeros(2))
    assert synced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt", "ckpt.pt.sha256", "ckpt.tmp"]   # no leftovers


def test_trainer_keeps_the_newest_checkpoints(tmp_path):
    out = tmp_path / "run"
    train(TrainConfig(**dict(FAST, steps=6), out=str(out)), progress=False, keep_ckpts=3)
    assert ckpt.kept_steps(out) == [4, 5, 6]
    assert torch.load(out / "ckpt.pt", weights_only=True)["step"] == 6


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage"])
def test_corrupted_checkpoint_falls_back_to_the_newest_complete_one(tmp_path, capsys, damage):
    whole = train(TrainConfig(**FAST), progress=False)
    out = tmp_path / "run"
    train(TrainConfig(**FAST, out=str(out)), progress=False)
    (out / "result.json").unlink()
    f = out / "ckpt.pt"                 # the same file as ckpt_step4.pt: both are damaged
    data = f.read_bytes()
    with open(f, "r+b") as h:           # in place, as a crash or a bad disk would
        h.truncate(0 if damage == "empty" else len(data) // 2)
        if damage == "garbage":
            h.seek(0)
            h.write(os.urandom(len(data) // 2))
    capsys.readouterr()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 0
    io = capsys.readouterr()
    assert "skipped unreadable checkpoints" in io.err and "ckpt_step3.pt" in io.err
    assert "resumed at step 3" in io.out
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3, 4]
    assert [r["val_loss"] for r in log] == [r["val_loss"] for r in whole.log]


def test_no_complete_checkpoint_is_one_line(tmp_path, capsys):
    out = tmp_path / "run"
    train(TrainConfig(**FAST, out=str(out)), progress=False, keep_ckpts=1)
    (out / "ckpt.pt").write_bytes(b"garbage")
    capsys.readouterr()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 2
    assert "no complete checkpoint" in _err_line(capsys)


def test_unusable_out_refused_before_data_and_model(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(train_mod, "get_corpus", lambda *a: pytest.fail("data loaded before --out was checked"))
    assert main([*ARGV, "--out", str(tmp_path / "file" / "run")]) == 2
    assert "cannot be used as a run directory" in _err_line(capsys)


def test_read_only_out_is_one_line(tmp_path, monkeypatch, capsys):
    real = os.open

    def read_only(path, *a, **kw):
        if str(path).endswith(".lock"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(os, "open", read_only)
    monkeypatch.setattr(train_mod, "get_corpus", lambda *a: pytest.fail("data loaded before --out was checked"))
    assert main([*ARGV, "--out", str(tmp_path / "run")]) == 2
    assert "Read-only file system" in _err_line(capsys)


def test_resume_of_a_finished_run_changes_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*ARGV, "--out", str(out)]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 0
    assert "finished already" in capsys.readouterr().out
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert after == before
    assert json.loads(after["result.json"])["tokens_per_s"] > 0

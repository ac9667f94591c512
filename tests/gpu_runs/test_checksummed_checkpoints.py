"""Checksummed checkpoints (issue 39, item 2): every checkpoint carries a sha256 sidecar
written with it; resume verifies it and falls back to the newest intact checkpoint, naming
what it skipped; damage that keeps every tensor finite is caught too; a write that fails
(a full disk) is one line naming the file and the cause, replaces nothing and leaves no
temporary file; checkpoints get the permissions of the other run files; torch's advice to
load with weights_only=False is never passed on."""
import errno
import json
import os
import shutil
import subprocess

import numpy as np
import pytest
import torch

from gpu_runs import verified_files
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import main, train

FAST = dict(config="tiny", steps=4, batch_size=4, seq_len=16, eval_every=1, eval_batches=1, log_every=1)
ARGV = ["--steps", "4", "--batch-size", "4", "--seq-len", "16", "--eval-every", "1", "--eval-batches", "1"]


def _one_line(err: str) -> str:
    err = err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


# ----------------------------------------------------------------------------- the module
def test_sidecar_is_sha256sum_format_and_checks(tmp_path):
    p = tmp_path / "a.pt"
    digest = verified_files.save(p, {"x": torch.arange(5.0)})
    assert (tmp_path / "a.pt.sha256").read_text() == f"{digest}  a.pt\n"
    assert verified_files.check(p) is None
    if shutil.which("sha256sum"):     # an independent implementation agrees
        ok = subprocess.run(["sha256sum", "-c", "a.pt.sha256"], cwd=tmp_path, capture_output=True, text=True)
        assert ok.returncode == 0 and "a.pt: OK" in ok.stdout
    assert torch.equal(verified_files.load(p)["x"], torch.arange(5.0))


def test_checkpoints_get_the_permissions_of_other_files(tmp_path):
    old = os.umask(0o022)
    try:
        verified_files.save(tmp_path / "a.pt", {"x": torch.ones(1)})
        (tmp_path / "plain.json").write_text("{}")
    finally:
        os.umask(old)
    plain = (tmp_path / "plain.json").stat().st_mode & 0o777
    assert plain == 0o644
    assert (tmp_path / "a.pt").stat().st_mode & 0o777 == plain
    assert (tmp_path / "a.pt.sha256").stat().st_mode & 0o777 == plain


def test_a_file_without_sidecar_loads_unverified_and_says_so(tmp_path):
    p = tmp_path / "old.pt"
    torch.save({"x": torch.ones(2)}, p)          # written before checksums existed
    heard = []
    assert verified_files.check(p) == verified_files.UNVERIFIED
    assert torch.equal(verified_files.load(p, unverified=heard.append)["x"], torch.ones(2))
    assert heard == [p]


class NotATensor:
    """Pickles, but a tensors-only load refuses it."""


def test_torchs_unsafe_advice_is_never_passed_on(tmp_path):
    p = tmp_path / "obj.pt"
    verified_files.save(p, {"x": NotATensor()})   # intact, but not loadable tensors-only
    with pytest.raises(verified_files.Damaged) as e:
        verified_files.load(p)
    assert "weights_only" not in str(e.value) and "obj.pt" in str(e.value)
    with pytest.raises(Exception) as raw:         # what torch itself says (the check can fail)
        torch.load(p, weights_only=True)
    assert "weights_only" in str(raw.value)


def _enospc_after(limit: int):
    """A write that runs out of space after ``limit`` bytes (of the whole process's writes
    through verified_files), as a full disk would: the bytes up to the limit land."""
    real = verified_files._HashingWriter.write
    budget = [limit]

    def write(self, b):
        b = bytes(b)
        if len(b) > budget[0]:
            real(self, b[:budget[0]])
            budget[0] = 0
            self.error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            raise self.error
        budget[0] -= len(b)
        return real(self, b)
    return write


def test_a_failed_write_replaces_nothing_and_leaves_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "a.pt"
    verified_files.save(p, {"x": torch.ones(1000)})
    before = p.read_bytes(), (tmp_path / "a.pt.sha256").read_bytes()
    monkeypatch.setattr(verified_files._HashingWriter, "write", _enospc_after(2000))
    with pytest.raises(verified_files.NotWritten) as e:
        verified_files.save(p, {"x": torch.zeros(1000)})
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(p)
    assert str(e.value) == f"could not write {p}: No space left on device; nothing was replaced"
    assert (p.read_bytes(), (tmp_path / "a.pt.sha256").read_bytes()) == before
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a.pt", "a.pt.sha256"]


# ----------------------------------------------------------------------------- the trainer
@pytest.fixture(scope="module")
def whole():
    """An uninterrupted run: what every resumed run must end as, bit for bit."""
    return train(TrainConfig(**FAST), progress=False)


def _finished_run(out):
    train(TrainConfig(**FAST, out=str(out)), progress=False)
    (out / "result.json").unlink()          # as if killed right after its last checkpoint


def _random_4k_in_the_middle(f):
    n = f.stat().st_size
    with open(f, "r+b") as h:
        h.seek(n // 2)
        h.write(np.random.default_rng(0).bytes(4096))


def _flip_low_mantissa_bit(f):
    """Flip the lowest mantissa bit of one float32 of the first parameter, in place in the
    file: the checkpoint still loads and every tensor stays finite."""
    blob = torch.load(f, weights_only=True)
    name = sorted(blob["params"])[0]
    raw = blob["params"][name].contiguous().numpy().tobytes()
    data = bytearray(f.read_bytes())
    at = data.find(raw[:64])
    assert at >= 0, "parameter bytes not found in the file"
    data[at] ^= 1                                   # little-endian: the lowest bit of element 0
    with open(f, "r+b") as h:
        h.write(bytes(data))
    changed = torch.load(f, weights_only=True)      # what an unchecked load would train on
    assert not torch.equal(changed["params"][name], blob["params"][name])
    assert all(torch.isfinite(v).all() for v in changed["params"].values())


@pytest.mark.parametrize("damage", [_random_4k_in_the_middle, _flip_low_mantissa_bit])
def test_damaged_checkpoint_is_skipped_and_the_run_ends_bit_identical(whole, tmp_path, capsys, damage):
    out = tmp_path / "run"
    _finished_run(out)
    damage(out / "ckpt.pt")            # the same file as ckpt_step4.pt (a hard link): both damaged
    capsys.readouterr()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 0
    io = capsys.readouterr()
    assert "skipped unreadable checkpoints (ckpt_step4.pt: content does not match its sha256" in io.err
    assert "resumed at step 3 from" in io.out and "ckpt_step3.pt" in io.out
    assert "weights_only" not in io.err
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["val_loss"] for r in log] == [r["val_loss"] for r in whole.log]
    final = torch.load(out / "ckpt.pt", weights_only=True)["params"]
    assert all(torch.equal(final[k], whole.params[k]) for k in whole.params)
    assert verified_files.check(out / "ckpt.pt") is None


def test_full_disk_is_one_line_and_keeps_the_newest_intact_checkpoint(whole, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    real = verified_files._HashingWriter.write
    full = _enospc_after(1 << 20)

    def write(self, b):     # the disk fills while step 3's checkpoint is written
        return (full if (out / "ckpt_step2.pt.sha256").exists() else real)(self, b)

    monkeypatch.setattr(verified_files._HashingWriter, "write", write)
    assert main([*ARGV, "--out", str(out)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "No space left on device" in err and str(out / "ckpt_step3.pt") in err
    assert "inline_container" not in err and "enforce fail" not in err
    names = sorted(f.name for f in out.iterdir())
    assert not [n for n in names if n.endswith(".tmp")], names
    assert "ckpt_step3.pt" not in names
    assert torch.load(out / "ckpt.pt", weights_only=True)["step"] == 2
    assert all(verified_files.check(out / n) is None for n in ("ckpt.pt", "ckpt_step1.pt", "ckpt_step2.pt"))
    monkeypatch.setattr(verified_files._HashingWriter, "write", real)    # space freed: resume
    assert main([*ARGV, "--out", str(out), "--resume"]) == 0
    final = torch.load(out / "ckpt.pt", weights_only=True)["params"]
    assert all(torch.equal(final[k], whole.params[k]) for k in whole.params)


def _can_mount_tmpfs(d) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(d)], capture_output=True)
    if ok.returncode == 0:
        subprocess.run(["umount", str(d)], check=True)
    return ok.returncode == 0


def test_a_real_full_file_system(tmp_path, capsys):
    """The same on a real 12 MiB tmpfs (a tiny checkpoint is about 5 MB: two fit, the third
    runs out of space mid-write). Needs root to mount (the simulated test above always runs)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _can_mount_tmpfs(disk):
        pytest.skip("mounting a tmpfs needs root (test_full_disk_is_one_line_... simulates it)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(disk)], check=True)
    try:
        out = disk / "run"
        assert main([*ARGV, "--out", str(out)]) == 2
        err = _one_line(capsys.readouterr().err)
        assert "No space left on device" in err and str(out / "ckpt_step3.pt") in err
        names = sorted(f.name for f in out.iterdir())
        assert not [n for n in names if n.endswith(".tmp")], names
        assert torch.load(out / "ckpt.pt", weights_only=True)["step"] == 2
        assert verified_files.check(out / "ckpt.pt") is None
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_trainer_resume_of_a_pipeline_run_points_to_the_pipeline(tmp_path, capsys):
    from gpu_runs.checkpoint import save_checkpoint
    out = tmp_path / "pp"
    out.mkdir()
    for s in range(2):
        save_checkpoint(out / f"ckpt_stage{s}.pt", {"step": 4})
    assert main([*ARGV, "--out", str(out), "--resume"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "holds a pipeline run" in err and "-m gpu_runs.pipeline ... --resume" in err


def test_a_run_stopped_before_ckpt_pt_was_repointed_resumes_from_its_newest_step_file(tmp_path, capsys):
    """Stopped (Ctrl-C, a kill) after ckpt_step4.pt was written but before ckpt.pt pointed at
    it: --resume continues from step 4, the step the Ctrl-C line names (ckpt.pt still says 3)."""
    from gpu_runs import interrupt
    out = tmp_path / "run"
    _finished_run(out)
    step3 = out / "ckpt_step3.pt"
    verified_files.link_verified(step3, out / "ckpt.pt", verified_files.file_sha256(step3))
    assert torch.load(out / "ckpt.pt", weights_only=True)["step"] == 3
    assert f"newest checkpoint {out}/ckpt_step4.pt (step 4)" in interrupt.trainer_line(out, ARGV)
    capsys.readouterr()
    assert main([*ARGV, "--out", str(out), "--resume"]) == 0
    assert f"resumed at step 4 from {out}/ckpt_step4.pt" in capsys.readouterr().out

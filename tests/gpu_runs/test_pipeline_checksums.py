"""Checksummed stage checkpoints (issue 39, item 2): every rank's checkpoint carries a sha256
sidecar; a set is usable only when every rank's file in it is intact, so damage to one
rank's file (4 KiB of garbage, or a flipped bit that keeps every tensor finite) makes the
resume fall back to the previous set, and the run ends exactly as an uninterrupted one;
with no intact set left every rank refuses in one line (no FloatingPointError traceback);
a full disk on one rank is one line naming the file."""
import errno
import json
import os

import torch

from gpu_runs import verified_files
from gpu_runs.pipeline.checkpoint import stage_file
from gpu_runs.pipeline.launch import run_forked
from test_checksummed_checkpoints import _flip_low_mantissa_bit, _random_4k_in_the_middle
from test_pipeline_llama import B, SEED, STEPS, T, corpus_dir, pipeline_log  # noqa: F401


def _argv(corpus, out, *extra):
    return ["--schedule", "1f1b", "--config", "tiny", "--optimizer", "adamw", "--steps", str(STEPS),
            "--batch-size", str(B), "--seq-len", str(T), "--seed", str(SEED), "--data", corpus,
            "--eval-every", "4", "--eval-batches", "1", "--microbatches", "2", "--out", str(out),
            "--quiet", "--timeout", "60", *extra]


def _params(d):
    return {k: v for s in range(2) for k, v in torch.load(stage_file(d, s), weights_only=True)["params"].items()}


def test_damaged_stage_file_falls_back_and_ends_identical(corpus_dir, tmp_path):  # noqa: F811
    want, want_params = pipeline_log("1f1b", corpus_dir, tmp_path / "whole")
    a = tmp_path / "a"
    pipeline_log("1f1b", corpus_dir, a)
    _flip_low_mantissa_bit(stage_file(a, 0))        # final set: rank 0's file, still finite
    res = run_forked(_argv(corpus_dir, a, "--resume"), 2, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    assert "skipped unreadable checkpoints (ckpt_stage0.pt: content does not match its sha256" in res[0][1]
    assert "resuming from the newest complete set (step 4)" in res[0][1]
    got = [json.loads(line) for line in open(a / "log.jsonl")]
    assert got == [dict(r, step_time=g["step_time"], dp_allreduce_time=g["dp_allreduce_time"])
                   for r, g in zip(want, got)]
    got_params = _params(a)
    assert all(torch.equal(got_params[k], v) for k, v in want_params.items())
    assert all(verified_files.check(stage_file(a, s)) is None for s in range(2))


def test_no_intact_set_is_one_line(corpus_dir, tmp_path):  # noqa: F811
    """Both ranks refuse; rank 0 says it, for both (the check is the same on every rank)."""
    a = tmp_path / "a"
    pipeline_log("1f1b", corpus_dir, a)
    _flip_low_mantissa_bit(stage_file(a, 0))        # the final set
    _random_4k_in_the_middle(stage_file(a, 1, 4))   # and the step-4 set, on the other rank
    res = run_forked(_argv(corpus_dir, a, "--resume"), 2, timeout=120, tmp=str(tmp_path))
    assert [rc for rc, _ in res] == [2, 2] and res[1][1] == "", res
    for rc, out in res[:1]:
        lines = out.strip().splitlines()
        assert len(lines) == 1 and "refused: --resume: no complete set of 2 stage checkpoints" in lines[0], out
        assert "ckpt_stage0.pt: content does not match" in lines[0]
        assert "ckpt_step4_stage1.pt: content does not match" in lines[0]
        assert "Traceback" not in out and "FloatingPointError" not in out


def test_full_disk_on_one_rank_is_one_line(corpus_dir, tmp_path, monkeypatch):  # noqa: F811
    real, real_save = verified_files._HashingWriter.write, verified_files.save
    a = tmp_path / "a"
    saving = [False]

    def save(path, obj):     # a checkpoint is being written (config and log are written atomically too)
        saving[0] = True
        try:
            return real_save(path, obj)
        finally:
            saving[0] = False

    def write(self, b):      # rank 1's disk fills at its first checkpoint (the ranks are forked: they inherit this)
        if os.environ.get("RANK") == "1" and saving[0] and (a / "log.jsonl").exists():
            self.error = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            raise self.error
        return real(self, b)

    monkeypatch.setattr(verified_files._HashingWriter, "write", write)
    monkeypatch.setattr(verified_files, "save", save)
    res = run_forked(_argv(corpus_dir, a), 2, timeout=120, tmp=str(tmp_path))
    rc1, out1 = res[1]
    assert rc1 == 2, out1[-2000:]
    errors = [ln for ln in out1.splitlines() if "error" in ln]
    assert errors == [f"[pipeline rank 1/2] error: NotWritten: could not write {stage_file(a, 1, 4)}: "
                      f"No space left on device; nothing was replaced"], out1
    assert res[0][0] not in (0, None)
    for _, out in res:
        assert "Traceback" not in out
    assert not [f.name for f in a.iterdir() if f.name.endswith(".tmp")]
    assert verified_files.check(stage_file(a, 0, 4)) is None     # rank 0's own checkpoint is whole


def test_non_finite_values_in_an_unverified_checkpoint_end_without_traceback(corpus_dir, tmp_path):  # noqa: F811
    """A stage file written before checksums (no sidecar) cannot be verified; if it holds a
    NaN the run stops at the first update with one error line per rank, no traceback."""
    a = tmp_path / "a"
    pipeline_log("1f1b", corpus_dir, a)
    for s in range(2):
        f = stage_file(a, s, 4)
        blob = torch.load(f, weights_only=True)
        name = sorted(blob["params"])[0]
        blob["params"][name][0] = float("nan")
        torch.save(blob, f)
        verified_files.sidecar(f).unlink()
        verified_files.remove(stage_file(a, s))          # no final set: resume from step 4
    res = run_forked(_argv(corpus_dir, a, "--resume"), 2, timeout=120, tmp=str(tmp_path))
    assert all(rc not in (0, None) for rc, _ in res), [o[-2000:] for _, o in res]
    assert any("error: FloatingPointError: grads[" in out for _, out in res), [o[-2000:] for _, o in res]
    for _, out in res:
        assert "Traceback" not in out, out[-3000:]

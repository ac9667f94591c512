"""gpu_runs.pipeline's run directory under misuse (issue 30): a corrupted checkpoint set
falls back to the newest complete one, saying so; a second writer or an unusable --out is
refused before any process group; a bare --resume continues --out as the trainer's does;
without torchrun a hint; the console counts steps as the log does (from 1)."""
import json
import os

import pytest
import torch

from gpu_runs import run_lock
from gpu_runs.checkpoint import save_checkpoint
from gpu_runs.pipeline import build_parser, main, validate_args
from gpu_runs.pipeline.checkpoint import find_set, stage_file
from gpu_runs.pipeline.launch import run_forked
from test_pipeline_llama import B, SEED, STEPS, T, corpus_dir, pipeline_log  # noqa: F401
from test_pipeline_mitigations import assert_same

BASE = ["--schedule", "1f1b", "--steps", "8", "--batch-size", "4", "--seq-len", "16"]
TOY = ["--model", "toy", "--optimizer", "sgd", "--toy-layers", "2", "--schedule", "1f1b", "--steps", "2",
       "--batch-size", "4", "--seq-len", "8", "--eval-every", "0"]


def _fake_set(d, P, step=None):
    args = vars(build_parser().parse_args(BASE)) | dict(microbatches=P)
    d.mkdir(parents=True, exist_ok=True)
    for s in range(P):
        save_checkpoint(stage_file(d, s, step), dict(step=step or 8, schedule="1f1b", args=json.dumps(args)))


@pytest.fixture
def no_torchrun(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(k, raising=False)


@pytest.fixture
def torchrun_env(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")


@pytest.mark.parametrize("damage", [b"", b"garbage"])
def test_find_set_skips_a_damaged_set_and_says_why(tmp_path, damage):
    _fake_set(tmp_path, 2, step=4)
    _fake_set(tmp_path, 2, step=6)
    _fake_set(tmp_path, 2)
    stage_file(tmp_path, 1).write_bytes(damage)              # final set damaged
    stage_file(tmp_path, 0, 6).write_bytes(damage)           # and the newest periodic one
    k, skipped = find_set(tmp_path, 2)
    assert k == 4
    assert [s.split(":")[0] for s in skipped] == ["ckpt_stage1.pt", "ckpt_step6_stage0.pt"]
    stage_file(tmp_path, 1, 4).write_bytes(damage)
    with pytest.raises(ValueError, match="no complete set.*unreadable: ckpt_stage1.pt"):
        find_set(tmp_path, 2)


def test_corrupted_final_set_resumes_from_the_newest_complete_one(corpus_dir, tmp_path):  # noqa: F811
    want, want_params = pipeline_log("1f1b", corpus_dir, tmp_path / "whole")
    a = tmp_path / "a"
    pipeline_log("1f1b", corpus_dir, a)
    f = stage_file(a, 1)
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])   # truncated, as a crash mid-write would
    argv = ["--schedule", "1f1b", "--config", "tiny", "--optimizer", "adamw", "--steps", str(STEPS),
            "--batch-size", str(B), "--seq-len", str(T), "--seed", str(SEED), "--data", corpus_dir,
            "--eval-every", "4", "--eval-batches", "1", "--microbatches", "2", "--out", str(a),
            "--quiet", "--timeout", "60", "--resume"]                   # bare --resume: the run in --out
    res = run_forked(argv, 2, timeout=120)
    assert all(rc == 0 for rc, _ in res), [o[-2000:] for _, o in res]
    assert "skipped unreadable checkpoints (ckpt_stage1.pt: " in res[0][1]
    assert "resuming from the newest complete set (step 4)" in res[0][1]
    got = [json.loads(line) for line in open(a / "log.jsonl")]
    got_params = {k: v for s in range(2) for k, v in torch.load(stage_file(a, s))["params"].items()}
    assert_same(got, want, got_params, want_params)


def test_fallback_is_reported_before_the_run(tmp_path, torchrun_env, capsys):
    _fake_set(tmp_path, 2, step=4)
    _fake_set(tmp_path, 2)
    stage_file(tmp_path, 0).write_bytes(b"")
    args = build_parser().parse_args([*BASE, "--resume", str(tmp_path)])
    assert validate_args(args, 2, 2) == ["ckpt_stage0.pt: content does not match its sha256 (damaged after it was written)"]
    assert args.resume_set == 4


def test_bare_resume_means_out(tmp_path):
    _fake_set(tmp_path, 2, step=4)
    args = build_parser().parse_args([*BASE, "--out", str(tmp_path), "--resume"])
    validate_args(args, 2, 2)
    assert args.resume == str(tmp_path) and args.resume_set == 4
    with pytest.raises(ValueError, match="--resume without a directory continues the run in --out"):
        validate_args(build_parser().parse_args([*BASE, "--resume"]), 2, 2)


def test_without_torchrun_a_hint(no_torchrun, capsys):
    assert main(TOY) == 2
    err = capsys.readouterr().err
    assert "torchrun --nproc-per-node" in err and "Traceback" not in err


def test_second_writer_refused(tmp_path, torchrun_env, capsys):
    fd = run_lock.acquire(tmp_path / "run")
    try:
        assert main([*TOY, "--out", str(tmp_path / "run")]) == 2
    finally:
        run_lock.release(fd)
    err = capsys.readouterr().err
    assert f"in use by another run (pid {os.getpid()}" in err and "Traceback" not in err


def test_unusable_out_refused(tmp_path, torchrun_env, capsys):
    (tmp_path / "file").write_text("x")
    assert main([*TOY, "--out", str(tmp_path / "file" / "run")]) == 2
    err = capsys.readouterr().err
    assert "cannot be used as a run directory" in err and "Traceback" not in err


def test_console_counts_steps_from_one_as_the_log(tmp_path):
    res = run_forked([*TOY, "--out", str(tmp_path)], 2, timeout=60)
    assert all(rc == 0 for rc, _ in res), [o[-1000:] for _, o in res]
    steps = [int(line.split(" step ")[1].split()[0]) for line in res[1][1].splitlines() if " step " in line]
    logged = [json.loads(line)["step"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert steps == logged == [1, 2]


def test_resume_of_a_finished_run_changes_nothing(tmp_path, torchrun_env, capsys):
    _fake_set(tmp_path, 2)                                       # final set at step 8 = --steps
    (tmp_path / "log.jsonl").write_text('{"step": 8}\n')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert main([*BASE, "--out", str(tmp_path), "--resume"]) == 0
    assert "finished already at step 8" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_pipeline_ckpt_unreadable_checkpoint_is_one_line(tmp_path, capsys):
    from gpu_runs.pipeline.convert import main as ckpt_main
    _fake_set(tmp_path, 2)
    stage_file(tmp_path, 0).write_bytes(b"garbage")
    assert ckpt_main(["to-trainer", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "unreadable checkpoint" in err and "Traceback" not in err and len(err.splitlines()) == 1

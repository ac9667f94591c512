"""gpu_runs.pipeline as a user meets it: refusals before any process starts (bad options,
an existing run, a resume of a different run or without checkpoints), --help defaults,
and a killed run (periodic checkpoints only) resuming to the uninterrupted trajectory."""
import json

import pytest
import torch

from gpu_runs.pipeline import build_parser, main, validate_args
from gpu_runs.pipeline.checkpoint import latest_set, stage_file
from test_pipeline_llama import B, SEED, STEPS, T, corpus_dir, pipeline_log  # noqa: F401
from test_pipeline_mitigations import assert_same

BASE = ["--schedule", "1f1b", "--steps", "8", "--batch-size", "4", "--seq-len", "16"]


def _args(*extra):
    return build_parser().parse_args([*BASE, *extra])


def _fake_set(d, P, step=None, **changes):
    args = vars(_args()) | dict(microbatches=P) | changes
    d.mkdir(parents=True, exist_ok=True)
    for s in range(P):
        torch.save(dict(step=step or 8, schedule="1f1b", args=json.dumps(args)), stage_file(d, s, step))


@pytest.mark.parametrize("extra, words", [
    (["--optimizer", "muonn"], ["muonn", "adamw"]), (["--lr", "-1"], ["lr"]),
    (["--ckpt-every", "-2"], ["--ckpt-every"]), (["--data", "/nonexistent/x"], ["--data", "nonexistent"]),
    (["--device", "foo"], ["--device", "foo"]), (["--device", "cuda:99"], ["--device", "cuda:99"]),
    (["--seed", "-1"], ["--seed", "-1"])])
def test_bad_options_refused_without_traceback(extra, words, capsys):
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err
    assert "refused" in err and "Traceback" not in err and all(w in err for w in words), err


def test_fresh_run_over_an_existing_one_refused(tmp_path):
    (tmp_path / "log.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(ValueError, match="already holds a run"):
        validate_args(_args("--out", str(tmp_path)), 2, 2)


def test_resume_without_checkpoints_refused(tmp_path):
    (tmp_path / "log.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(ValueError, match="no complete set"):
        validate_args(_args("--resume", str(tmp_path), "--out", str(tmp_path)), 2, 2)


def test_resume_of_a_different_run_lists_the_options(tmp_path):
    _fake_set(tmp_path, 2, steps=6, optimizer="muon")
    with pytest.raises(ValueError, match=r"optimizer: 'muon' -> 'adamw'; steps: 6 -> 8"):
        validate_args(_args("--resume", str(tmp_path)), 2, 2)
    _fake_set(tmp_path / "ok", 2, eval_every=7, quiet=True)     # cadence / output options may change
    validate_args(_args("--resume", str(tmp_path / "ok")), 2, 2)


def test_latest_set_prefers_final_then_newest_complete(tmp_path):
    _fake_set(tmp_path, 2, step=4)
    _fake_set(tmp_path, 2, step=6)
    torch.save({}, stage_file(tmp_path, 0, 8))          # stage 1 never wrote step 8: incomplete
    assert latest_set(tmp_path, 2) == 6
    _fake_set(tmp_path, 2)
    assert latest_set(tmp_path, 2) is None


def test_help_shows_defaults(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    h = " ".join(capsys.readouterr().out.split())
    for s in ("(default: 200)", "(default: adamw)", "(default: 60.0)"):
        assert s in h


def test_killed_run_resumes_from_periodic_checkpoints(corpus_dir, tmp_path, capsys):  # noqa: F811
    """Default cadence checkpoints at the evaluation after step 4; remove the final files
    (as a kill after step 4 would leave them missing) and resume into the same directory."""
    want, want_params = pipeline_log("1f1b", corpus_dir, tmp_path / "whole")
    a = tmp_path / "a"
    pipeline_log("1f1b", corpus_dir, a)
    assert latest_set(a, 2) is None and stage_file(a, 0, 4).exists()
    for s in range(2):
        stage_file(a, s).unlink()
    assert latest_set(a, 2) == 4
    got, got_params = pipeline_log("1f1b", corpus_dir, a, ["--resume", str(a)])
    assert_same(got, want, got_params, want_params)     # the log holds steps 1..8 once

"""A pipeline run that dies before its first checkpoint is not stranded: the same command
starts it again and finishes as an uninterrupted run; a finished run leaves no lock file (issue 50)."""
import json

from gpu_runs.pipeline.launch import run_forked

ARGV = ["--model", "llama", "--schedule", "2bw", "--steps", "4", "--batch-size", "2", "--seq-len", "16",
        "--eval-every", "2", "--eval-batches", "1", "--quiet"]


def _log(d):
    return [{k: v for k, v in json.loads(line).items() if k not in ("step_time", "dp_allreduce_time")}
            for line in (d / "log.jsonl").read_text().splitlines()]


def test_the_same_command_continues_a_run_killed_before_its_first_checkpoint(tmp_path):
    out, whole = tmp_path / "run", tmp_path / "whole"
    for d in ("logs", "logs2", "logs3"):
        (tmp_path / d).mkdir()
    res = run_forked([*ARGV, "--out", str(out), "--fault", "1:1:exit"], 2, timeout=240, tmp=str(tmp_path / "logs"))
    assert any(rc != 0 for rc, _ in res)
    assert not list(out.glob("ckpt*.pt")) and (out / "config.json").exists()
    res = run_forked([*ARGV, "--out", str(out)], 2, timeout=240, tmp=str(tmp_path / "logs2"))
    assert all(rc == 0 for rc, _ in res), res
    res = run_forked([*ARGV, "--out", str(whole)], 2, timeout=240, tmp=str(tmp_path / "logs3"))
    assert all(rc == 0 for rc, _ in res), res
    assert _log(out) == _log(whole)
    assert not list(out.glob(".lock*")) and not list(whole.glob(".lock*"))

"""Kill a run (SIGKILL) after a checkpoint, resume it, and compare with an uninterrupted run bit for bit."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ARGS = ["--config", "tiny", "--batch-size", "4", "--seq-len", "16", "--steps", "50", "--eval-every", "25",
        "--eval-batches", "1", "--log-every", "1", "--ckpt-every", "10", "--device", "cpu"]
ROOT = Path(__file__).resolve().parents[2]


def run(out, *extra, kill_after_ckpt=False):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "gpu_runs.train", *ARGS, "--out", str(out), *extra]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    if kill_after_ckpt:
        while p.poll() is None and not (out / "ckpt.pt").exists():
            time.sleep(0.005)
        p.send_signal(signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    return p.returncode, err.decode()


def read_log(out):
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_killed_run_resumes_to_identical_trajectory(tmp_path):
    for opt_args in (["--optimizer", "muon", "--delay", "2bw", "--ef"],):
        a, b = tmp_path / "killed", tmp_path / "whole"
        rc, err = run(a, *opt_args, kill_after_ckpt=True)
        assert rc == -signal.SIGKILL, f"run finished before the kill (rc={rc}): {err[-500:]}"
        partial = read_log(a)
        assert len(partial) < 50
        rc, err = run(a, *opt_args, "--resume")
        assert rc == 0, err[-2000:]
        rc, err = run(b, *opt_args)
        assert rc == 0, err[-2000:]
        la, lb = read_log(a), read_log(b)
        assert [r["step"] for r in la] == list(range(1, 51))
        key = lambda r: (r["step"], r["train_loss"], r.get("val_loss"))
        assert [key(r) for r in la] == [key(r) for r in lb]

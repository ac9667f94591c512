"""Failures: a rank that is killed, raises or hangs makes the other rank exit non-zero
with a clear message (no hang); bad arguments are refused before any process group."""
import signal

import pytest
import torch.distributed as dist

from gpu_runs import pipeline
from gpu_runs.pipeline.launch import launch_local, run_forked

ARGV = ["--model", "toy", "--optimizer", "sgd", "--batch-size", "2", "--seq-len", "8",
        "--microbatches", "2", "--eval-every", "0"]
GUARD = 60  # hang guard for communicate(), not a timing assertion


def test_killed_rank_makes_the_other_exit(tmp_path):
    procs = launch_local(["--schedule", "2bw", "--steps", "100000", "--timeout", "20", *ARGV], 2)
    try:
        # the last rank prints a line per step: wait until the pipeline runs, then SIGKILL it
        line = procs[1].stdout.readline()
        assert "step" in line, procs[1].stderr.read()[-2000:]
        procs[1].send_signal(signal.SIGKILL)
        _, err0 = procs[0].communicate(timeout=GUARD)
    finally:
        for p in procs:
            p.kill()
    assert procs[0].returncode not in (0, None)
    assert "[pipeline rank 0/2] error" in err0


@pytest.mark.parametrize("kind", ["raise", "hang"])
def test_raising_or_hanging_rank(kind, tmp_path):
    res = run_forked(["--schedule", "1f1b", "--steps", "50", "--timeout", "4", "--quiet",
                      "--fault", f"1:2:{kind}", *ARGV], 2, timeout=GUARD, tmp=str(tmp_path))
    codes = [rc for rc, _ in res]
    assert all(rc not in (0, None) for rc in codes), codes
    out0, out1 = res[0][1], res[1][1]
    assert "[pipeline rank 0/2] error" in out0, out0[-2000:]
    if kind == "raise":
        assert "injected fault" in out1
    else:  # the hanging rank's own watchdog, or the waiting rank's watchdog / gloo timeout
        assert "no progress" in out1 or "no progress" in out0 or "imeout" in out0


@pytest.mark.parametrize("world, extra, word", [
    (4, ["--schedule", "2bw", "--microbatches", "2"], "microbatches"),
    (5, ["--schedule", "1f1b", "--microbatches", "8"], "num_stages"),
    (2, ["--schedule", "gpipe", "--microbatches", "3", "--batch-size", "4"], "batch-size"),
    (2, ["--schedule", "1f1b", "--sync-start", "2"], "2bw"),
    (2, ["--schedule", "2bw", "--sync-cooldown", "9", "--steps", "4"], "sync-cooldown"),
    (2, ["--schedule", "pipedream", "--dc-asgd", "0.1"], "dc-asgd"),
    (2, ["--schedule", "2bw", "--dc-asgd", "-1"], "dc-asgd"),
])
def test_bad_arguments_refused_before_process_group(world, extra, word, monkeypatch, capsys):
    monkeypatch.setenv("WORLD_SIZE", str(world))
    monkeypatch.setenv("RANK", "0")
    # no MASTER_ADDR: reaching init_process_group would raise instead of returning 2
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    rc = pipeline.main(["--model", "toy", "--optimizer", "sgd", "--toy-layers", "4", *extra])
    assert rc == 2
    assert word in capsys.readouterr().err
    assert not dist.is_initialized()

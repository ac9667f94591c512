"""One line for an empty shard, and nothing from the launcher after a rank's own refusal (issue 50)."""
import signal
import subprocess
import sys

from torch.distributed.elastic.multiprocessing.api import SignalException
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

from gpu_runs.pipeline.torchrun import exit_code
from gpu_runs.train import main


def test_an_empty_npy_shard_is_one_line(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.npy").write_bytes(b"")
    assert main(["--data", str(tmp_path / "d"), "--steps", "4", "--batch-size", "2", "--seq-len", "16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a.npy is empty or truncated" in err


def _failed(*codes):
    return ChildFailedError("gpu_runs.pipeline", {
        r: ProcessFailure(local_rank=r, pid=100 + r, exitcode=c, error_file="") for r, c in enumerate(codes)})


def test_the_launchers_exit_code_is_the_failed_ranks():
    assert exit_code(_failed(2, -signal.SIGTERM)) == 2          # rank 0 refused, rank 1 stopped by torchrun
    assert exit_code(_failed(-signal.SIGTERM, 130)) == 130
    assert exit_code(_failed(-signal.SIGKILL)) == 128 + signal.SIGKILL
    assert exit_code(SignalException("x", signal.SIGINT)) == 130


def test_a_refused_two_rank_run_is_one_line(tmp_path):
    """The quiet launcher: rank 0's refusal is the only line (stdout and stderr together), rc 2,
    and the refusal leaves nothing behind (tmp_path as it was)."""
    before = sorted(tmp_path.rglob("*"))
    r = subprocess.run([sys.executable, "-m", "gpu_runs.pipeline.torchrun", "--nproc-per-node", "2",
                        "-m", "gpu_runs.pipeline", "--model", "toy", "--optimizer", "sgd", "--schedule", "2bw", "--tau", "8",
                        "--steps", "4", "--out", str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert r.stdout == "", r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[pipeline rank 0/2] refused: ") and "--tau" in lines[0], lines
    assert sorted(tmp_path.rglob("*")) == before

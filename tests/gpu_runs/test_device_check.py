"""device_check.sh at CPU scale (DEVICE_CHECK_SMOKE=1): it runs end to end and writes its summary."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_device_check_smoke(tmp_path):
    env = dict(os.environ, DEVICE_CHECK_SMOKE="1", OMP_NUM_THREADS="1", PYTHON=sys.executable)
    p = subprocess.run(["bash", str(ROOT / "gpu_runs" / "device_check.sh"), str(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    runs = {r["run"]: r for r in summary["runs"]}
    assert set(runs) == {f"{o}_{m}" for o in ("muon", "adamw") for m in ("sync", "2bw", "2bw_ef")}
    for r in runs.values():
        assert math.isfinite(r["final_val_loss"]) and r["final_val_loss"] < math.log(256) + 0.5
        assert (tmp_path / r["run"] / "log.jsonl").is_file()
    # same seed and data: the delayed run differs from sync (the delay is real), EF differs from 2bw
    for o in ("muon", "adamw"):
        assert runs[f"{o}_2bw"]["final_val_loss"] != runs[f"{o}_sync"]["final_val_loss"]
        assert runs[f"{o}_2bw_ef"]["final_val_loss"] != runs[f"{o}_2bw"]["final_val_loss"]
    assert summary["ns"]["seconds"] > 0 and (tmp_path / "summary.txt").is_file()


def test_device_check_usage_error(tmp_path):
    p = subprocess.run(["bash", str(ROOT / "gpu_runs" / "device_check.sh")], capture_output=True, text=True)
    assert p.returncode == 2 and "usage" in p.stderr

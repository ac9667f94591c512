"""device_check.sh runs end to end in its CPU smoke mode (tiny config, 3 steps): summary and predictions."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_device_check_smoke(tmp_path):
    env = dict(os.environ, DEVICE_CHECK_SMOKE="1", PYTHON=sys.executable, OMP_NUM_THREADS="1")
    p = subprocess.run(["bash", str(ROOT / "gpu_runs" / "device_check.sh"), str(tmp_path)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    summary = (tmp_path / "summary.txt").read_text()
    for run in ("muon-sync", "muon-2bw", "muon-ef", "adamw-sync", "adamw-2bw", "adamw-ef"):
        assert run in summary and (tmp_path / run / "log.jsonl").exists()
    assert "2bw gap" in summary and "newton_schulz bf16" in summary
    pred = (tmp_path / "predict.txt").read_text()
    assert "ordering 3: EF helps where r_avg / eta < 1" in pred and "predict failed" not in p.stdout
    moe = (tmp_path / "moe_summary.txt").read_text()
    assert "moe moe-muon-ef: 2 MoE layers" in moe and "moe per-expert r/eta at step 3: 48 (stack, expert) blocks" in moe

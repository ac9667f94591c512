#!/usr/bin/env bash
# Device check for one GPU machine (e.g. a single H200): does the trainer run at the
# paper's 135M shape, and how do sync / 2bw / 2bw+EF compare for Muon and AdamW?
#
#   bash gpu_runs/device_check.sh OUT_DIR
#
# Needs torch with CUDA; no network; the package need not be installed (PYTHONPATH is
# set to the repository root). Six short runs (135m config, shipped stdlib byte corpus,
# same seed and data order) plus one line of Newton-Schulz bf16 throughput; budgeted to
# finish well under 8 minutes. Writes OUT_DIR/<optimizer>_<mode>/log.jsonl per run,
# OUT_DIR/ns_throughput.json and OUT_DIR/summary.json / summary.txt.
#
# Environment knobs: STEPS (default 150), BATCH (16), SEQ (256), CONFIG (135m).
# DEVICE_CHECK_SMOKE=1: the same script at CPU scale (tiny config, 4 steps) for the test suite.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: bash gpu_runs/device_check.sh OUT_DIR" >&2
  exit 2
fi
OUT_DIR="$1"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python}"
if [ -x "$ROOT/.venv/bin/python" ] && [ -z "${PYTHON:-}" ]; then PY="$ROOT/.venv/bin/python"; fi
mkdir -p "$OUT_DIR"

if [ "${DEVICE_CHECK_SMOKE:-0}" = "1" ]; then
  export DC_CONFIG=tiny DC_STEPS="${STEPS:-4}" DC_BATCH="${BATCH:-4}" DC_SEQ="${SEQ:-32}" DC_DEVICE=cpu DC_NS_SIZE=128
else
  export DC_CONFIG="${CONFIG:-135m}" DC_STEPS="${STEPS:-150}" DC_BATCH="${BATCH:-16}" DC_SEQ="${SEQ:-256}" DC_DEVICE=cuda DC_NS_SIZE=2048
fi
export DC_OUT="$OUT_DIR"

"$PY" - <<'PYEOF' 2>&1 | tee "$OUT_DIR/device_check.log"
import json, math, os, sys, time
import torch

out, dev = os.environ["DC_OUT"], os.environ["DC_DEVICE"]
if dev == "cuda" and not torch.cuda.is_available():
    sys.exit("device_check: CUDA is not available (set DEVICE_CHECK_SMOKE=1 for the CPU smoke run)")
print(f"torch {torch.__version__} | device {torch.cuda.get_device_name(0) if dev == 'cuda' else 'cpu'}", flush=True)

# Newton-Schulz bf16 throughput: 5 keller steps on a batch of n x n matrices.
from lmo.newton_schulz import newton_schulz
n = int(os.environ["DC_NS_SIZE"])
G = torch.randn(4, n, n, device=dev)
dt = torch.bfloat16 if dev == "cuda" else torch.float32
newton_schulz(G, steps=5, dtype=dt)
if dev == "cuda": torch.cuda.synchronize()
reps, t0 = 10, time.perf_counter()
for _ in range(reps):
    newton_schulz(G, steps=5, dtype=dt)
if dev == "cuda": torch.cuda.synchronize()
sec = (time.perf_counter() - t0) / reps
flops = 4 * 5 * (4 * n**3 + 2 * n**3)  # batch 4, 5 steps, 4 m^2 n + 2 m^3 each
ns = dict(n=n, batch=4, steps=5, dtype=str(dt), seconds=sec, tflops=flops / sec / 1e12)
print(f"newton_schulz {n}x{n} x4 {dt}: {sec * 1e3:.2f} ms/call, {ns['tflops']:.1f} TFLOP/s", flush=True)
json.dump(ns, open(os.path.join(out, "ns_throughput.json"), "w"), indent=1)

from gpu_runs.train import TrainConfig, train
steps = int(os.environ["DC_STEPS"])
rows = []
for opt in ("muon", "adamw"):
    for mode, ef in (("sync", False), ("2bw", False), ("2bw", True)):
        tag = f"{opt}_{mode}{'_ef' if ef else ''}"
        cfg = TrainConfig(config=os.environ["DC_CONFIG"], optimizer=opt, mode=mode, ef=ef, steps=steps,
                          batch_size=int(os.environ["DC_BATCH"]), seq_len=int(os.environ["DC_SEQ"]),
                          eval_every=max(steps // 3, 1), eval_batches=4, seed=0, device=dev,
                          out=os.path.join(out, tag), log_every=max(steps // 10, 1))
        t0 = time.perf_counter()
        res = train(cfg, progress=True)
        wall = time.perf_counter() - t0
        rows.append(dict(run=tag, optimizer=opt, mode=mode, ef=ef, steps=steps, n_params=res.n_params,
                         final_val_loss=res.final_val_loss, tokens_per_s=res.tokens_per_s, wall_s=wall))
        print(f"== {tag}: final val {res.final_val_loss:.4f} | {res.tokens_per_s:,.0f} tok/s | {wall:.0f} s", flush=True)

summary = dict(config=os.environ["DC_CONFIG"], device=dev, ns=ns, runs=rows)
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
lines = [f"{'run':<16} {'val loss':>9} {'gap vs sync':>11} {'tok/s':>10}"]
for r in rows:
    sync = next(s for s in rows if s["optimizer"] == r["optimizer"] and s["mode"] == "sync")
    lines.append(f"{r['run']:<16} {r['final_val_loss']:>9.4f} {r['final_val_loss'] - sync['final_val_loss']:>+11.4f} "
                 f"{r['tokens_per_s']:>10,.0f}")
open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
bad = [r["run"] for r in rows if not math.isfinite(r["final_val_loss"])]
sys.exit(f"device_check: non-finite final loss in {bad}" if bad else 0)
PYEOF

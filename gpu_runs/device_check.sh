#!/usr/bin/env bash
# Device check for one H200: 135m config, sync vs 2bw vs 2bw+EF for Muon and AdamW, short horizon,
# on the shipped stdlib byte corpus (vocab 256: the 135m shape with a byte vocabulary, so the
# embedding is 256 x 576 instead of 49152 x 576), plus a Newton-Schulz bf16 throughput line.
# Usage: bash gpu_runs/device_check.sh OUT_DIR      (run from the repo root; no pip install needed)
# Smoke test on CPU: DEVICE_CHECK_SMOKE=1 bash gpu_runs/device_check.sh OUT_DIR (tiny, 3 steps).
set -euo pipefail
OUT="${1:?usage: device_check.sh OUT_DIR}"
mkdir -p "$OUT"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python}"
if [[ "${DEVICE_CHECK_SMOKE:-0}" == "1" ]]; then
  CONFIG=tiny; STEPS=3; BS=4; SEQ=16; DEV=cpu; EVAL=3; DIAG=2; DATA="$ROOT/gpu_runs"  # small text dir: fast
else
  CONFIG=135m; STEPS="${DEVICE_CHECK_STEPS:-150}"; BS=16; SEQ=512; DEV=cuda; EVAL=50; DIAG=50; DATA=stdlib
fi
cd "$ROOT"
"$PY" - "$DEV" > "$OUT/ns_throughput.txt" <<'PYEOF'
import sys, time, torch
from lmo.newton_schulz import newton_schulz
dev = sys.argv[1]
n = 1024 if dev == "cuda" else 128
G = torch.randn(16, n, 3 * n // 2, device=dev)
for _ in range(2): newton_schulz(G, dtype=torch.bfloat16)
if dev == "cuda": torch.cuda.synchronize()
t = time.perf_counter(); reps = 10 if dev == "cuda" else 2
for _ in range(reps): newton_schulz(G, dtype=torch.bfloat16)
if dev == "cuda": torch.cuda.synchronize()
dt = (time.perf_counter() - t) / reps
print(f"newton_schulz bf16 5 steps: 16 x {n}x{3*n//2} in {dt*1e3:.2f} ms = {16/dt:.1f} matrices/s on {dev}")
PYEOF
cat "$OUT/ns_throughput.txt"
for OPT in muon adamw; do
  for MODE in sync 2bw ef; do
    EXTRA=(--delay "$MODE"); [[ "$MODE" == ef ]] && EXTRA=(--delay 2bw --ef)
    "$PY" -m gpu_runs.train --config "$CONFIG" --optimizer "$OPT" "${EXTRA[@]}" --steps "$STEPS" \
      --batch-size "$BS" --seq-len "$SEQ" --eval-every "$EVAL" --eval-batches 4 --device "$DEV" --data "$DATA" \
      --diag-every "$DIAG" --out "$OUT/$OPT-$MODE" > "$OUT/$OPT-$MODE.txt" 2>&1
    tail -1 "$OUT/$OPT-$MODE.txt"
  done
done
"$PY" - "$OUT" > "$OUT/summary.txt" <<'PYEOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print(f"{'run':<14}{'final val':>10}{'tok/s':>12}")
rows = {}
for d in sorted(p for p in out.iterdir() if p.is_dir()):
    r = json.loads((d / "result.json").read_text()); rows[d.name] = r["final_val_loss"]
    print(f"{d.name:<14}{r['final_val_loss']:>10.4f}{r['tokens_per_s']:>12.0f}")
for o in ("muon", "adamw"):
    if f"{o}-sync" in rows:
        print(f"{o}: 2bw gap {rows[o+'-2bw'] - rows[o+'-sync']:+.4f}, ef gap {rows[o+'-ef'] - rows[o+'-sync']:+.4f}")
print(open(out / "ns_throughput.txt").read().strip())
PYEOF
cat "$OUT/summary.txt"
# the theory's bounds at the measured constants, and whether EF helps where r/eta < 1
"$PY" -m gpu_runs.predict "$OUT"/muon-*/ "$OUT"/adamw-*/ --json "$OUT/predict.json" --png "$OUT/predict.png" \
  > "$OUT/predict.txt" 2>&1 || echo "predict failed: see $OUT/predict.txt"
tail -n 8 "$OUT/predict.txt"

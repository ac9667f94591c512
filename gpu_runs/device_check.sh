#!/usr/bin/env bash
# Device check for one H200: 135m config, sync vs 2bw vs 2bw+EF for Muon and AdamW, short horizon,
# on the shipped stdlib byte corpus (vocab 256: the 135m shape with a byte vocabulary, so the
# embedding is 256 x 576 instead of 49152 x 576), plus a Newton-Schulz bf16 throughput line.
# Last, a short MoE step: moe_2b's shape (24 layers, 64 experts top-8, 1 shared, byte vocab) with
# Muon 2bw + EF for DEVICE_CHECK_MOE_STEPS (20) steps, routing statistics and per-expert
# diagnostics at the first and last step, summarized in moe_summary.txt.
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
  MOE_CONFIG=tiny_moe; MOE_STEPS=3; MOE_BS=4; MOE_SEQ=16
else
  CONFIG=135m; STEPS="${DEVICE_CHECK_STEPS:-150}"; BS=16; SEQ=512; DEV=cuda; EVAL=50; DIAG=50; DATA=stdlib
  MOE_CONFIG=moe_2b; MOE_STEPS="${DEVICE_CHECK_MOE_STEPS:-20}"; MOE_BS=8; MOE_SEQ=512
fi
cd "$ROOT"
"$PY" - "$DEV" > "$OUT/ns_throughput.txt" <<'PYEOF'
import sys, time, torch
from lmo.polar_factor import newton_schulz
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
# Data parallel x pipeline (python -m gpu_runs.pipeline --dp D): with >= 2 GPUs the 2-D (dp, pp)
# layout over NCCL (4+ GPUs: P = 2 stages x D = 2 replicas; 2-3 GPUs: P = 1 x D = 2), then the same
# global batch on one replica (D = 1); dp_summary.txt gives both curves' max |train loss diff|.
# DEVICE_CHECK_DP=1 runs it on CPU over gloo (4 processes) with the smoke settings.
NGPU=$("$PY" -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
if [[ "$DEV" == cuda && "$NGPU" -ge 2 ]] || [[ "${DEVICE_CHECK_DP:-0}" == "1" ]]; then
  if [[ "$DEV" == cuda && "$NGPU" -lt 4 ]]; then PP=1; else PP=2; fi
  DPS=2; DPSTEPS=$(( STEPS < 50 ? STEPS : 50 ))
  for D in "$DPS" 1; do
    "$PY" -m torch.distributed.run --standalone --nproc-per-node $(( PP * D )) -m gpu_runs.pipeline \
      --schedule 2bw -M 2 --config "$CONFIG" --optimizer muon --steps "$DPSTEPS" --batch-size "$BS" \
      --seq-len "$SEQ" --eval-every "$DPSTEPS" --eval-batches 4 --device "$DEV" --data "$DATA" --dp "$D" \
      --quiet --timeout 300 --out "$OUT/pp$PP-dp$D" > "$OUT/pp$PP-dp$D.txt" 2>&1 \
      || { echo "dp run pp$PP-dp$D failed: see $OUT/pp$PP-dp$D.txt"; tail -5 "$OUT/pp$PP-dp$D.txt"; }
  done
  "$PY" - "$OUT" "$PP" "$DPS" > "$OUT/dp_summary.txt" <<'PYEOF'
import json, statistics, sys
from pathlib import Path
out, pp, dp = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
logs = {d: [json.loads(l) for l in open(out / f"pp{pp}-dp{d}" / "log.jsonl")] for d in (dp, "1")}
a, b = logs[dp], logs["1"]
diff = max(abs(x["train_loss"] - y["train_loss"]) for x, y in zip(a, b))
st = {d: statistics.median(r["step_time"] for r in v[2:]) for d, v in logs.items()}
share = statistics.median(r["dp_allreduce_time"] / r["step_time"] for r in a[2:])
print(f"2-D layout P={pp} x D={dp} (2bw muon, {len(a)} steps): max |train loss diff| vs D=1 {diff:.2e}; "
      f"final val {a[-1].get('val_loss', float('nan')):.4f} vs {b[-1].get('val_loss', float('nan')):.4f}; "
      f"step {st[dp]*1e3:.0f} ms vs {st['1']*1e3:.0f} ms (same global batch); dp all-reduce share {100*share:.1f}%")
PYEOF
  cat "$OUT/dp_summary.txt"
fi
# MoE: routed experts as 3-D stacks under Muon (one Newton-Schulz per expert), delayed + EF
"$PY" -m gpu_runs.train --config "$MOE_CONFIG" --optimizer muon --delay 2bw --ef --steps "$MOE_STEPS" \
  --batch-size "$MOE_BS" --seq-len "$MOE_SEQ" --eval-every "$MOE_STEPS" --eval-batches 2 --device "$DEV" \
  --data "$DATA" --diag-every "$MOE_STEPS" --log-every 1 --out "$OUT/moe-muon-ef" > "$OUT/moe-muon-ef.txt" 2>&1
tail -1 "$OUT/moe-muon-ef.txt"
"$PY" - "$OUT/moe-muon-ef" > "$OUT/moe_summary.txt" <<'PYEOF'
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
log = [json.loads(line) for line in open(run / "log.jsonl")]
res = json.loads((run / "result.json").read_text())
last = log[-1]
lo = min(r["load_min_over_uniform"] for r in last["routing"].values())
hi = max(r["load_max_over_uniform"] for r in last["routing"].values())
aux = sum(r["aux_loss"] for r in last["routing"].values()) / len(last["routing"])
print(f"moe {run.name}: {len(last['routing'])} MoE layers, final val {res['final_val_loss']:.4f}, "
      f"{res['tokens_per_s']:.0f} tok/s; step {last['step']} load/uniform in [{lo:.2f}, {hi:.2f}], "
      f"mean L_aux {aux:.4f}")
d = [r["diagnostics"] for r in log if "diagnostics" in r][-1]
per = [v for e in d["experts"].values() for v in e["r_over_eta"]]
print(f"moe per-expert r/eta at step {d['step']}: {len(per)} (stack, expert) blocks, max {max(per):.3f}, "
      f"min {min(per):.3f} (r/eta of the whole model {d['r_over_eta']:.3f})")
PYEOF
cat "$OUT/moe_summary.txt"

"""Throughput of the pipeline schedules, side by side in one run: ``python -m gpu_runs.pipeline_bench``.

For each P in {2, 4} and several M, every schedule (gpipe, 1f1b, 2bw) trains the same
problem in a fresh P-process gloo group; the measured quantity is the median steady-state
step time (steps after the first two, from the last stage's log). Printed beside it:

- ``ideal = (M + P - 1) / M``: a flushed step's time over a bubble-free step's time;
- ``measured = step_time(1f1b or gpipe) / step_time(2bw)``;
- ``eff = measured / ideal``: 1 means 2bw removes the whole bubble and nothing else differs.

Two settings: ``synthetic`` (default) replaces the model's compute by a calibrated
``time.sleep`` per microbatch (forward F ms, backward 2F ms) on a tiny toy model, so the
schedule's own efficiency shows even with 4 processes on a 2-core machine: a busy-wait
would make 4 processes share 2 cores and measure the scheduler, not the schedule;
sleeping stages overlap as GPUs would. ``model`` runs the real compute (the tiny toy
decoder, CPU), where on 2 cores with P processes the stages compete for the cores and the
ratio says little. Clipping is on (1.0): sync schedules all-reduce the squared norm at the
flush, 2bw launches it asynchronously.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from gpu_runs.cli import show_defaults
from gpu_runs.pipeline.launch import run_local
from gpu_runs.pipeline.schedules import ideal_bubble_ratio

BENCH_SCHEDULES = ("gpipe", "1f1b", "2bw")


def measure(schedule: str, P: int, M: int, steps: int, synthetic_ms: tuple | None,
            dim: int = 8, seq_len: int = 8, rows_per_mb: int = 1) -> dict:
    """One P-process run; returns median steady step time (s) and tokens / s."""
    with tempfile.TemporaryDirectory() as d:
        argv = ["--schedule", schedule, "--model", "toy", "--optimizer", "sgd", "--toy-layers", str(P),
                "--toy-dim", str(dim), "--steps", str(steps), "--microbatches", str(M),
                "--batch-size", str(M * rows_per_mb), "--seq-len", str(seq_len), "--clip", "1.0",
                "--out", d, "--quiet", "--timeout", "120", "--eval-every", "0"]
        if synthetic_ms is not None:
            argv += ["--synthetic-ms", f"{synthetic_ms[0]},{synthetic_ms[1]}"]
        res = run_local(argv, P, timeout=600)
        if any(rc != 0 for rc, _, _ in res):
            raise RuntimeError(f"{schedule} P={P} M={M} failed: " + " | ".join(e[-500:] for _, _, e in res))
        log = [json.loads(line) for line in open(Path(d) / "log.jsonl")]
    times = [r["step_time"] for r in log[2:]] or [r["step_time"] for r in log]
    t = statistics.median(times)
    return dict(schedule=schedule, P=P, M=M, step_time_s=t,
                tokens_per_s=M * rows_per_mb * seq_len / t, steps=steps)


def run_bench(quick: bool = True, setting: str = "synthetic", fwd_ms: float = 10.0,
              progress: bool = False) -> dict:
    """Run the grid and return plain data:
    ``{"setting", "fwd_ms", "bwd_ms", "rows": [per run], "ratios": [per (P, M)]}``;
    each ratio row has ``ideal``, ``measured_1f1b``, ``measured_gpipe`` and ``eff_1f1b``."""
    if setting not in ("synthetic", "model"):
        raise ValueError(f"setting must be 'synthetic' or 'model', got {setting!r}")
    grid = [(2, 2), (2, 4), (4, 4), (4, 8)] if quick else [(2, 2), (2, 4), (2, 8), (4, 4), (4, 8), (4, 16)]
    steps = 6 if quick else 12
    syn = (fwd_ms, 2 * fwd_ms) if setting == "synthetic" else None
    rows, ratios = [], []
    for P, M in grid:
        by = {}
        for schedule in BENCH_SCHEDULES:
            r = measure(schedule, P, M, steps, syn, dim=8 if syn else 64, seq_len=8 if syn else 64)
            by[schedule] = r
            rows.append(r)
            if progress:
                print(f"  {schedule:6s} P={P} M={M:2d}: step {r['step_time_s']*1e3:7.1f} ms", flush=True)
        ideal = ideal_bubble_ratio(P, M)
        m1 = by["1f1b"]["step_time_s"] / by["2bw"]["step_time_s"]
        mg = by["gpipe"]["step_time_s"] / by["2bw"]["step_time_s"]
        ratios.append(dict(P=P, M=M, ideal=ideal, measured_1f1b=m1, measured_gpipe=mg,
                           eff_1f1b=m1 / ideal, eff_gpipe=mg / ideal))
    return dict(setting=setting, fwd_ms=fwd_ms if syn else None, bwd_ms=2 * fwd_ms if syn else None,
                rows=rows, ratios=ratios)


def format_table(result: dict) -> str:
    lines = [f"setting: {result['setting']}"
             + (f" (sleep {result['fwd_ms']:.0f} ms fwd / {result['bwd_ms']:.0f} ms bwd per microbatch)"
                if result["fwd_ms"] else ""),
             " P   M | step ms: gpipe    1f1b     2bw | ideal (M+P-1)/M | 1f1b/2bw  gpipe/2bw | 1f1b eff"]
    step = {(r["P"], r["M"], r["schedule"]): r["step_time_s"] * 1e3 for r in result["rows"]}
    for q in result["ratios"]:
        P, M = q["P"], q["M"]
        lines.append(f"{P:2d} {M:3d} |        {step[P, M, 'gpipe']:7.1f} {step[P, M, '1f1b']:7.1f} "
                     f"{step[P, M, '2bw']:7.1f} | {q['ideal']:15.3f} | {q['measured_1f1b']:8.3f} "
                     f"{q['measured_gpipe']:10.3f} | {q['eff_1f1b']:8.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.pipeline_bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--full", action="store_true", help="larger grid, more steps")
    p.add_argument("--setting", choices=("synthetic", "model", "both"), default="synthetic")
    p.add_argument("--fwd-ms", type=float, default=10.0, help="synthetic forward time per microbatch")
    p.add_argument("--json", default=None, help="also write the results here")
    show_defaults(p)
    args = p.parse_args(argv)
    out = {}
    for setting in (("synthetic", "model") if args.setting == "both" else (args.setting,)):
        print(f"running {setting} grid ...", flush=True)
        out[setting] = run_bench(quick=not args.full, setting=setting, fwd_ms=args.fwd_ms, progress=True)
        print(format_table(out[setting]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

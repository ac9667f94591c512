"""Throughput of the pipeline schedules, side by side in one run: ``python -m gpu_runs.pipeline.bench``.

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

``dp`` (``--setting dp``): data parallel x pipeline, P = 2 stages, D in {1, 2, 4} replicas
(N = P D processes), the synthetic stage compute and a fixed per-replica batch (M
microbatches of one row each, so the global batch grows with D). Per D: the median step
time and the dp all-reduce share of the step, ``allreduce / step``, the last stage's time
in its gradient averaging (``dp_allreduce_time`` in the log) over its step time. With
perfect scaling the step time stays flat in D and tokens / s grows by D; the share is what
the averaging costs (a toy of ``--toy-dim`` 256, 4 layers: ~0.5 M parameters per stage).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from gpu_runs.cli import show_defaults
from gpu_runs import verified_files
from gpu_runs.pipeline.launch import run_local
from gpu_runs.pipeline.schedules import ideal_bubble_ratio

BENCH_SCHEDULES = ("gpipe", "1f1b", "2bw")


def measure(schedule: str, P: int, M: int, steps: int, synthetic_ms: tuple | None,
            dim: int = 8, seq_len: int = 8, rows_per_mb: int = 1, dp: int = 1, layers: int | None = None) -> dict:
    """One P x dp-process run; returns median steady step time (s), tokens / s and the
    median share of the step the last stage spends in the dp averaging."""
    rows = M * rows_per_mb * dp  # the global batch: M microbatches of rows_per_mb rows per replica
    with tempfile.TemporaryDirectory() as d:
        argv = ["--schedule", schedule, "--model", "toy", "--optimizer", "sgd", "--toy-layers", str(layers or P),
                "--toy-dim", str(dim), "--steps", str(steps), "--microbatches", str(M),
                "--batch-size", str(rows), "--seq-len", str(seq_len), "--clip", "1.0",
                "--out", d, "--quiet", "--timeout", "120", "--eval-every", "0", "--dp", str(dp)]
        if synthetic_ms is not None:
            argv += ["--synthetic-ms", f"{synthetic_ms[0]},{synthetic_ms[1]}"]
        res = run_local(argv, P * dp, timeout=600)
        if any(rc != 0 for rc, _, _ in res):
            raise RuntimeError(f"{schedule} P={P} M={M} dp={dp} failed: "
                               + " | ".join(e[-500:] for _, _, e in res))
        log = [json.loads(line) for line in open(Path(d) / "log.jsonl")]
    steady = log[2:] or log
    t = statistics.median(r["step_time"] for r in steady)
    share = statistics.median(r.get("dp_allreduce_time", 0.0) / r["step_time"] for r in steady)
    return dict(schedule=schedule, P=P, M=M, dp=dp, step_time_s=t, allreduce_share=share,
                tokens_per_s=rows * seq_len / t, steps=steps)


def run_dp_bench(quick: bool = True, fwd_ms: float = 10.0, P: int = 2, M: int = 4, dim: int = 256,
                 progress: bool = False) -> dict:
    """The dp column: for 1f1b and 2bw, D in {1, 2, 4} at a fixed per-replica batch."""
    dps, steps = ((1, 2, 4), 8) if quick else ((1, 2, 4), 16)
    rows = []
    for schedule in ("1f1b", "2bw"):
        for D in dps:
            r = measure(schedule, P, M, steps, (fwd_ms, 2 * fwd_ms), dim=dim, dp=D, layers=4)
            rows.append(r)
            if progress:
                print(f"  {schedule:5s} P={P} M={M} dp={D}: step {r['step_time_s']*1e3:7.1f} ms, "
                      f"all-reduce {100 * r['allreduce_share']:.1f}%", flush=True)
    return dict(setting="dp", fwd_ms=fwd_ms, bwd_ms=2 * fwd_ms, dim=dim, rows=rows)


def format_dp_table(result: dict) -> str:
    lines = [f"setting: dp (sleep {result['fwd_ms']:.0f} ms fwd / {result['bwd_ms']:.0f} ms bwd per microbatch, "
             f"toy dim {result['dim']}, fixed per-replica batch)",
             "schedule  P  M  dp | step ms | tokens/s | vs dp=1 tokens/s | all-reduce share"]
    base = {r["schedule"]: r["tokens_per_s"] for r in result["rows"] if r["dp"] == 1}
    for r in result["rows"]:
        lines.append(f"{r['schedule']:8s} {r['P']:2d} {r['M']:2d} {r['dp']:3d} | {r['step_time_s']*1e3:7.1f} | "
                     f"{r['tokens_per_s']:8.0f} | {r['tokens_per_s'] / base[r['schedule']]:16.2f} | "
                     f"{100 * r['allreduce_share']:15.1f}%")
    return "\n".join(lines)


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
    p = argparse.ArgumentParser(prog="python -m gpu_runs.pipeline.bench", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--full", action="store_true", help="larger grid, more steps")
    p.add_argument("--setting", choices=("synthetic", "model", "both", "dp"), default="synthetic",
                   help="dp: the data-parallel column (step time and all-reduce share vs D)")
    p.add_argument("--fwd-ms", type=float, default=10.0, help="synthetic forward time per microbatch")
    p.add_argument("--json", default=None, help="also write the results here")
    show_defaults(p)
    args = p.parse_args(argv)
    out = {}
    if args.setting == "dp":
        print("running dp grid ...", flush=True)
        out["dp"] = run_dp_bench(quick=not args.full, fwd_ms=args.fwd_ms, progress=True)
        print(format_dp_table(out["dp"]), flush=True)
    for setting in {"both": ("synthetic", "model"), "dp": ()}.get(args.setting, (args.setting,)):
        print(f"running {setting} grid ...", flush=True)
        out[setting] = run_bench(quick=not args.full, setting=setting, fwd_ms=args.fwd_ms, progress=True)
        print(format_table(out[setting]), flush=True)
    if args.json:
        verified_files.write_text(args.json, json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

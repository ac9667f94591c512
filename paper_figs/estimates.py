"""Rough run-time estimates for ``--list`` (seconds; measured on the 2-core CPU machine).

Sources:
- ``SEC_PER_STEP["tiny"]``: the issue's measurement, a 1500-step tiny run (2 layers,
  width 128, batch 32 x 64 bytes) takes about 90-110 s with 2 threads -> 0.067 s/step.
- ``SEC_PER_STEP["small"]``: gpu_runs.model forward + backward + AdamW at batch 32 x 64,
  2 threads, measured here: tiny 0.053 s/step, small 0.267 s/step (5.0x); so tiny's
  trainer figure times 5.0.
- ``PAIR_FACTOR``: a pair of tiny 1500-step runs side by side (1 thread each) took
  150-176 s in `python -m paper_figs --profile quick` (2026-12-02, the last two pairs; the
  first pair shared the cores with a test run: 223 s), against ~100 s for one 2-thread run:
  1.75x, so ``jobs=2`` costs 1.75 / 2 = 0.875 of the serial time. (A first proxy, a
  torch.nn transformer for 60 steps, gave 1.31x; ``python -m paper_figs.parallel_bench``
  on a loaded machine gave 2.69x: load from other processes dominates these numbers.)
- ``EXTERNAL_S``: ``pipeline_bench.run_bench(quick=True)`` took 54-79 s here; the theory
  delay-price curve < 1 s and verify.report(quick=True) with its figures 19 s (theory: 20 s).
Unknown entries print as "unknown", never as a guess.
"""
from __future__ import annotations

SEC_PER_STEP: dict[str, float] = {"tiny": 0.067, "small": 0.067 * 5.0}
PAIR_FACTOR = 1.75
EXTERNAL_S: dict[str, float | None] = {"pipeline": 79.0, "theory": 20.0}


def run_seconds(settings: dict) -> float | None:
    """Serial (2-thread) seconds of one run, scaled from SEC_PER_STEP by steps and tokens/step."""
    sps = SEC_PER_STEP.get(settings.get("config"))
    if sps is None or settings.get("device", "cpu") != "cpu":
        return None
    tokens = settings.get("batch_size", 32) * settings.get("seq_len", 64) / (32 * 64)
    return sps * settings["steps"] * tokens


def total_seconds(runs: list[dict], jobs: int) -> float | None:
    """Estimated wall time of ``runs`` with ``jobs`` processes (None if any run is unknown)."""
    secs = [run_seconds(s) for s in runs]
    if any(s is None for s in secs):
        return None
    serial = sum(secs)
    return serial * PAIR_FACTOR / 2 if jobs >= 2 else serial


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown"
    return f"~{s / 60:.0f} min" if s >= 120 else f"~{s:.0f} s"

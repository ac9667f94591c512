"""Run-time estimates for ``--list`` (seconds on a 2-core CPU machine), one model, one table.

Model of one training run (serial, 2 torch threads)::

    t_run = RUN_OVERHEAD_S + steps * SEC_PER_STEP[config] * (B * T / (32 * 64)) * factor(optimizer, config)

and of a profile: the live runs' sum, times PAIR_FACTOR / 2 when ``jobs >= 2`` (two
1-thread processes side by side), plus WORKER_START_S per process, plus the external
calls (EXTERNAL_S), plus STARTUP_S and RENDER_S per figure. Runs read from the cache or
from kept records cost nothing.

Sources (a shared machine: absolute numbers drift with other load, ratios less so):

- ``SEC_PER_STEP["tiny"]``: a 1500-step tiny AdamW run (2 layers, width 128, batch 32 x 64
  bytes) takes about 90-110 s with 2 threads -> 0.067 s/step (issue 17's measurement).
- ``SEC_PER_STEP["small"]``: forward + backward + AdamW at batch 32 x 64, 2 threads: tiny
  0.053 s/step, small 0.267 s/step (5.0x), so tiny's figure times 5.0.
- ``STEP_FACTOR``: one optimizer step of the whole training loop in AdamW steps, with two
  columns: CPUs where bf16 matmul is slow (AVX2 only) and CPUs with fast bf16 matmul
  (avx512_bf16 / AMX), chosen by :func:`bf16_fast`. Only Newton-Schulz (the Muon family)
  runs bf16 matmuls, so only its rows differ. AVX2 column, Muon family: issue 17 (a Muon
  update 340 ms against 110 ms forward + backward and 8 ms for AdamW's, tiny, 1 thread:
  3.5x tiny, 6.6x small); expected to fall to about 1.3x when Newton-Schulz runs in fp32 on
  such CPUs (rerun ``python -m paper_figs.step_costs --config tiny`` and ``--config small``
  then, and update the column). Every other entry: ``python -m paper_figs.step_costs
  --config tiny`` on an avx512_bf16 AMD EPYC, 2 cores shared with other jobs, 2026-12-03
  (median of 2 interleaved rounds: Muon 0.91, NorMuon 1.28, AdaMuon 1.15, SOAP 1.23,
  NAdam 1.08, Adan 1.09, MARS 1.04, Lion 1.01); the small-model run was too noisy under
  the load to resolve ratios, so small takes tiny's ratio where no other number exists.
- ``tiny_moe`` (the MoE figure; only Muon runs on it): ``python -m paper_figs.step_costs
  --config tiny tiny_moe --optimizers adamw muon --steps 16 --rounds 3`` (one process, 1
  thread, avx512_bf16 AMD EPYC, 2 cores shared with other jobs, load average 2-3,
  2026-12-03): tiny_moe AdamW 1.22x a tiny AdamW step, tiny_moe Muon 1.11x a tiny_moe AdamW
  step (1.36x a tiny AdamW step; an 8-step, 3-round run gave 1.38x, though its AdamW ratio
  alone was 0.87x: only the product is steady under the load), so
  ``SEC_PER_STEP["tiny_moe"]`` is tiny's times 1.22. That Muon factor (1.11) proved 1.46x
  too low in the protocol itself: the full profile's MoE runs (2 processes x 1 thread,
  2026-12-03) took 325-360 s a run for 1500 steps and 691-694 s for 3000, 0.23 s a step
  side by side, 0.132 s serial-equivalent (/ PAIR_FACTOR) = tiny_moe's 0.082 x 1.62; the
  table now holds 1.62 (it charged the MoE figure 84 min, it took about 2 h). The AVX2 column is unmeasured (its
  Newton-Schulz runs over 8 experts' matrices in bf16): ``None``, so the estimate says "unknown"
  on such CPUs until someone measures it there.
- ``RUN_OVERHEAD_S``: per run, building the model and data and evaluating. Measured with
  the micro profile, where it is nearly all of the training time: ``python -m paper_figs
  --profile micro`` trained its 65 runs (4 steps each) in 18 s, 0.28 s a run (2026-12-03,
  load average 4-6 on the 2 cores). The same invocation took 272 s in all: verify.report 46 s
  and the pipeline benchmark 195 s under that load (19 s and 54-79 s on an idle machine),
  so the micro profile's time is its external calls; the old estimate (~1 s) left them
  out of its total.
- ``WORKER_START_S``: a spawned worker process importing torch and the trainer.
- ``STARTUP_S`` and ``RENDER_S``: the invocation's own start (importing torch, matplotlib,
  sympy through theory, verify) and drawing one figure. ``python -m paper_figs --profile
  micro --only fig3``: 19 s wall, of which importing ``paper_figs.pipeline`` 8 s, training
  its 12 runs 6 s and the rest of ``run_profile`` 1 s (2026-12-03, load average 5).
- ``PAIR_FACTOR``: a pair of tiny 1500-step runs side by side (1 thread each) took 150-176 s
  against ~100 s for one 2-thread run: 1.75x, so ``jobs=2`` costs 1.75 / 2 of the serial time.
- ``EXTERNAL_S``: ``gpu_runs.pipeline.bench.run_bench(quick=True)`` 54-79 s; ``verify.report(quick=True)``
  with its figures 19 s, the delay-price curves < 1 s (idle machine; 195 s and 46 s under a
  load average of 6). The non-quick calls are unmeasured.
Unknown entries print as "unknown", never as a guess.
"""
from __future__ import annotations

import functools

SEC_PER_STEP: dict[str, float] = {"tiny": 0.067, "small": 0.067 * 5.0, "tiny_moe": 0.067 * 1.22}

# optimizer -> config -> (factor where bf16 matmul is slow, factor where it is fast); None: unmeasured
STEP_FACTOR: dict[str, dict[str, tuple[float | None, float | None]]] = {
    "adamw": {"tiny": (1.0, 1.0), "small": (1.0, 1.0), "tiny_moe": (1.0, 1.0)},
    "muon": {"tiny": (3.5, 1.0), "small": (6.6, 1.0), "tiny_moe": (None, 1.62)},
    "normuon": {"tiny": (3.5, 1.3), "small": (6.6, 1.3)},
    "adamuon": {"tiny": (3.5, 1.15), "small": (6.6, 1.15)},
    "soap": {"tiny": (1.23, 1.23), "small": (1.23, 1.23)},
    "nadam": {"tiny": (1.08, 1.08), "small": (1.08, 1.08)},
    "adan": {"tiny": (1.09, 1.09), "small": (1.09, 1.09)},
    "mars": {"tiny": (1.04, 1.04), "small": (1.04, 1.04)},
    "lion": {"tiny": (1.01, 1.01), "small": (1.01, 1.01)},
}
RUN_OVERHEAD_S = 0.3
WORKER_START_S = 4.0
STARTUP_S = 8.0
RENDER_S = 1.0
PAIR_FACTOR = 1.75
EXTERNAL_S: dict[tuple[str, bool], float | None] = {
    ("pipeline", True): 79.0, ("theory", True): 20.0, ("pipeline", False): None, ("theory", False): None,
}


@functools.lru_cache(maxsize=1)
def bf16_fast() -> bool:
    """Does this CPU advertise fast bf16 matmul (avx512_bf16 or AMX)? False when unknown."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln for ln in f if ln.startswith("flags")), "")
    except OSError:
        return False
    return any(f in flags.split() for f in ("avx512_bf16", "amx_bf16"))


def step_factor(optimizer: str, config: str, fast_bf16: bool | None = None) -> float | None:
    """STEP_FACTOR[optimizer][config] for this CPU kind; None if not in the table or unmeasured."""
    row = STEP_FACTOR.get(optimizer, {}).get(config)
    if row is None:
        return None
    return row[1] if (bf16_fast() if fast_bf16 is None else fast_bf16) else row[0]


def run_seconds(settings: dict, fast_bf16: bool | None = None) -> float | None:
    """Serial (2-thread) seconds of one run: RUN_OVERHEAD_S + steps x step cost (module docstring)."""
    sps = SEC_PER_STEP.get(settings.get("config"))
    factor = step_factor(settings.get("optimizer", "adamw"), settings.get("config"), fast_bf16)
    if sps is None or factor is None or settings.get("device", "cpu") != "cpu":
        return None
    tokens = settings.get("batch_size", 32) * settings.get("seq_len", 64) / (32 * 64)
    return RUN_OVERHEAD_S + sps * settings["steps"] * tokens * factor


def total_seconds(runs: list[dict], jobs: int, fast_bf16: bool | None = None) -> float | None:
    """Estimated wall time of training ``runs`` with ``jobs`` processes (None if any run is unknown)."""
    if not runs:
        return 0.0
    secs = [run_seconds(s, fast_bf16) for s in runs]
    if any(s is None for s in secs):
        return None
    serial = sum(secs)
    if jobs >= 2 and len(runs) >= 2:
        return serial * PAIR_FACTOR / 2 + WORKER_START_S * min(jobs, len(runs))
    return serial


def external_seconds(name: str, quick: bool) -> float | None:
    return EXTERNAL_S.get((name, quick))


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown"
    return f"~{s / 60:.0f} min" if s >= 120 else f"~{s:.0f} s"

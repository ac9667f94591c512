"""Pipeline figure: measured throughput of PipeDream-2BW, 1F1B and GPipe vs the ideal bubble ratio.

A synchronous schedule with P stages and M microbatches idles for a fraction of each step;
its ideal time ratio to a bubble-free schedule is (M + P - 1) / M. The benchmark
(``gpu_runs.pipeline_bench.run_bench``) measures the real ratio; this module plots the two.
"""
from __future__ import annotations

from .. import plotting
from ..deps import Unavailable
from ..verdicts import INCONCLUSIVE, Verdict
from .common import Context, FigureOutput
from .external import cached_call

NAME = "pipeline"
TITLE = "Pipeline figure: measured throughput ratio vs the ideal bubble ratio (M+P-1)/M"


def runs(p) -> list[dict]:
    return []


def ideal_ratio(M: int, P: int) -> float:
    """(M + P - 1) / M: time of a synchronous pipeline step over a bubble-free one."""
    if M < 1 or P < 1:
        raise ValueError(f"M, P: must be >= 1, got M={M}, P={P}")
    return (M + P - 1) / M


def rows_of(bench: dict) -> list[dict]:
    """The per-configuration rows of the benchmark's result (a list of dicts)."""
    for key in ("rows", "results", "runs", "configs"):
        if isinstance(bench.get(key), list) and all(isinstance(r, dict) for r in bench[key]):
            return bench[key]
    raise ValueError(f"run_bench result: no list of rows under 'rows'/'results'; keys {sorted(bench)}")


def build(ctx: Context) -> FigureOutput:
    out = FigureOutput(NAME, TITLE)
    quick = ctx.profile.quick_external
    try:
        run_bench = ctx.deps.get("run_bench")
        bench = cached_call(ctx, "pipeline_bench", {"quick": quick}, lambda: run_bench(quick=quick))
        rows = rows_of(bench)
    except Unavailable as e:
        out.status = f"not available: {e}"
        return out
    except Exception as e:
        out.status = f"not available: pipeline benchmark failed or gave an unknown format: {type(e).__name__}: {e}"
        return out
    fig, axes = plotting.new()
    ax = axes[0]
    table = ["| schedule | P | M | ideal (M+P-1)/M | measured time ratio to 2BW |", "|---|---|---|---|---|"]
    by_sched: dict[str, list] = {}
    for r in rows:
        try:
            P, M, sched, meas = int(r["P"]), int(r["M"]), str(r["schedule"]), float(r["ratio"])
        except (KeyError, TypeError, ValueError) as e:
            out.status = f"not available: benchmark row without P/M/schedule/ratio ({e}): {r}"
            return out
        by_sched.setdefault(sched, []).append((ideal_ratio(M, P), meas))
        table.append(f"| {sched} | {P} | {M} | {ideal_ratio(M, P):.3f} | {meas:.3f} |")
    hi = 1.0
    for sched, pts in by_sched.items():
        pts.sort()
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=sched)
        hi = max([hi] + [max(a, b) for a, b in pts])
    ax.plot([1, hi], [1, hi], color="black", linewidth=0.8, linestyle=":", label="ideal: measured = (M+P-1)/M")
    ax.set_xlabel("ideal bubble ratio (M+P-1)/M")
    ax.set_ylabel("measured step-time ratio to PipeDream-2BW")
    ax.set_title("Pipeline bubbles: measured vs ideal")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    out.files = plotting.save(fig, ctx.fig_dir, "pipeline_throughput")
    out.caption = "Measured step-time ratio of synchronous schedules to PipeDream-2BW against (M+P-1)/M."
    out.paper = ["The summary motivates asynchronous PP by bubbles (idle GPUs) of synchronous PP; "
                 "throughput numbers: not given in the summary."]
    out.measured = ["Pipeline benchmark (" + ("quick" if quick else "full") + "):", "", *table]
    out.verdicts = {"2BW removes the bubble (measured ratio follows the ideal)": ctx.verdict(
        Verdict(INCONCLUSIVE, "not a claim with numbers in the summary; compare the table with the ideal"))}
    return out

"""Theory figures: measured momentum error and gradient norm vs the bounds (from ``verify``),
and the delay price of the optimized bounds against the horizon K (from ``theory``).

delay price(K) = (optimized delayed bound) / (optimized synchronous bound) at horizon K, as
``theory.rates.delay_price`` defines it; this module only plots what it returns.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import paper_numbers as pn
from .. import plotting
from ..deps import Unavailable
from ..verdicts import FAILS, HOLDS, INCONCLUSIVE, Verdict
from .common import Context, FigureOutput
from .external import cached_call

NAME = "theory"
TITLE = "Theory figures: bounds vs measurement, and the delay price of the optimized bounds"
K_GRID = np.logspace(2, 8, 13)
CONSTANTS = {"L": 1.0, "sigma": 1.0, "rho": 1.0, "Delta_0": 1.0}


def runs(p) -> list[dict]:
    return []


VARIANTS = {"delayed": "one-step delay", "ef": "error feedback (worst case)"}


def _delay_price_curves(fn, leading=None) -> dict[str, list[float]]:
    """{label: B*_variant(K) / B*_sync(K) over K_GRID} for each variant ``fn`` accepts;
    with ``leading`` (theory.rates.delay_price_leading) also its leading-order formula."""
    curves = {}
    for v, lab in VARIANTS.items():
        curves[lab] = [float(x) for x in np.atleast_1d(fn(K_GRID, variant=v, **CONSTANTS))]
        if leading is not None:
            curves[lab + ", leading order 1 + c mu*/4"] = [
                float(x) for x in np.atleast_1d(leading(K_GRID, variant=v, **CONSTANTS))]
    return curves


def _overall(report: dict) -> Verdict:
    """Overall verdict from verify's report, from its own pass/fail field if it has one."""
    for key in ("all_hold", "all_passed", "passed", "ok", "holds"):
        if isinstance(report.get(key), bool):
            return Verdict(HOLDS if report[key] else FAILS, f"verify.report field '{key}' = {report[key]}")
    return Verdict(INCONCLUSIVE, "verify.report returned no overall pass/fail field; see its summary")


def _summarize(report: dict, limit: int = 20) -> list[str]:
    lines = []
    for k, v in list(report.items())[:limit]:
        text = str(v)
        lines.append(f"- `{k}`: {text[:200] + ' ...' if len(text) > 200 else text}")
    return lines


def build(ctx: Context) -> FigureOutput:
    out = FigureOutput(NAME, TITLE)
    quick = ctx.profile.quick_external
    theory_dir = ctx.out / "figures" / "theory"
    out.paper = [pn.CLAIMS["theory"], pn.DISCREPANCIES[1]]
    parts = []
    try:
        make = ctx.deps.get("make_theory_figures")
        paths = cached_call(ctx, "verify.figures", {"quick": quick, "out": str(theory_dir)},
                            lambda: [str(x) for x in make(theory_dir, quick=quick)],
                            valid=lambda r: all(Path(x).exists() for x in r))
        out.files += [Path(x) for x in paths]
        parts.append("verify figures: " + ", ".join(Path(x).name for x in paths))
    except Unavailable as e:
        out.missing.append(f"verify figures (momentum error, gradient norm vs bounds): not available: {e}")
    except Exception as e:
        out.missing.append(f"verify figures: failed: {type(e).__name__}: {e}")
    try:
        run_report = ctx.deps.get("run_report")
        report = cached_call(ctx, "verify.report", {"quick": quick, "out": str(ctx.out / "verify")},
                             lambda: run_report(quick, ctx.out / "verify"))
        out.measured += ["verify.report summary:", "", *_summarize(report if isinstance(report, dict) else {"result": report})]
        out.verdicts["bounds hold in the verify checks"] = ctx.verdict(
            _overall(report if isinstance(report, dict) else {}))
    except Unavailable as e:
        out.missing.append(f"verify report: not available: {e}")
    except Exception as e:
        out.missing.append(f"verify report: failed: {type(e).__name__}: {e}")
    try:
        fn = ctx.deps.get("delay_price")
        try:
            leading = ctx.deps.get("delay_price_leading")
        except Unavailable:
            leading = None
        curves = cached_call(ctx, "theory.delay_price", {"K": K_GRID.tolist(), "constants": CONSTANTS,
                                                         "leading": leading is not None},
                             lambda: _delay_price_curves(fn, leading))
        fig, axes = plotting.new()
        ax = axes[0]
        for lab, ys in curves.items():
            ax.plot(K_GRID, ys, marker="" if "leading" in lab else ".",
                    linestyle=":" if "leading" in lab else "-", label=lab)
        ax.set_xscale("log")
        ax.set_xlabel("horizon K (steps)")
        ax.set_ylabel("delayed / synchronous optimized bound (ratio)")
        ax.set_title("Delay price of the optimized bounds")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        out.files += plotting.save(fig, ctx.fig_dir, "theory_delay_price")
        finite = [y for ys in curves.values() for y in ys if math.isfinite(y)]
        out.measured += ["", f"Delay price at K = 1e2 .. 1e8 with {CONSTANTS}: "
                         + "; ".join(f"{k}: {v[0]:.4f} at K=1e2, {v[len(v) // 2]:.4f} at K=1e5, {v[-1]:.6f} at K=1e8"
                                    for k, v in curves.items())]
        if not finite:
            out.missing.append("delay price: theory.rates.delay_price returned no finite value")
    except Unavailable as e:
        out.missing.append(f"delay price: not available: {e}")
    except Exception as e:
        out.missing.append(f"delay price: failed: {type(e).__name__}: {e}")
    out.status = "done" if not out.missing else ("partial" if out.files else
                                                  "not available: " + "; ".join(out.missing))
    out.caption = ("Measured momentum error and gradient norm against the bounds (verify), and the "
                   "ratio of the optimized delayed to synchronous bound against the horizon (theory).")
    out.notes = parts
    return out

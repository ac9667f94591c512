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
K_GRID = np.logspace(2, 8, 25)
CONSTANTS = {"L": 1.0, "sigma": 1.0, "rho": 1.0, "Delta_0": 1.0}


def runs(p) -> list[dict]:
    return []


def _delay_price_curves(fn) -> dict[str, list[float]]:
    """{label: values over K_GRID}; accepts a scalar/array or a dict of them per K."""
    vals = [fn(float(k), **CONSTANTS) for k in K_GRID]
    if isinstance(vals[0], dict):
        keys = [k for k, v in vals[0].items() if isinstance(v, (int, float)) or hasattr(v, "item")]
        return {k: [float(v[k]) for v in vals] for k in keys}
    return {"delay price": [float(v) for v in vals]}


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
        curves = cached_call(ctx, "theory.delay_price", {"K": K_GRID.tolist(), "constants": CONSTANTS},
                             lambda: _delay_price_curves(fn))
        fig, axes = plotting.new()
        ax = axes[0]
        for lab, ys in curves.items():
            ax.plot(K_GRID, ys, marker=".", label=lab)
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
                         + "; ".join(f"{k}: {v[0]:.3g} -> {v[-1]:.3g}" for k, v in curves.items())]
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

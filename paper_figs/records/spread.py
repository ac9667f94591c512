"""The cross-machine spread file as data: its path, its format and its per-regime summary.

``python -m paper_figs.cross_machine`` (a command: it retrains runs) writes
``paper_figs/cross_machine_spread.json``; the statistics read it through this module
(``paper_figs.statistics.machine_noise``), so no statistic imports the command. A row is one
retrained run: its regime, the machine kind its kept twin was made on, and
``diff = L_here - L_kept`` (final validation loss, nats/byte).
"""
from __future__ import annotations

import statistics

from pathlib import Path

from .machine_regimes import REGIMES

SPREAD_FILE = Path(__file__).resolve().parent.parent / "cross_machine_spread.json"
FORMAT = 1


def summary(data: dict) -> list[dict]:
    """Per regime: n, mean |diff|, max |diff|, the RMS of diff (the SD a comparison of two
    machine kinds adds to one run's final loss) and the machine kinds compared."""
    out = []
    for regime in REGIMES:
        rows = [r for r in data["rows"] if r["regime"] == regime]
        if not rows:
            continue
        d = [abs(r["diff"]) for r in rows]
        out.append({"regime": regime, "n": len(rows), "mean_abs": statistics.fmean(d), "max_abs": max(d),
                    "rms": (sum(x * x for x in d) / len(d)) ** 0.5,
                    "kept_on": sorted({r["kept_on"] for r in rows})})
    return out

"""The machine as a noise source (docs/protocol.md §7): the measured cross-machine spread per
regime, as a verdict's variance component, as the live-vs-kept tolerance, and as the
README's reproducibility sentence. ``python -m paper_figs.statistics.machine_noise`` prints them.

The spread is measured by ``python -m paper_figs.cross_machine`` (its file,
``paper_figs/cross_machine_spread.json``, rows of |here - kept| per regime): per regime the
RMS of ``here - kept`` is the SD one run's final loss moves by between two machine kinds.
A paired difference whose two runs come from two kinds gets that variance added; a regime
not measured takes the largest RMS of any measured regime; with no file there is no spread
to add, and a line that needs one says so.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..records import spread as spread_file
from ..records.machine_regimes import REGIMES
from .protocol import TOLERANCE_FACTOR, TOLERANCE_UNMEASURED

SPREAD_FILE = spread_file.SPREAD_FILE
PLACEHOLDER = ("[placeholder until `paper_figs/cross_machine_spread.json` exists: the cross-machine spread per "
               "regime is being measured by `python -m paper_figs.cross_machine`; "
               "`python -m paper_figs.statistics.machine_noise --readme` then prints this sentence]")


def split_kind(kind: str) -> tuple[str, str | None]:
    """'CPU model [capability]' -> (model, capability or None)."""
    kind = str(kind)
    if kind.endswith("]") and " [" in kind:
        model, _, cap = kind[:-1].rpartition(" [")
        return model, cap
    return kind, None


def same_kind(a: str, b: str) -> bool:
    """Two machine kinds are one only when their spellings are equal (docs/protocol.md §7). A
    record made before the capability was recorded ("AMD EPYC x2") is not the same kind as a
    record of the same CPU model with one ("AMD EPYC x2 [AVX2]"): one CPU model comes with
    more than one instruction set (this repository's AMD records were made with AVX-512, the
    cross-machine sample's first machine has AVX2, and their NAdam sync runs differ by 0.0096),
    so an unknown capability can only be compared with another unknown one of that model."""
    return split_kind(a) == split_kind(b)


@dataclass(frozen=True)
class MachineSpread:
    """Per regime (n, mean |diff|, max |diff|, rms) of the measured cross-machine spread;
    ``present`` False when the spread file does not exist."""

    present: bool
    per_regime: dict = field(default_factory=dict)
    measured_on: str = ""
    kept_on: tuple = ()

    def rms_for(self, regimes: Sequence[str]) -> tuple[float, int, str]:
        """(rms, n, which) for a pair whose runs are in ``regimes``: the largest RMS of those
        measured; none measured: the largest RMS of any regime."""
        measured = [(self.per_regime[r]["rms"], self.per_regime[r]["n"], r) for r in regimes if r in self.per_regime]
        if measured:
            return max(measured)
        rms, n, r = max((v["rms"], v["n"], k) for k, v in self.per_regime.items())
        return rms, n, f"{'/'.join(regimes) or 'regime'} not measured: {r}'s, the largest"

    def tolerance(self, regime: str) -> tuple[float, str]:
        """The live-vs-kept tolerance of a run in ``regime``: TOLERANCE_FACTOR x the largest
        |here - kept| measured there, else TOLERANCE_UNMEASURED."""
        s = self.per_regime.get(regime)
        if s is None:
            return TOLERANCE_UNMEASURED, f"{regime}: not measured, {TOLERANCE_UNMEASURED:g}"
        tol = TOLERANCE_FACTOR * s["max_abs"]
        return tol, f"{regime}: {TOLERANCE_FACTOR:g} x the largest |here - kept| {s['max_abs']:.4f} (n={s['n']})"


def from_data(data: dict) -> MachineSpread:
    """:class:`MachineSpread` of a spread file's content (format 1)."""
    if data.get("format") != spread_file.FORMAT:
        raise ValueError(f"cross-machine spread file: format {data.get('format')!r}, expected {spread_file.FORMAT}")
    rows = spread_file.summary(data)
    return MachineSpread(True, {r["regime"]: r for r in rows}, str(data.get("measured_on", "?")),
                         tuple(sorted({k for r in rows for k in r["kept_on"]})))


def load(path: Path = SPREAD_FILE) -> MachineSpread:
    """The measured spread, or an absent one (``present`` False) when the file does not exist."""
    path = Path(path)
    if not path.exists():
        return MachineSpread(False)
    try:
        return from_data(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a cross-machine spread file: {e}") from e


def table(spread: MachineSpread) -> list[str]:
    """The report's table of |here - kept| per regime, with n."""
    if not spread.present:
        return [f"The cross-machine spread has not been measured yet ({SPREAD_FILE.name} is absent; "
                "`python -m paper_figs.cross_machine` measures it): lines whose pairs mix machine kinds are "
                "inconclusive, and the live-vs-kept tolerance is "
                f"{TOLERANCE_UNMEASURED:g} for every regime."]
    rows = [f"Measured on {spread.measured_on} against kept records made on {'; '.join(spread.kept_on)} "
            "(`python -m paper_figs.cross_machine`; |final validation loss here - kept|, nats/byte):", "",
            "| regime | n | mean | max | rms | live-vs-kept tolerance |", "|---|---|---|---|---|---|"]
    for r in REGIMES:
        s = spread.per_regime.get(r)
        if s:
            rows.append(f"| {r} | {s['n']} | {s['mean_abs']:.4f} | {s['max_abs']:.4f} | {s['rms']:.4f} | "
                        f"{spread.tolerance(r)[0]:.4f} |")
        else:
            rows.append(f"| {r} | 0 | - | - | - | {TOLERANCE_UNMEASURED:g} (not measured) |")
    return rows


def readme_sentence(spread: MachineSpread) -> str:
    """README's reproducibility sentence, generated from the measurement (or the placeholder)."""
    if not spread.present:
        return PLACEHOLDER
    parts = [f"{r} {s['max_abs']:.4f} (n={s['n']})" for r in REGIMES for s in [spread.per_regime.get(r)] if s]
    return ("Retrained on another kind of CPU (`python -m paper_figs.cross_machine`, measured on "
            f"{spread.measured_on}), a run's final loss moves by at most, per regime: " + ", ".join(parts)
            + " nats/byte.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.statistics.machine_noise", description=__doc__.split("\n\n")[0])
    ap.add_argument("--file", type=Path, default=SPREAD_FILE, help=f"the spread file (default {SPREAD_FILE})")
    ap.add_argument("--readme", action="store_true", help="print only README's reproducibility sentence")
    a = ap.parse_args(argv)
    spread = load(a.file)
    if not a.readme:
        print("\n".join(table(spread)), end="\n\n")
    print(readme_sentence(spread))
    return 0


if __name__ == "__main__":
    sys.exit(main())

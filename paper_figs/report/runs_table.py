"""Every number checkable in two lines (issue 51 item 5): ``OUT/runs.csv`` holds one row per run
the invocation used (its key, settings, final validation loss, where it came from, the machine
kind and commit that made it, the figures that used it) and ``OUT/curves.csv`` its validation
curve in long format (key, step, val_loss), so that any line of REPORT.md can be recomputed
with the csv module or pandas. Both are written atomically."""
from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from ..records.cache import write_atomically
from ..records.machine_regimes import lr_multiplier, machine_kind

#: the run's settings, read from its full config (its record's, or the settings it ran with)
SETTING_COLUMNS = ("optimizer", "mode", "ef", "tau", "stages", "corrector", "dc_asgd", "sync_start",
                   "sync_cooldown", "delay_profile", "delayed_groups", "lr", "momentum", "opt_kwargs",
                   "config", "steps", "seed")
COLUMNS = ("key", *SETTING_COLUMNS, "lr_multiplier", "final_val_loss", "source", "machine_kind", "commit",
           "figures")
CURVE_COLUMNS = ("key", "step", "val_loss")


def _cell(v) -> str:
    """A value as a csv cell: '' for None (a preset: the trainer's default), JSON for a mapping."""
    if v is None:
        return ""
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def used_runs(outputs) -> dict:
    """{key: (outcome, [figure names])} of every run with a record that a figure used, in order."""
    runs: dict = {}
    for o in outputs:
        for r in o.runs:
            if r.ok and r.key:
                runs.setdefault(r.key, (r, []))[1].append(o.name)
    return {k: (r, list(dict.fromkeys(fs))) for k, (r, fs) in runs.items()}


def _multiplier(settings) -> float | None:
    """The run's peak lr over its optimizer's preset (None for an optimizer without a preset)."""
    try:
        return lr_multiplier(settings)
    except (KeyError, TypeError, ValueError):
        return None


def row(outcome, figures) -> dict:
    """One run's row of runs.csv."""
    cfg = {**(outcome.record.get("config") or outcome.config or {}), **outcome.settings}
    prov = outcome.record.get("provenance") or {}
    final = outcome.final
    return {"key": outcome.key, **{c: _cell(cfg.get(c)) for c in SETTING_COLUMNS},
            "lr_multiplier": _cell(_multiplier(outcome.settings)),
            "final_val_loss": repr(final) if math.isfinite(final) else "",
            "source": outcome.source, "machine_kind": machine_kind(prov) if prov else "",
            "commit": _cell(prov.get("commit")), "figures": " ".join(figures)}


def _csv(columns, rows) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def write_runs_csv(out_dir: Path, outputs) -> tuple[Path, Path]:
    """Write ``OUT/runs.csv`` and ``OUT/curves.csv``; return their paths."""
    out_dir = Path(out_dir)
    runs = used_runs(outputs)
    rows = [row(r, figs) for r, figs in runs.values()]
    curves = []
    for key, (r, _) in runs.items():
        steps, values = r.curve("val_loss")
        curves += [{"key": key, "step": s, "val_loss": repr(v)} for s, v in zip(steps, values)]
    return (write_atomically(out_dir / "runs.csv", _csv(COLUMNS, rows)),
            write_atomically(out_dir / "curves.csv", _csv(CURVE_COLUMNS, curves)))

"""How far kept runs move on another CPU, per regime: ``python -m paper_figs.cross_machine``.

Retrains, on this machine and with exactly each record's configuration, a sample of the kept
records that were made on another kind of machine, and writes per run the final validation
loss here, the kept one and their difference ``here - kept``, plus the validation curves'
differences, to ``paper_figs/cross_machine_spread.json`` (as each run finishes: a killed
sample resumes where it stopped). ``--summary`` prints the table of |here - kept| per regime.

The sample is fixed before any number is seen (``sample_plan``): the kept records are
grouped by regime (``paper_figs.records.machine_regimes``), and from each regime ``PER_REGIME``
records made on another machine kind are drawn in the order of sha256(key + SALT),
alternating between the machine kinds that made them. Each run trains with one thread per
process, as the full profile does (``jobs=2, threads_per_job=1``).

The corpus is frozen and hashed into every run's key, so what remains is the CPU's numerics
(instruction set, summation order) and the torch version. To see another instruction set on
one machine, force torch's and MKL's kernels, e.g. AVX2 on an AVX-512 machine::

    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 python -m paper_figs.cross_machine

About 3 minutes per tiny run, 15 per small run, on one core.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

from .records.cache import write_atomically
from .identity_migration import original_keys
from .records.kept import KeptStore
from .records.machine_regimes import REGIMES, machine_kind, regime_of
from .records.provenance import provenance
from .records.spread import FORMAT, SPREAD_FILE, summary

SALT = "cross-machine sample v1"
#: records drawn per regime (fewer where a regime has fewer records from other machines)
PER_REGIME = {"small model": 2, "MoE": 3, "long horizon": 2}
DEFAULT_PER_REGIME = 5


def this_machine() -> str:
    """This machine's kind, in :func:`machine_regimes.machine_kind`'s spelling."""
    import torch
    prov = {**provenance(""), "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    return machine_kind(prov)


def _order(key: str) -> str:
    return hashlib.sha256((key + SALT).encode()).hexdigest()


def sample_plan(records: list[dict], here: str) -> list[dict]:
    """The records to retrain, in training order: per regime, up to its quota of records made
    on a machine kind other than ``here``, drawn by sha256(key + SALT) alternating between
    the kinds that made them; then interleaved over regimes, cheapest first, so every regime has results
    early. (A record from before instruction sets were recorded is of kind "its CPU model",
    which differs from ``here``'s "model [capability]"; the AMD records of this repository
    were made on AVX-512 machines, this sample's first machine has AVX2.)"""
    per_regime: dict[str, list[dict]] = {}
    for rec in sorted(records, key=lambda r: min(map(_order, original_keys(r["key"])))):   # as before re-keying
        if machine_kind(rec["provenance"]) != here:
            per_regime.setdefault(regime_of(rec["settings"]), []).append(rec)
    chosen: dict[str, list[dict]] = {}
    for regime in REGIMES:
        by_kind: dict[str, list[dict]] = {}
        for rec in per_regime.get(regime, []):
            by_kind.setdefault(machine_kind(rec["provenance"]), []).append(rec)
        quota = PER_REGIME.get(regime, DEFAULT_PER_REGIME)
        picked, queues = [], [by_kind[k] for k in sorted(by_kind)]
        while len(picked) < quota and any(queues):
            for q in queues:
                if q and len(picked) < quota:
                    picked.append(q.pop(0))
        chosen[regime] = picked
    order = []
    for i in range(max((len(v) for v in chosen.values()), default=0)):
        order += [chosen[r][i] for r in reversed(REGIMES) if i < len(chosen.get(r, []))]
    return order


def _curve(log: list[dict]) -> dict[int, float]:
    return {row["step"]: row["val_loss"] for row in log if row.get("val_loss") is not None}


def measure(rec: dict) -> dict:
    """Retrain ``rec``'s configuration here (one thread) and compare with the kept result."""
    import torch

    from gpu_runs.recipe import TrainConfig

    from gpu_runs.train import train
    torch.set_num_threads(1)
    t0 = time.time()
    res = train(TrainConfig(**rec["settings"]), progress=False)
    kept_curve, here_curve = _curve(rec["result"]["log"]), _curve(res.log)
    kept = rec["result"]["final_val_loss"]
    return {"key": rec["key"], "regime": regime_of(rec["settings"]), "settings": rec["settings"],
            "kept_on": machine_kind(rec["provenance"]), "kept": kept, "here": res.final_val_loss,
            "diff": res.final_val_loss - kept,
            "curve_diff": {str(s): here_curve[s] - v for s, v in kept_curve.items() if s in here_curve},
            "seconds": round(time.time() - t0)}


def load(path: Path = SPREAD_FILE) -> dict:
    """The spread file, or an empty one for this machine."""
    if path.exists():
        return json.loads(path.read_text())
    return {"format": FORMAT, "measured_on": this_machine(), "provenance": provenance(
        "python -m paper_figs.cross_machine"), "salt": SALT, "rows": []}


def print_summary(data: dict) -> None:
    print(f"measured on {data['measured_on']} against kept records made on other machines "
          f"(|here - kept| of the final validation loss, nats/byte)")
    print(f"{'regime':<14} {'n':>3} {'mean':>8} {'max':>8} {'rms':>8}  kept on")
    for s in summary(data):
        print(f"{s['regime']:<14} {s['n']:>3} {s['mean_abs']:>8.4f} {s['max_abs']:>8.4f} {s['rms']:>8.4f}  "
              f"{'; '.join(s['kept_on'])}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.cross_machine", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", action="store_true", help="list the sample (regime, key, machine) and exit")
    ap.add_argument("--summary", action="store_true", help="print the measured table and exit")
    ap.add_argument("--limit", type=int, default=None, help="train at most N more runs of the sample")
    ap.add_argument("--out", type=Path, default=SPREAD_FILE, help=f"the spread file (default {SPREAD_FILE})")
    a = ap.parse_args(argv)
    if a.limit is not None and a.limit < 0:
        ap.error(f"--limit: must be >= 0, got {a.limit}")
    data = load(a.out)
    if a.summary:
        print_summary(data)
        return 0
    store = KeptStore()
    plan = sample_plan([store.get(k) for k in store.keys()], this_machine())
    done = {r["key"] for r in data["rows"]}
    todo = [r for r in plan if r["key"] not in done]
    if a.plan:
        for r in plan:
            print(f"{'done' if r['key'] in done else 'todo'}  {regime_of(r['settings']):<14} {r['key']}  "
                  f"{machine_kind(r['provenance'])}")
        return 0
    todo = todo[:a.limit] if a.limit is not None else todo
    print(f"cross_machine: {len(done)} of {len(plan)} sampled runs measured; training {len(todo)} "
          f"on {this_machine()}", file=sys.stderr, flush=True)
    for i, rec in enumerate(todo, 1):
        row = measure(rec)
        data["rows"].append(row)
        write_atomically(a.out, json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"[{i}/{len(todo)}] {row['regime']:<14} {row['key']} diff {row['diff']:+.4f} "
              f"({row['seconds']} s)", file=sys.stderr, flush=True)
    print_summary(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())

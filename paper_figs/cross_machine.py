"""How far a kept run moves on another CPU: ``python -m paper_figs.cross_machine [OPTIMIZER ...]``.

Retrains the kept Figure 3 seed-0 synchronous runs (tiny model, 1500 steps) of the named
optimizers (default AdamW and Muon) on this machine and prints, per run, its final
validation loss, the kept one and the difference. The corpus is frozen and hashed into
every run's key, so what remains is the CPU's numerics (instruction set, summation order)
and the torch version. To see another instruction set on one machine, force torch's and
MKL's kernels, e.g. AVX2 on an AVX-512 machine::

    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 python -m paper_figs.cross_machine

Measured on an Intel Xeon (AVX-512) against records kept on an AMD EPYC (AVX-512), torch
2.13.0: AdamW sync differs by 0, Muon sync (fp32 Newton-Schulz) by 0.0041; with AVX2 forced,
by 3e-8 and 0.0053. ``paper_figs.report.LIVE_KEPT_TOL`` (0.01) is about twice the largest
difference seen (0.0046, Muon 2bw). About 2-5 minutes per run on 2 cores.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from .kept import KeptStore
from .profiles import get_profile


def fig3_sync_records(store: KeptStore, optimizers) -> list[dict]:
    """The kept records of Figure 3's seed-0 synchronous runs of ``optimizers`` (full profile)."""
    from .figures import fig3
    from .runs import full_config
    from .cache import config_hash
    from gpu_runs.recipe import TrainConfig

    recs = []
    for o in optimizers:
        s = fig3.grid(get_profile("full"))[(o, "sync")][0]
        rec = store.get(config_hash(full_config(TrainConfig, s)))
        if rec is None:
            raise SystemExit(f"cross_machine: no kept record of {o}'s Figure 3 seed-0 sync run")
        recs.append(rec)
    return recs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m paper_figs.cross_machine", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("optimizers", nargs="*", default=["adamw", "muon"], help="Figure 3's optimizers to retrain")
    a = ap.parse_args(argv)
    import torch

    from gpu_runs.train import TrainConfig, train
    for rec in fig3_sync_records(KeptStore(), a.optimizers):
        t0 = time.time()
        res = train(TrainConfig(**rec["settings"]), progress=False)
        kept = rec["result"]["final_val_loss"]
        print(json.dumps({"cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
                          "optimizer": rec["settings"]["optimizer"], "final": res.final_val_loss, "kept": kept,
                          "diff": res.final_val_loss - kept, "kept_on": rec["provenance"]["machine"],
                          "seconds": round(time.time() - t0)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

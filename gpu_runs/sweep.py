"""A grid of diagnosed trainer runs for ``gpu_runs.predict``: ``python -m gpu_runs.sweep OUT ...``.

The grid is optimizers x lr multipliers x momenta x variants; every run is one
``gpu_runs.recipe.TrainConfig`` with ``diag_every`` on, written to ``OUT/<name>`` where

    name = f"{optimizer}_lr{m:g}x_b{beta:g}_{variant}"     variant in {sync, 2bw, ef}

and lr = m * ``lmo.presets.DEFAULT_LR[optimizer]``, beta the primary momentum (``--momenta``
omitted: the optimizer's preset). Two sub-grids keep the count down, as the orderings need:
the lr sweep at the preset beta, and the momentum sweep at the preset lr (the point they share
runs once). A run with ``result.json`` is skipped; a run with a checkpoint is resumed (``--ckpt-every``),
so a killed sweep continues where it stopped. Afterwards ``python -m gpu_runs.predict OUT/*``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lmo.presets import DEFAULT_LR, DEFAULT_MOMENTUM
from lmo.variants import ONE_STEP, Delay

from gpu_runs.checkpoint import has_checkpoint
from gpu_runs import verified_files
from gpu_runs.cli import add_config_options, show_defaults
from gpu_runs.progress import UnitProgress
from gpu_runs.recipe import TrainConfig
from gpu_runs.train import USER_ERRORS, error_line, train

VARIANTS = ONE_STEP   # sync, 2bw, ef (lmo.variants)
#: TrainConfig fields that are sweep options (gpu_runs.cli.add_config_options)
SHARED = ("config", "steps", "batch_size", "seq_len", "eval_every", "eval_batches", "diag_every",
          "ckpt_every", "seed", "data", "device")
#: the sweep's own scale: its only defaults that differ from TrainConfig's, on purpose
SWEEP_SCALE = dict(steps=500, batch_size=16, eval_every=100, diag_every=50, ckpt_every=100)


def run_name(optimizer: str, lr_mult: float, beta: float, variant: str) -> str:
    return f"{optimizer}_lr{lr_mult:g}x_b{beta:g}_{variant}"


def grid(optimizers, lr_mults, momenta, variants) -> list[dict]:
    """One dict (optimizer, lr_mult, beta, variant) per run: the lr sweep at the preset beta plus
    the momentum sweep at lr multiplier 1, without duplicates, in a fixed order."""
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"sweep: variant must be one of {VARIANTS}, got {v!r}")
    if any(m <= 0 for m in lr_mults):
        raise ValueError(f"sweep: lr multipliers must be > 0, got {list(lr_mults)}")
    if any(not 0 <= b < 1 for b in momenta):
        raise ValueError(f"sweep: momenta must lie in [0, 1), got {list(momenta)}")
    out, seen = [], set()
    for opt in optimizers:
        if opt not in DEFAULT_MOMENTUM:
            raise ValueError(f"sweep: no preset momentum for optimizer {opt!r} (lmo.presets.DEFAULT_MOMENTUM)")
        beta0 = float(DEFAULT_MOMENTUM[opt])
        points = [(m, beta0) for m in lr_mults] + [(1.0, b) for b in momenta]
        for m, b in points:
            for v in variants:
                key = (opt, float(m), float(b), v)
                if key not in seen:
                    seen.add(key)
                    out.append(dict(optimizer=opt, lr_mult=float(m), beta=float(b), variant=v))
    return out


def train_config(point: dict, out: Path, base: dict):
    """The TrainConfig of one grid point (``base``: the shared TrainConfig fields)."""
    v = point["variant"]
    return TrainConfig(optimizer=point["optimizer"], lr=point["lr_mult"] * float(DEFAULT_LR[point["optimizer"]]),
                       momentum=point["beta"], delay=Delay(v),
                       out=str(out), **base)


def run_grid(points: list[dict], out_root: Path, base: dict, progress: bool = True) -> list[Path]:
    """Train every point not yet finished; returns the run directories in grid order.

    A directory with ``result.json`` is skipped, one with ``ckpt.pt`` resumed; one with a log
    but no checkpoint (killed before its first one) keeps that log as ``log.jsonl.killed``
    and starts again."""
    dirs = []
    meter = UnitProgress("sweep", len(points))
    for i, pt in enumerate(points):
        d = out_root / run_name(pt["optimizer"], pt["lr_mult"], pt["beta"], pt["variant"])
        dirs.append(d)
        if (d / "result.json").exists():
            if progress:
                print(meter.line(i, f"{d.name}: done before, skipped", counted=False), flush=True)
            continue
        cfg = train_config(pt, d, base)
        cfg.resume = has_checkpoint(d)
        if not cfg.resume and (d / "log.jsonl").exists():
            (d / "log.jsonl").replace(d / "log.jsonl.killed")
        if progress:
            how = "resuming" if cfg.resume else "starting"
            print(f"[sweep {i + 1}/{len(points)}] {d.name}: {how} ({cfg.steps} steps)", flush=True)
        res = train(cfg, progress=False)
        if progress:
            print(meter.line(i, f"{d.name}: final val {res.final_val_loss:.4f}"), flush=True)
    return dirs


def floats(s: str) -> list[float]:
    try:
        return [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {s!r}") from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.sweep", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter,
                                epilog="Then: python -m gpu_runs.predict OUT/* --png OUT/predict.png")
    p.add_argument("out", help="root directory; one run directory per grid point")
    p.add_argument("--optimizers", default="adamw,muon", help="comma-separated lmo.registry names")
    p.add_argument("--lr-mults", type=floats, default=[0.5, 1.0, 2.0], help="multiples of the preset lr")
    p.add_argument("--momenta", type=floats, default=[], help="primary momenta beta for the momentum sweep")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated subset of {','.join(VARIANTS)}")
    fields = add_config_options(p, SHARED, defaults=SWEEP_SCALE)
    p.add_argument("--dry-run", action="store_true", help="print the grid and exit")
    show_defaults(p)
    a = p.parse_args(argv)
    try:
        points = grid(a.optimizers.split(","), a.lr_mults, a.momenta, a.variants.split(","))
    except ValueError as e:
        p.error(str(e))
    out = Path(a.out)
    if a.dry_run:
        for pt in points:
            print(run_name(pt["optimizer"], pt["lr_mult"], pt["beta"], pt["variant"]))
        return 0
    base = dict({k: getattr(a, k) for k in fields}, log_every=0)
    try:
        for pt in points:
            train_config(pt, out / "x", base).validate()
    except ValueError as e:
        p.error(str(e))
    try:   # an unusable OUT (read-only, a file in the way) is refused before the first run
        out.mkdir(parents=True, exist_ok=True)
        verified_files.write_text(out / "sweep.json", json.dumps(dict(base=base, points=points), indent=1))
        run_grid(points, out, base)
    except USER_ERRORS as e:
        print(f"python -m gpu_runs.sweep: error: {error_line(e)}", file=sys.stderr, flush=True)
        return 2
    print(f"{len(points)} runs under {out}; next: python -m gpu_runs.predict {out}/*_* --png {out}/predict.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

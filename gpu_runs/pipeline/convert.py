"""Convert a pipeline run's stage checkpoints to and from the trainer's single ``ckpt.pt``:
``python -m gpu_runs.pipeline.convert to-trainer RUN_DIR [--out FILE] [--step K]`` and
``from-trainer TRAIN_DIR --stages P [-M M] [--schedule S] --out DIR``.

The command of :func:`gpu_runs.pipeline.conversion.to_trainer` / ``from_trainer`` (the formats are
described there). It is a module of its own because the package imports ``checkpoint``, so
``-m`` on that module would run a second copy of it.
"""
from __future__ import annotations

import argparse
import sys

from gpu_runs.cli import show_defaults
from gpu_runs.pipeline.conversion import from_trainer, to_trainer


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpu_runs.pipeline.convert", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    fmt = argparse.ArgumentDefaultsHelpFormatter
    a = sub.add_parser("to-trainer", formatter_class=fmt,
                       help="merge RUN_DIR/ckpt_stage{s}.pt into the trainer's ckpt.pt")
    a.add_argument("run_dir")
    a.add_argument("--out", default=None, help="output file (default RUN_DIR/ckpt.pt)")
    a.add_argument("--step", type=int, default=None, help="use ckpt_step{STEP}_stage{s}.pt (default: the final ones)")
    b = sub.add_parser("from-trainer", formatter_class=fmt, help="split TRAIN_DIR/ckpt.pt into ckpt_stage{s}.pt files")
    b.add_argument("train_dir")
    b.add_argument("--stages", "-P", type=int, required=True)
    b.add_argument("--microbatches", "-M", type=int, default=None)
    b.add_argument("--schedule", choices=("gpipe", "1f1b", "2bw"), default=None,
                   help="default: 2bw for a 2bw run, 1f1b for sync")
    b.add_argument("--out", required=True, help="directory for the stage checkpoints")
    show_defaults(p)
    ns = p.parse_args(argv)
    try:
        if ns.cmd == "to-trainer":
            print(to_trainer(ns.run_dir, ns.out, ns.step))
        else:
            print(from_trainer(ns.train_dir, ns.stages, ns.out, ns.microbatches, ns.schedule))
    except (ValueError, OSError) as e:
        print(f"python -m gpu_runs.pipeline.convert: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

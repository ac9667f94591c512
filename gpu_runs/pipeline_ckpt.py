"""``python -m gpu_runs.pipeline_ckpt``: the command of :mod:`gpu_runs.pipeline.checkpoint` (a
top-level module, so ``-m`` does not import it twice through the package; also the old import path)."""
import sys

from gpu_runs.pipeline.checkpoint import from_trainer, main, merge_stages, to_trainer  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())

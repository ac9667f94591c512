"""``python -m gpu_runs.pipeline_bench``: the command of :mod:`gpu_runs.pipeline.bench` (a top-level
module, so ``-m`` does not import it twice through the package; also the old import path)."""
import sys

from gpu_runs.pipeline.bench import format_table, main, run_bench  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())

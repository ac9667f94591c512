"""``python -m gpu_runs.pipeline.torchrun --nproc-per-node P -m gpu_runs.pipeline ...``: one stage per process (gpu_runs.pipeline)."""
import sys

from gpu_runs.pipeline.worker import main

sys.exit(main())

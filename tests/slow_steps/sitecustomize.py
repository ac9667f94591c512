"""Test helper: every training step sleeps SLOW_STEP_S seconds (patched into gpu_runs.data.Batcher.batch)."""
import importlib.abc
import importlib.util
import os
import sys
import time

DELAY = float(os.environ.get("SLOW_STEP_S", "0"))


class _SlowSteps(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "gpu_runs.data":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            batch = module.Batcher.batch

            def slow(self, t, *a, **kw):
                time.sleep(DELAY)
                return batch(self, t, *a, **kw)
            module.Batcher.batch = slow
        spec.loader.exec_module = exec_module
        return spec


if DELAY:
    sys.meta_path.insert(0, _SlowSteps())

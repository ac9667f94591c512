"""Language-model training with a real gradient delay, and the theory's quantities measured in training.

- ``gpu_runs.model``: Llama-style decoder, configs tiny / small / 135m / 360m, ``param_count``.
- ``gpu_runs.data``: stdlib byte corpus (no network), text dirs, token shards; ``Batcher``.
- ``gpu_runs.train``: ``TrainConfig``, ``train(cfg) -> TrainResult``; ``python -m gpu_runs.train``
  with modes sync / 2bw (+EF) / pipedream and the paper's mitigations; checkpoints and resume.
- ``gpu_runs.diagnostics``: ||d_t||, r_t, local L, sigma, rho, momentum error (``--diag-every``).
- ``gpu_runs.predict``: measured constants into ``theory`` bounds; ``gpu_runs.bench``: tokens/s per mode.
- ``gpu_runs/device_check.sh``: the single-GPU check (135m); ``gpu_runs.pipeline*``: multi-process pipeline.
"""

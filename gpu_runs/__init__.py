"""Language-model training with a real gradient delay, and the theory's quantities measured in training.

A short tour::

    from lmo import Delay
    from gpu_runs import TrainConfig
    from gpu_runs.train import train
    res = train(TrainConfig(config="tiny", optimizer="muon", delay=Delay("ef"), steps=200))
    res.final_val_loss, res.log[-1]

- ``gpu_runs.recipe``: what a run is (``TrainConfig``, the one run spec of the trainer and the
  pipeline), the peak lr and the warmup-cosine schedule on every parameter group, the
  optimizer of its delay (``TrainConfig.delay``, an ``lmo.variants.Delay``), the loss, evaluation; ``gpu_runs.parallelism``: the run spec's
  parallelism section (``TrainConfig.parallel``: pipeline schedule, microbatches, dp).
- ``gpu_runs.train``: the loop (``train(cfg) -> TrainResult``) and ``python -m gpu_runs.train``
  with the delays sync / 2bw / ef / pipedream and the paper's mitigations. The package does not
  import it: ``gpu_runs.train`` is always that module (never the function), and ``-m`` runs
  it once.
- ``gpu_runs.checkpoint``: run directories that never lose work (atomic checkpoints, resume
  that refuses a different run); ``gpu_runs.progress``: progress lines with ETA.
- ``gpu_runs.model``: Llama-style decoder, configs tiny / small / 135m / 360m and the
  mixture-of-experts tiny_moe / moe_2b (``gpu_runs.moe``), ``param_count`` (total / active).
- ``gpu_runs.data``: stdlib byte corpus (no network), text dirs, token shards (checked); ``Batcher``.
- ``gpu_runs.diagnostics``: ||d_t||, r_t, local L, sigma, rho, momentum error (``--diag-every``).
- ``gpu_runs.sweep`` / ``gpu_runs.predict``: grids of diagnosed runs, measured constants into
  ``theory`` bounds; ``gpu_runs.bench``: tokens/s per delay.
- ``gpu_runs.pipeline``: multi-process pipeline parallelism (``python -m gpu_runs.pipeline.torchrun ... -m gpu_runs.pipeline``; a
  subpackage, see its docstring);
  ``gpu_runs/device_check.sh``: the single-GPU check (135m, then a short moe_2b-shaped MoE step).
"""
from gpu_runs.data import Batcher, Corpus, get_corpus
from gpu_runs.model import CONFIGS, Llama, get_config, param_count
from gpu_runs.moe import routing_stats
from gpu_runs.recipe import MODES, TrainConfig, build_optimizer, evaluate, loss_and_grads, peak_lr

__all__ = [
    "TrainConfig", "MODES", "build_optimizer", "peak_lr", "loss_and_grads",
    "evaluate", "Llama", "CONFIGS", "get_config", "param_count", "Corpus", "get_corpus", "Batcher",
    "routing_stats",
]

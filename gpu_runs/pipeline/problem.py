"""What a pipeline stage needs from the model side (``Problem``)."""
from __future__ import annotations


class Problem:
    """What a stage needs from the model side: the full model (built identically on every
    rank), ``batch(step) -> (x, y)``, ``build_opt(stage_params)``, the clipping threshold and
    the hidden size. The logged lr is the stage optimizer's own (``lmo.registry.lr_at``)."""

    def __init__(self, model, batch, build_opt, max_norm, dim, layer_fn=None, val_batch=None):
        self.model, self.batch, self.build_opt = model, batch, build_opt
        self.val_batch = val_batch
        self.max_norm, self.dim, self.layer_fn = max_norm, dim, layer_fn

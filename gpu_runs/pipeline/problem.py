"""What a pipeline stage needs from the model side (``Problem``)."""
from __future__ import annotations


class Problem:
    """What a stage needs from the model side: the full model (built identically on every
    rank), ``batch(step) -> (x, y)``, ``build_opt(stage_params)``, ``lr_at(step)``,
    the clipping threshold and the hidden size."""

    def __init__(self, model, batch, build_opt, lr_at, max_norm, dim, layer_fn=None, val_batch=None):
        self.model, self.batch, self.build_opt, self.lr_at = model, batch, build_opt, lr_at
        self.val_batch = val_batch
        self.max_norm, self.dim, self.layer_fn = max_norm, dim, layer_fn

"""The slice of a decoder one pipeline stage holds: ``split_layers`` chooses the layers,
``StageModule`` wraps them (with the embedding on the first stage and the norm and head on
the last) under the full model's parameter names."""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn


def split_layers(num_layers: int, num_stages: int) -> list[range]:
    """Contiguous layer ranges, as equal as possible, earlier stages taking the extra layers:
    stage s gets floor(n/P) + [s < n mod P] layers."""
    if num_stages > num_layers:
        raise ValueError(f"num_stages (P={num_stages}) exceeds num_layers ({num_layers})")
    base, extra = divmod(num_layers, num_stages)
    out, start = [], 0
    for s in range(num_stages):
        n = base + (s < extra)
        out.append(range(start, start + n))
        start += n
    return out


class StageModule(nn.Module):
    """Stage s of a decoder with ``embed``, ``layers``, ``norm``, ``lm_head``.

    Parameter names equal the full model's (``layers.3.…``), so optimizer labels and
    per-block delays carry over. Forward: first stage takes token ids, others the hidden
    state; the last returns the mean token cross-entropy (it needs ``targets``).
    ``layer_fn(layer, h)`` applies one layer (default ``layer(h)``).
    """

    def __init__(self, model: nn.Module, layer_ids: range, first: bool, last: bool,
                 layer_fn: Callable | None = None):
        super().__init__()
        self.first, self.last = first, last
        self.layer_fn = layer_fn
        if first:
            self.embed = model.embed
        self.layers = nn.ModuleDict({str(i): model.layers[i] for i in layer_ids})
        if last:
            self.norm = model.norm
            self.lm_head = model.lm_head

    def forward(self, h: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        if self.first:
            h = self.embed(h)
        for layer in self.layers.values():
            h = layer(h) if self.layer_fn is None else self.layer_fn(layer, h)
        if not self.last:
            return h
        logits = self.lm_head(self.norm(h))
        return nn.functional.cross_entropy(logits.flatten(0, -2).float(), targets.flatten())

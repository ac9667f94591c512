"""``TorchOptimizer``: a functional lmo optimizer as a torch.optim.Optimizer, for ordinary loops.

    opt = TorchOptimizer(lmo.muon(0.02), model.named_parameters())
    loss.backward(); opt.step(); opt.zero_grad()

``step`` reads each parameter's ``.grad`` (a missing grad counts as zero), computes
``updates, state = opt.update(grads, state, params)`` and adds the updates in place.
``state_dict`` / ``load_state_dict`` round-trip the functional state (lmo.base.state_dict).
"""
from __future__ import annotations

import torch

from lmo.base import Optimizer, load_state_dict, state_dict


class TorchOptimizer(torch.optim.Optimizer):
    """Adapter from the pure protocol to torch.optim.Optimizer (see the module docstring)."""

    def __init__(self, opt: Optimizer, named_params):
        named = list(named_params)
        if not named:
            raise ValueError("named_params: no parameters given")
        self.names = [n for n, _ in named]
        if len(set(self.names)) != len(self.names):
            raise ValueError("named_params: duplicate parameter names")
        super().__init__([p for _, p in named], {})
        self.opt = opt
        self._params = dict(named)
        self.fstate = opt.init(self._current())

    def _current(self):
        return {n: p.detach() for n, p in self._params.items()}

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        grads = {n: (p.grad.detach() if p.grad is not None else torch.zeros_like(p))
                 for n, p in self._params.items()}
        updates, self.fstate = self.opt.update(grads, self.fstate, self._current())
        for n, p in self._params.items():
            p.add_(updates[n].to(p.dtype))
        return loss

    def virtual_iterate(self) -> dict:
        """y_t of the wrapped optimizer (x_t for sync ones)."""
        return self.opt.virtual_iterate(self._current(), self.fstate)

    def state_dict(self):
        return {"names": list(self.names), "fstate": state_dict(self.fstate)}

    def load_state_dict(self, sd):
        if list(sd.get("names", [])) != self.names:
            raise ValueError("state_dict: parameter names differ from this optimizer's")
        self.fstate = load_state_dict(self.opt.init(self._current()), sd["fstate"])

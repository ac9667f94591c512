"""``TorchOptimizer``: a functional lmo optimizer as a torch.optim.Optimizer, for ordinary loops.

    from lmo.muon import muon
    opt = TorchOptimizer(muon(0.02), model.named_parameters(), lr=0.02)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)
    loss.backward(); opt.step(); sched.step(); opt.zero_grad()

``step`` reads each parameter's ``.grad``, computes ``updates, state = opt.update(grads,
state, params)`` and adds the updates in place, as torch.optim does:

- a parameter whose ``.grad`` is None (frozen, ``requires_grad=False``, or unused this
  step) is left unchanged: no update, no weight decay. Its gradient enters the functional
  state as zero (``skip_no_grad=False`` restores the old behaviour: it is updated with a
  zero gradient, so weight decay still shrinks it);
- ``param_groups[0]["lr"]`` is live: torch's lr schedulers (StepLR, LambdaLR, ...) set it,
  and the step scales the update by ``param_groups[0]["lr"] / lr``, where ``lr`` is the
  peak the wrapped optimizer was built with. Exact because every lmo update is linear in
  its lr, weight decay included (d_t = -eta_t (direction + lambda x_t), docs/design.md §4;
  tests/gpu_runs/test_schedule_protocol.py checks it for every registry optimizer).

``state_dict`` / ``load_state_dict`` round-trip the functional state (lmo.base.state_dict)
and the group lr.
"""
from __future__ import annotations

import math

import torch

from lmo.base import Optimizer, load_state_dict, state_dict


class TorchOptimizer(torch.optim.Optimizer):
    """Adapter from the pure protocol to torch.optim.Optimizer (see the module docstring).

    ``lr``: the lr the wrapped optimizer was built with (its peak when it has a schedule);
    default 1.0, i.e. ``param_groups[0]["lr"]`` is a multiplier of the wrapped optimizer's lr."""

    def __init__(self, opt: Optimizer, named_params, lr: float = 1.0, *, skip_no_grad: bool = True):
        named = list(named_params)
        if not named:
            raise ValueError("named_params: no parameters given")
        self.names = [n for n, _ in named]
        if len(set(self.names)) != len(self.names):
            raise ValueError("named_params: duplicate parameter names")
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"lr must be a finite number > 0 (the wrapped optimizer's lr), got {lr!r}")
        super().__init__([p for _, p in named], {"lr": float(lr)})
        self.opt, self.base_lr, self.skip_no_grad = opt, float(lr), bool(skip_no_grad)
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
        scale = self.param_groups[0]["lr"] / self.base_lr
        for n, p in self._params.items():
            if self.skip_no_grad and p.grad is None:
                continue
            u = updates[n].to(p.dtype)
            p.add_(u if scale == 1.0 else u * scale)
        return loss

    def virtual_iterate(self) -> dict:
        """y_t of the wrapped optimizer (x_t for sync ones)."""
        return self.opt.virtual_iterate(self._current(), self.fstate)

    def state_dict(self):
        return {"names": list(self.names), "fstate": state_dict(self.fstate),
                "lr": self.param_groups[0]["lr"]}

    def load_state_dict(self, sd):
        if list(sd.get("names", [])) != self.names:
            raise ValueError("state_dict: parameter names differ from this optimizer's")
        self.fstate = load_state_dict(self.opt.init(self._current()), sd["fstate"])
        if "lr" in sd:
            self.param_groups[0]["lr"] = float(sd["lr"])

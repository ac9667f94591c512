"""``TorchOptimizer``: a functional lmo optimizer as a torch.optim.Optimizer, for ordinary loops.

    from lmo.muon_family import muon
    opt = TorchOptimizer(muon(0.02), model.named_parameters(), lr=0.02)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)
    loss.backward(); opt.step(); sched.step(); opt.zero_grad()

``step`` reads each parameter's ``.grad``, computes ``updates, state = opt.update(grads,
state, params)`` and adds the updates in place, as torch.optim does:

- a parameter whose ``.grad`` is None (frozen, ``requires_grad=False``, or unused this
  step) is left unchanged: no update, no weight decay. Its gradient enters the functional
  state as zero (``skip_no_grad=False`` restores the old behaviour: it is updated with a
  zero gradient, so weight decay still shrinks it);
- a step is all or nothing: every group's lr and gradients are checked, and every group's
  update computed, before any parameter changes (a NaN gradient in the second group, a
  sparse gradient, or an lr a scheduler drove to NaN or below 0 is refused naming its
  group and leaves every parameter and state as it was);
- every group's ``"lr"`` is live: torch's lr schedulers (StepLR, LambdaLR, ...) set it,
  and the step scales the group's update by ``group["lr"] / base``, where ``base`` is the lr
  the group's optimizer was built with. Exact because every lmo update is linear in
  its lr, weight decay included (d_t = -eta_t (direction + lambda x_t), docs/design.md §4;
  tests/gpu_runs/test_schedule_protocol.py checks it for every registry optimizer).

Param groups, as torch's: ``params`` may be a list of dicts, each with ``"params"`` (named
pairs, as ``model.named_parameters()`` gives, or bare tensors, then named
``group{i}.{j}``; unique within the group) and optionally

- ``"lr"``: the group's lr (default: ``base``), scheduled per group;
- ``"optimizer"``: the group's own lmo optimizer (default: the constructor's ``opt``);
  its ``base`` is the lr it was built with when that is a number (its ``hyper["lr"]``),
  else 1.0 (``"lr"`` is then a multiplier); the constructor's ``opt`` has ``base = lr``;
- ``"weight_decay"``: accepted when it equals the decay the group's optimizer was built
  with (lmo optimizers fix it at construction; give the group an ``"optimizer"`` built with
  the decay you want). Any other key (``betas``, ``momentum``, ``eps``...) is refused, naming it.

Each group has its own functional state (``opt.init`` of its parameters), so an optimizer
that mixes parameters (``clip_by_global_norm``) mixes within a group only.
``add_param_group`` takes the same dicts. ``state_dict`` / ``load_state_dict`` round-trip
every group's functional state (lmo.base.state_dict) and lr.
"""
from __future__ import annotations

import math

import torch

from lmo.base import Optimizer, check_finite, check_step_lr, load_state_dict, state_dict

#: param-group keys the adapter understands ("param_names": torch's, from named pairs;
#: "initial_lr": set by torch's lr schedulers)
GROUP_KEYS = ("params", "lr", "optimizer", "weight_decay", "param_names", "initial_lr")


def _check_lr(lr, what: str) -> float:
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {lr!r}")
    return float(lr)


def _built_lr(opt: Optimizer) -> float:
    """The lr an lmo optimizer was built with, when it is a number; else 1.0 (a multiplier)."""
    lr = getattr(opt, "hyper", {}).get("lr")
    return float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else 1.0


def _named(params, gi: int) -> list:
    """[(name, tensor)] from named pairs or bare tensors (named ``group{gi}.{j}``)."""
    params = [params] if isinstance(params, torch.Tensor) else list(params)
    if not params:
        raise ValueError(f"param group {gi}: no parameters given")
    if all(isinstance(p, tuple) and len(p) == 2 for p in params):
        return [(str(n), p) for n, p in params]
    if any(isinstance(p, tuple) for p in params):
        raise ValueError(f"param group {gi}: give every parameter with a name or none")
    return [(f"group{gi}.{j}", p) for j, p in enumerate(params)]


class TorchOptimizer(torch.optim.Optimizer):
    """Adapter from the pure protocol to torch.optim.Optimizer (see the module docstring).

    ``lr``: the lr ``opt`` was built with (its peak when it has a schedule); default 1.0,
    i.e. a group's ``"lr"`` is a multiplier of the wrapped optimizer's lr."""

    def __init__(self, opt: Optimizer, named_params, lr: float = 1.0, *, skip_no_grad: bool = True):
        if not (hasattr(opt, "init") and hasattr(opt, "update")):
            raise TypeError(f"opt must be an lmo optimizer (lmo.adamw(...), lmo.muon(...)), got {opt!r}")
        self.opt, self.base_lr = opt, _check_lr(lr, "lr (the wrapped optimizer's lr)")
        self.skip_no_grad, self._groups = bool(skip_no_grad), []
        groups = list(named_params)
        if not groups:
            raise ValueError("named_params: no parameters given")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        super().__init__(groups, {"lr": self.base_lr})

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """A torch param group (module docstring); refused with a message when it asks for
        what lmo optimizers fix at construction."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        gi = len(self._groups)
        unknown = sorted(set(param_group) - set(GROUP_KEYS))
        if unknown:
            raise ValueError(f"param group {gi}: {', '.join(map(repr, unknown))} not supported: lmo optimizers "
                             f"fix their hyperparameters at construction; give the group its own "
                             f"'optimizer' built with them (e.g. lmo.adamw(lr, betas=...))")
        group = dict(param_group)
        gopt = group.pop("optimizer", self.opt)
        if not (hasattr(gopt, "init") and hasattr(gopt, "update")):
            raise TypeError(f"param group {gi}: 'optimizer' must be an lmo optimizer, got {gopt!r}")
        base = self.base_lr if gopt is self.opt else _built_lr(gopt)
        group["lr"] = _check_lr(group.get("lr", base), f"param group {gi}: lr")
        wd = self._check_decay(group, gopt, gi)
        named = _named(group.pop("params"), gi)
        names = [n for n, _ in named]
        if len(set(names)) != len(names):
            raise ValueError(f"param group {gi}: duplicate parameter names in {names[:6]}")
        group["params"] = [p for _, p in named]
        super().add_param_group(group)
        params = dict(named)
        self._groups.append(dict(names=names, params=params, opt=gopt, base=base, weight_decay=wd,
                                 fstate=gopt.init({n: p.detach() for n, p in params.items()})))

    @staticmethod
    def _check_decay(group: dict, gopt: Optimizer, gi: int):
        if "weight_decay" not in group:
            return None
        built = getattr(gopt, "hyper", {}).get("weight_decay")
        if built is None or float(built) != float(group["weight_decay"]):
            raise ValueError(f"param group {gi}: weight_decay={group['weight_decay']!r} differs from its "
                             f"optimizer's ({built!r}); lmo optimizers fix the decay at construction: give "
                             f"the group 'optimizer': lmo.adamw(lr, weight_decay={group['weight_decay']!r}) (or "
                             f"the optimizer you use)")
        return group["weight_decay"]

    # ------------------------------------------------------------------ compat: one group
    @property
    def names(self) -> list:
        return [n for g in self._groups for n in g["names"]]

    @property
    def fstate(self):
        """The functional state (of the first group when there are several: ``fstates``)."""
        return self._groups[0]["fstate"]

    @fstate.setter
    def fstate(self, value):
        self._groups[0]["fstate"] = value

    @property
    def fstates(self) -> list:
        return [g["fstate"] for g in self._groups]

    def _current(self, g=None):
        groups = self._groups if g is None else [g]
        return {n: p.detach() for gr in groups for n, p in gr["params"].items()}

    # ------------------------------------------------------------------ step
    @torch.no_grad()
    def step(self, closure=None):
        """One step of every group, all or nothing: every group's lr (:func:`lmo.base.check_step_lr`:
        a scheduler may have driven it non-finite or negative), weight decay and gradients
        (dense, finite) are checked and every group's update is computed (pure: nothing
        changes) before any parameter or state is; a refusal in any group leaves them all
        as they were."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        scales, grads = [], []
        for gi, (group, g) in enumerate(zip(self.param_groups, self._groups)):
            if g["weight_decay"] is not None and group.get("weight_decay") != g["weight_decay"]:
                raise ValueError(f"param group {gi}: weight_decay changed to {group.get('weight_decay')!r}; "
                                 f"lmo optimizers fix it at construction (add a group with its own optimizer)")
            scales.append(check_step_lr(group["lr"], f"param group {gi}: lr") / g["base"])
            grads.append({n: (p.grad.detach() if p.grad is not None else torch.zeros_like(p))
                          for n, p in g["params"].items()})
        for gi, gr in enumerate(grads):
            check_finite(gr, f"param group {gi}: grads")
        steps = [g["opt"].update(gr, g["fstate"], self._current(g)) for g, gr in zip(self._groups, grads)]
        for g, scale, (updates, fstate) in zip(self._groups, scales, steps):
            self._apply(g, updates, scale)
            g["fstate"] = fstate
        return loss

    def _apply(self, g: dict, updates: dict, scale: float) -> None:
        for n, p in g["params"].items():
            if self.skip_no_grad and p.grad is None:
                continue
            u = updates[n].to(p.dtype)
            p.add_(u if scale == 1.0 else u * scale)

    def virtual_iterate(self) -> dict:
        """y_t of the wrapped optimizers (x_t for sync ones), keyed by name (names must
        then be unique across groups)."""
        if len(set(self.names)) != len(self.names):
            raise ValueError("virtual_iterate: parameter names repeat across param groups; name them apart")
        y = {}
        for g in self._groups:
            y.update(g["opt"].virtual_iterate(self._current(g), g["fstate"]))
        return y

    # ------------------------------------------------------------------ state
    def state_dict(self):
        groups = [{"names": list(g["names"]), "fstate": state_dict(g["fstate"]), "lr": group["lr"]}
                  for group, g in zip(self.param_groups, self._groups)]
        sd = dict(groups[0])
        if len(groups) > 1:
            sd = {"names": self.names, "groups": groups}
        return sd

    def load_state_dict(self, sd):
        groups = sd["groups"] if "groups" in sd else [sd]
        if len(groups) != len(self._groups):
            raise ValueError(f"state_dict: {len(groups)} param group(s), this optimizer has {len(self._groups)}")
        for gi, (saved, group, g) in enumerate(zip(groups, self.param_groups, self._groups)):
            if list(saved.get("names", [])) != g["names"]:
                raise ValueError(f"state_dict: parameter names of group {gi} differ from this optimizer's")
        for saved, group, g in zip(groups, self.param_groups, self._groups):
            g["fstate"] = load_state_dict(g["opt"].init(self._current(g)), saved["fstate"])
            if "lr" in saved:
                group["lr"] = float(saved["lr"])

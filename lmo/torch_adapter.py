"""``TorchOptimizer``: a functional lmo optimizer as a torch.optim.Optimizer, for ordinary loops.

    opt = TorchOptimizer(lmo.adamw, model.named_parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=1000)
    loss.backward(); opt.step(); sched.step(); opt.zero_grad()

``step`` reads each parameter's ``.grad``, computes ``updates, state = opt.update(grads,
state, params)`` and adds the updates in place, as torch.optim does:

- a parameter whose ``.grad`` is None (frozen, ``requires_grad=False``, or unused this
  step) is left unchanged: no update, no weight decay. Its gradient enters the functional
  state as zero (``skip_no_grad=False`` restores the old behaviour: it is updated with a
  zero gradient, so weight decay still shrinks it);
- a step is all or nothing: every group's hyperparameters and gradients are checked, and
  every group's update computed, before any parameter changes (a NaN gradient in the second
  group, a sparse gradient, an lr a scheduler drove to NaN or below 0, a key the group cannot
  honour is refused naming its group and leaves every parameter and state as it was).

Hyperparameters are state the step reads (optax's ``inject_hyperparams``): every step reads
each group's values, as torch.optim does, so torch's schedulers drive them.

- ``"lr"``: the step scales the group's update by ``group["lr"] / base``, ``base`` the lr the
  group's optimizer was built with. Exact because every lmo update is linear in its lr,
  weight decay included (d_t = -eta_t (direction + lambda x_t), docs/design.md §4;
  tests/gpu_runs/test_schedule_protocol.py checks it for every registry optimizer).
- the others torch names (:data:`HYPER_KEYS`: ``weight_decay``, ``betas``, ``momentum``,
  ``eps``), where the group's optimizer has them (its ``hyper``): they are in every group
  from the start (so ``OneCycleLR`` / ``CyclicLR`` find ``momentum`` or ``betas`` to cycle),
  and when a step finds one changed, the group's optimizer is built again with the new
  values by its builder, its state carried over (a momentum buffer does not depend on the
  momentum). The builder is ``opt`` itself when ``opt`` is a function
  (``TorchOptimizer(lmo.adamw, params, lr=..., **hyper)``: ``hyper`` are its keywords, the
  defaults of every group). An ``opt`` given already built has no builder: a change of its
  hyperparameters is refused at the step, by name.
- any other key a scheduler or the user sets in a group (one that is not a hyperparameter
  of the group's optimizer, or that changed on an optimizer without a builder) is refused
  at the step, by name; the keys torch's schedulers keep for themselves
  (:data:`SCHEDULER_KEYS`) are left alone.

Param groups, as torch's: ``params`` may be a list of dicts, each with ``"params"`` (named
pairs, as ``model.named_parameters()`` gives, or bare tensors, then named
``group{i}.{j}``; unique within the group) and optionally

- ``"lr"``: the group's lr (default: ``base``), scheduled per group;
- ``"optimizer"``: the group's own lmo optimizer (default: the constructor's ``opt``);
  its ``base`` is the lr it was built with when that is a number (its ``hyper["lr"]``),
  else 1.0 (``"lr"`` is then a multiplier); the constructor's ``opt`` has ``base = lr``;
- a hyperparameter (``weight_decay``, ``betas``, ...): with a builder, the group's optimizer
  is built with it; without one, it must equal what the optimizer was built with (else it
  is refused, naming it: give the group an ``"optimizer"`` built with it, or use a builder).

Each group has its own functional state (``opt.init`` of its parameters), so an optimizer
that mixes parameters (``clip_by_global_norm``) mixes within a group only.
``add_param_group`` takes the same dicts. ``state_dict`` / ``load_state_dict`` round-trip
every group's functional state (lmo.base.state_dict), lr and hyperparameters.
"""
from __future__ import annotations

import math

import torch

from lmo.base import Optimizer, check_finite, check_step_lr, load_state_dict, state_dict

#: torch.optim's names of the hyperparameters a step reads from a param group besides lr
HYPER_KEYS = ("weight_decay", "betas", "momentum", "eps")
#: the keys torch's lr schedulers keep in a param group for themselves (never read here)
SCHEDULER_KEYS = ("initial_lr", "max_lr", "min_lr", "base_momentum", "max_momentum")
#: param-group keys the adapter understands besides the hyperparameters ("param_names":
#: torch's, from named pairs)
GROUP_KEYS = ("params", "lr", "optimizer", "param_names") + SCHEDULER_KEYS


def _check_lr(lr, what: str) -> float:
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"{what} must be a finite number > 0, got {lr!r}")
    return float(lr)


def _built_lr(opt: Optimizer) -> float:
    """The lr an lmo optimizer was built with, when it is a number; else 1.0 (a multiplier)."""
    lr = getattr(opt, "hyper", {}).get("lr")
    return float(lr) if isinstance(lr, (int, float)) and not isinstance(lr, bool) else 1.0


def _is_optimizer(opt) -> bool:
    return hasattr(opt, "init") and hasattr(opt, "update")


def torch_hyper(opt: Optimizer) -> dict:
    """The hyperparameters of ``opt`` that torch names (:data:`HYPER_KEYS`), from its ``hyper``.

    >>> from lmo.adam_family import adamw
    >>> torch_hyper(adamw(1e-3, betas=(0.9, 0.95), weight_decay=0.1))
    {'weight_decay': 0.1, 'betas': (0.9, 0.95), 'eps': 1e-08}
    """
    hyper = getattr(opt, "hyper", {}) or {}
    return {k: _plain(hyper[k]) for k in HYPER_KEYS if k in hyper}


def _plain(v):
    """A value as a param group holds it: tuples of floats for betas, floats for numbers."""
    if isinstance(v, (tuple, list)):
        return tuple(float(x) for x in v)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def _build(builder, lr: float, hyper: dict, where: str) -> Optimizer:
    """``builder(lr, **hyper)``; a keyword it does not take or a value it refuses is one
    ValueError naming ``where`` and the keys."""
    try:
        opt = builder(lr, **hyper)
    except TypeError as e:
        raise ValueError(f"{where}: {', '.join(map(repr, sorted(hyper)))} not supported by "
                         f"{getattr(builder, '__name__', builder)!s}: {e}") from None
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    if not _is_optimizer(opt):
        raise TypeError(f"{where}: the builder returned {opt!r}, not an lmo optimizer")
    return opt


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

    ``opt``: an lmo optimizer, or a builder ``opt(lr, **hyper)`` (``lmo.adamw``, ``lmo.muon``,
    ...: then every hyperparameter a group holds is honoured when a scheduler changes it).
    ``lr``: the lr ``opt`` was built with (its peak when it has a schedule); default 1.0,
    i.e. a group's ``"lr"`` is a multiplier of the wrapped optimizer's lr. ``hyper``: the
    builder's keywords (the defaults of every group)."""

    def __init__(self, opt, named_params, lr: float = 1.0, *, skip_no_grad: bool = True, **hyper):
        self.base_lr = _check_lr(lr, "lr (the wrapped optimizer's lr)")
        if _is_optimizer(opt):
            if hyper:
                raise ValueError(f"{', '.join(map(repr, sorted(hyper)))}: keyword hyperparameters need a builder "
                                 f"(TorchOptimizer(lmo.adamw, params, lr=..., betas=...)); this optimizer is built")
            self.builder = None
        elif callable(opt):
            self.builder = opt
            opt = _build(opt, self.base_lr, hyper, "TorchOptimizer")
        else:
            raise TypeError(f"opt must be an lmo optimizer (lmo.adamw(...), lmo.muon(...)) or its builder "
                            f"(lmo.adamw), got {opt!r}")
        self.opt, self.hyper = opt, dict(hyper)
        self.skip_no_grad, self._groups = bool(skip_no_grad), []
        groups = list(named_params)
        if not groups:
            raise ValueError("named_params: no parameters given")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        super().__init__(groups, {"lr": self.base_lr, **torch_hyper(opt)})

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group: dict) -> None:
        """A torch param group (module docstring); refused with a message naming the key when
        it asks for what the group's optimizer cannot honour."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        gi = len(self._groups)
        group = dict(param_group)
        gopt = group.pop("optimizer", None)
        builder = self.builder if gopt is None else None
        if gopt is not None and not _is_optimizer(gopt):
            raise TypeError(f"param group {gi}: 'optimizer' must be an lmo optimizer, got {gopt!r}")
        asked = {k: _plain(v) for k, v in group.items() if k not in GROUP_KEYS}
        if builder is not None:
            base = _check_lr(group.get("lr", self.base_lr), f"param group {gi}: lr")
            given = {k: v for k, v in {**self.hyper, **asked}.items()}
            gopt = _build(builder, base, given, f"param group {gi}")
        else:
            gopt = gopt or self.opt
            base = self.base_lr if gopt is self.opt else _built_lr(gopt)
            self._check_fixed(asked, gopt, gi)
        group["lr"] = _check_lr(group.get("lr", base), f"param group {gi}: lr")
        built = torch_hyper(gopt)
        for k in HYPER_KEYS:              # the group holds what its optimizer has, nothing else
            group.pop(k, None)
        group.update(built)
        named = _named(group.pop("params"), gi)
        names = [n for n, _ in named]
        if len(set(names)) != len(names):
            raise ValueError(f"param group {gi}: duplicate parameter names in {names[:6]}")
        group["params"] = [p for _, p in named]
        super().add_param_group(group)
        for k in set(self.defaults) - set(built) - {"lr"}:   # torch filled in another optimizer's keys
            group.pop(k, None)
        params = dict(named)
        self._groups.append(dict(names=names, params=params, opt=gopt, base=base, built=built, builder=builder,
                                 extra={k: v for k, v in asked.items() if k not in built},
                                 fstate=gopt.init({n: p.detach() for n, p in params.items()})))

    @staticmethod
    def _check_fixed(asked: dict, gopt: Optimizer, gi: int) -> None:
        """A built optimizer (no builder) takes a group's hyperparameter only at its own value."""
        built = torch_hyper(gopt)
        for k, v in asked.items():
            if k not in built:
                raise ValueError(f"param group {gi}: {k!r} not supported: it is no hyperparameter of "
                                 f"{getattr(gopt, 'name', 'this optimizer')}; give the group its own 'optimizer' "
                                 f"built with it, or pass a builder (TorchOptimizer(lmo.adamw, ..., {k}=...))")
            if v != built[k]:
                raise ValueError(f"param group {gi}: {k}={v!r} not supported: {k!r} differs from its optimizer's "
                                 f"({built[k]!r}), which is built; give the group 'optimizer': lmo.adamw(lr, {k}={v!r}) "
                                 f"(or the optimizer you use), or pass a builder (TorchOptimizer(lmo.adamw, ...))")

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
    def _optimizer_now(self, gi: int, group: dict, g: dict) -> tuple[Optimizer, dict]:
        """(the group's optimizer for this step, its hyperparameters): the one it has while
        the group's values are the ones it was built with, else one built by the builder
        with the new values; a key the group cannot honour is refused by name."""
        now = {}
        for k, v in group.items():
            if k in GROUP_KEYS:
                continue
            v = _plain(v)
            if k not in g["built"] and v != g["extra"].get(k, v if k in g["extra"] else object()):
                raise ValueError(f"param group {gi}: {k!r} = {v!r} is no hyperparameter of "
                                 f"{getattr(g['opt'], 'name', 'its optimizer')}; it cannot be honoured")
            if k in g["built"]:
                now[k] = v
        if now == g["built"]:
            return g["opt"], now
        if g["builder"] is None:
            k = next(k for k in now if now[k] != g["built"].get(k))
            raise ValueError(f"param group {gi}: {k} changed to {now[k]!r} (built with {g['built'].get(k)!r}); "
                             f"this optimizer is built and cannot take it: pass its builder "
                             f"(TorchOptimizer(lmo.adamw, params, lr=..., {k}=...)) so that schedules of {k} apply")
        return _build(g["builder"], g["base"], {**g["extra"], **now}, f"param group {gi}"), now

    @torch.no_grad()
    def step(self, closure=None):
        """One step of every group, all or nothing: every group's lr (:func:`lmo.base.check_step_lr`:
        a scheduler may have driven it non-finite or negative), other hyperparameters
        (:meth:`_optimizer_now`) and gradients (dense, finite) are checked and every group's
        update is computed (pure: nothing changes) before any parameter or state is; a
        refusal in any group leaves them all as they were."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        scales, grads, opts = [], [], []
        for gi, (group, g) in enumerate(zip(self.param_groups, self._groups)):
            opts.append(self._optimizer_now(gi, group, g))
            scales.append(check_step_lr(group["lr"], f"param group {gi}: lr") / g["base"])
            grads.append({n: (p.grad.detach() if p.grad is not None else torch.zeros_like(p))
                          for n, p in g["params"].items()})
        for gi, gr in enumerate(grads):
            check_finite(gr, f"param group {gi}: grads")
        steps = [o.update(gr, g["fstate"], self._current(g)) for g, (o, _), gr in zip(self._groups, opts, grads)]
        for g, (o, now), scale, (updates, fstate) in zip(self._groups, opts, scales, steps):
            self._apply(g, updates, scale)
            g["fstate"], g["opt"], g["built"] = fstate, o, now
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
        groups = [{"names": list(g["names"]), "fstate": state_dict(g["fstate"]), "lr": group["lr"],
                   "hyper": {k: group[k] for k in g["built"] if k in group}}
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
            group.update({k: _plain(v) for k, v in saved.get("hyper", {}).items()})   # the next step reads them

"""Step-size damping by delay, as a wrapper over the delayed update (docs/design.md §4).

Every update the inner optimizer computes is scaled before it enters the delay queue;
for block k of delay tau_k > 0 at step t (t = 0, 1, ...)::

    d~_t^k = s_k(t) d_t^k,      x_{t+1} = x_t + d~_{t-tau},      y_{t+1} = y_t + d~_t

    s_k(t) = tau_k^(-p e_t),    e_t = 1 - min((t + 1)/K, 1)   (K = anneal_steps > 0)
                                e_t = 1                        (K = 0: constant damping)
    s_k(t) = f                  (factor=f: a constant multiplier, marin's lr_damp)

and s_k = 1 where tau_k = 0. Scaling d_t is scaling eta_t: every optimizer of the package
computes d_t linearly in eta_t (its state never depends on the lr), weight decay included,
so this is the inner optimizer run at lr s_k(t) eta_t. The damped displacements are what
the virtual iterate follows.

Sources. p = 1, K = 0 is the staleness-aware rule eta / tau of asynchronous SGD (Zhang,
Gupta, Lian, Liu 2016, "Staleness-aware Async-SGD"); p = 1/2 the milder eta / sqrt(tau).
K > 0 is PipeMare's learning-rate rescheduling (Yang et al. 2021, "PipeMare", T1): the
damping 1/tau is annealed away over the first K steps, in the exact form of the official
AsyncPP code (Ajanthan et al. 2025, ``lr / tau ** (1 - min((1 + step)/K, 1))``, its
"PipeMare type LR correction"). ``factor`` is the marin delay harness's ``lr_damp``, one
multiplier for every delayed block. Note that tau^(-p) is 1 at tau = 1: the published rules
do not damp a one-step delay; only ``factor`` does.

Training loop: as lmo.delayed (the gradient is taken at x_t). tau = 0 everywhere: no
scaling at all, the inner optimizer's update bit for bit.
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple

import torch

from lmo.base import Optimizer, check_int, step_counter
from lmo.delay import delayed
from lmo.delay_profiles import tau_of


class DampedState(NamedTuple):
    """The inner optimizer's state and the step counter t of the damping schedule."""

    inner: object
    step: torch.Tensor


def damping_factor(tau: int, t: int, power: float = 1.0, anneal_steps: int = 0, factor: float | None = None) -> float:
    """s(t) of the module docstring for a block of delay ``tau`` at step ``t``.

    >>> damping_factor(4, 0), damping_factor(4, 0, power=0.5), damping_factor(0, 0)      # tau^-power; tau = 0: 1
    (0.25, 0.5, 1.0)
    >>> damping_factor(4, 9, anneal_steps=10)         # annealed to 1 by step anneal_steps - 1
    1.0
    """
    if tau == 0:
        return 1.0
    if factor is not None:
        return factor
    e = 1.0 - min((t + 1) / anneal_steps, 1.0) if anneal_steps else 1.0
    return tau ** (-power * e)


def _check(power, anneal_steps, factor) -> None:
    if isinstance(power, bool) or not isinstance(power, (int, float)) or not math.isfinite(power) or power < 0:
        raise ValueError(f"power must be a finite number >= 0, got {power!r}")
    check_int(anneal_steps, "anneal_steps")
    if factor is not None and (isinstance(factor, bool) or not isinstance(factor, (int, float))
                               or not math.isfinite(factor) or factor <= 0):
        raise ValueError(f"factor must be a finite number > 0 or None, got {factor!r}")


def lr_damping(opt: Optimizer, delay=1, *, power: float = 1.0, anneal_steps: int = 0,
               factor: float | None = None) -> Optimizer:
    """Delayed update of ``opt`` run at the damped step s_k(t) eta_t (module docstring).

    ``delay``: an int or a mapping name -> tau. ``power``: p (1: eta/tau, 0.5: eta/sqrt(tau));
    ``anneal_steps``: K (PipeMare; 0 keeps the damping); ``factor``: a constant multiplier
    for every delayed block instead (marin's lr_damp).

    >>> from lmo.steepest_descent import signum
    >>> opt, x = lr_damping(signum(0.1), 2), {"w": torch.zeros(1)}
    >>> state, applied = opt.init(x), []
    >>> for _ in range(3):
    ...     a, state = opt.update({"w": torch.tensor([1.0])}, state, x)
    ...     applied.append(round(a["w"].item(), 4))
    >>> applied                                  # d_{t-2} at the damped step eta / tau = 0.05
    [0.0, 0.0, -0.05]
    """
    _check(power, anneal_steps, factor)

    def init_damped(params):
        return DampedState(opt.init(params), step_counter())

    def update_damped(grads, state, params=None):
        d, inner = opt.update(grads, state.inner, params)
        t = int(state.step)
        out = {}
        for k, v in d.items():
            s = damping_factor(tau_of(delay, k), t, power, anneal_steps, factor)
            out[k] = v if s == 1.0 else v * s
        return out, DampedState(inner, state.step + 1)

    damped = Optimizer(init_damped, update_damped, name=f"damped({opt.name})",
                       hyper=dict(inner=opt.hyper, power=power, anneal_steps=anneal_steps, factor=factor))
    wrapped = delayed(damped, delay)
    return Optimizer(wrapped.init, wrapped.update, virtual=wrapped.virtual, name=f"lr_damping({opt.name})",
                     hyper=dict(wrapped.hyper, delay=dict(delay) if isinstance(delay, Mapping) else delay))

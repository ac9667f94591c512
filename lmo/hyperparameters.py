"""The hyperparameters of the optimizers' constructors: their checks (eta, mu, beta; ValueError
naming the argument, before anything is built) and eta_t's resolution at step t, a constant or
a schedule of the step counter (docs/design.md §3: mu = 1 - beta, the weight of the new
gradient in m_t = (1 - mu) m_{t-1} + mu g_t).

>>> betas_with_mu((0.9, 0.999), mu=0.1)
(0.9, 0.999)
"""
from __future__ import annotations

import math

import torch

from lmo.base import ScalarOrSchedule, check_step_lr


def check_lr(lr: ScalarOrSchedule, name: str = "lr") -> None:
    """lr must be a positive finite number or a callable schedule.

    >>> check_lr(1e-3)
    >>> check_lr(-1.0)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a positive finite number or a schedule, got -1.0
    """
    if callable(lr):
        return
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"{name} must be a positive finite number or a schedule, got {lr!r}")


def check_mu(mu: float, name: str = "mu") -> None:
    """mu (weight of the new gradient, docs/design.md §3) must lie in (0, 1].

    >>> check_mu(0.05)
    >>> check_mu(0.0)
    Traceback (most recent call last):
    ...
    ValueError: mu must lie in (0, 1] (mu = 1 - momentum), got 0.0
    """
    if not isinstance(mu, (int, float)) or not (0.0 < mu <= 1.0):
        raise ValueError(f"{name} must lie in (0, 1] (mu = 1 - momentum), got {mu!r}")


def check_beta(beta: float, name: str) -> None:
    """A momentum / EMA coefficient beta must lie in [0, 1).

    >>> check_beta(0.9, "momentum")
    >>> check_beta(1.0, "momentum")
    Traceback (most recent call last):
    ...
    ValueError: momentum must lie in [0, 1), got 1.0
    """
    if not isinstance(beta, (int, float)) or not (0.0 <= beta < 1.0):
        raise ValueError(f"{name} must lie in [0, 1), got {beta!r}")


def resolve(value: ScalarOrSchedule, step: torch.Tensor):
    """A hyperparameter at step t: a constant, or ``schedule(t)``.

    >>> resolve(0.1, torch.tensor(3)), resolve(lambda t: 0.1 * int(t), torch.tensor(3))
    (0.1, 0.30000000000000004)
    """
    return value(step) if callable(value) else value


def resolve_lr(lr: ScalarOrSchedule, step: torch.Tensor):
    """eta_t: the constant ``lr``, or ``lr(t)`` for a schedule, which must return a finite
    number >= 0 (FloatingPointError / ValueError naming the step otherwise, before the
    update computes anything).

    >>> resolve_lr(lambda t: 1.0 / (1 + int(t)), torch.tensor(3))
    0.25
    >>> resolve_lr(lambda t: float("nan"), torch.tensor(3))
    Traceback (most recent call last):
    ...
    FloatingPointError: the lr schedule at step 3 is nan; it must be finite
    """
    if not callable(lr):
        return lr
    eta = lr(step)
    check_step_lr(eta, f"the lr schedule at step {int(step)}")
    return eta


def betas_with_mu(betas, mu: float | None = None) -> tuple:
    """Validated (beta_1, beta_2, ...) as floats; ``mu`` (if given) overrides beta_1 = 1 - mu.

    This is how every Adam-family constructor exposes docs/design.md's mu (one number for a
    gap-vs-momentum sweep): each beta must lie in [0, 1), mu in (0, 1].

    >>> betas_with_mu((0.9, 0.999)), betas_with_mu((0.9, 0.999), mu=0.5)
    ((0.9, 0.999), (0.5, 0.999))
    """
    betas = tuple(float(b) for b in betas)
    if mu is not None:
        check_mu(mu)
        betas = (1.0 - mu,) + betas[1:]
    for i, b in enumerate(betas):
        check_beta(b, f"betas[{i}]")
    return betas

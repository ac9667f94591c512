"""Normalized SGD with momentum: the LMO-momentum method in the l_2 / Frobenius geometry.

    m_t = beta m_{t-1} + (1 - beta) g_t,     d_t = -eta_t m_t / ||m_t||_F - eta_t lambda x_t

The norm is per tensor (each parameter is its own l_2 ball of radius eta_t). Leading
batch dims: pass ``event_ndim`` = number of trailing dims that form one parameter.
"""
from __future__ import annotations

from lmo.base import ScalarOrSchedule, check_beta
from lmo.geometry import L2
from lmo.lmo_momentum import lmo_momentum


def normalized_sgd(lr: ScalarOrSchedule = 0.05, momentum: float = 0.9, weight_decay: float = 0.0, *,
                   mu: float | None = None, nesterov: bool = False, event_ndim: int = 2,
                   init_momentum: str = "zero"):
    """Normalized SGD; ``mu`` overrides momentum as 1 - mu."""
    if mu is None:
        check_beta(momentum, "momentum")
        mu = 1.0 - momentum
    return lmo_momentum(lr, L2(event_ndim=event_ndim), mu=mu, nesterov=nesterov,
                        weight_decay=weight_decay, init_momentum=init_momentum, matrix_only=False,
                        name="normalized_sgd")

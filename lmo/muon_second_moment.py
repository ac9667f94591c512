"""What AdaMuon and NorMuon share: Muon's orthogonalized momentum followed by a second
moment of the orthogonalized update (docs/design.md §3). With t = 1, 2, ...::

    m_t = beta m_{t-1} + (1 - beta) g_t,   u_t = (1 - beta) g_t + beta m_t (nesterov) or m_t
    O_t = NS(pre(u_t))                     (pre = identity, or sign for AdaMuon's option)
    (v_t, D'_t) = step(O_t, v_{t-1}, t, eta_t)      (each optimizer's own second moment)
    d_t = D'_t - eta_t lambda x_t

``step`` holds everything that differs between the two optimizers (the shape of v, bias
correction, where eps sits, the final scale), written in each optimizer's own module so
that its expressions, and hence its floating-point results, stay exactly its own.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import torch

from lmo.base import (Optimizer, ScalarOrSchedule, check_beta, check_lr, check_mu, check_nonneg,
                      check_update_inputs, decoupled_decay, resolve_lr, step_counter, zeros_like_tree)
from lmo.muon_family import check_matrices, muon_ns_dtype, nesterov_momentum, orthogonalize_many


class SecondMomentState(NamedTuple):
    """step t, momentum m_t and second moment v_t of the orthogonalized update."""

    step: torch.Tensor
    momentum: dict
    second_moment: dict


def check_second_moment_args(lr: ScalarOrSchedule, momentum: float, beta2: float, eps: float,
                             weight_decay: float, mu: float | None) -> float:
    """Validate the shared hyperparameters; returns beta (1 - mu when ``mu`` is given)."""
    check_lr(lr)
    if mu is not None:
        check_mu(mu)
        momentum = 1.0 - mu
    check_beta(momentum, "momentum")
    check_beta(beta2, "beta2")
    check_nonneg(eps, "eps")
    check_nonneg(weight_decay, "weight_decay")
    return float(momentum)


def ns_options(exact: bool, ns_steps: int, ns_coefficients, ns_eps: float, ns_dtype,
               ns_method: str) -> dict:
    """The keywords of ``orthogonalize_many``, ``ns_dtype`` checked (None / "auto" -> "auto")."""
    return dict(exact=exact, ns_steps=ns_steps, ns_coefficients=ns_coefficients, ns_eps=ns_eps,
                ns_dtype=muon_ns_dtype(ns_dtype), ns_method=ns_method)


def muon_second_moment(name: str, lr: ScalarOrSchedule, beta: float, nesterov: bool,
                       weight_decay: float, ns: dict, second_moment_like: Callable,
                       step: Callable, hyper: dict, pre: Callable | None = None) -> Optimizer:
    """The optimizer of the module docstring.

    ``ns``: :func:`ns_options`. ``second_moment_like(x)``: v_0 for parameter x (zeros).
    ``step(O, v_prev, t, eta) -> (v_t, D'_t)``: the optimizer's own second-moment step,
    D'_t the displacement before weight decay. ``hyper``: the optimizer's own
    hyperparameters, recorded on the Optimizer with the shared ones.
    ``pre``: applied to u_t before NS.
    """

    def init(params):
        check_matrices(params, name)
        return SecondMomentState(step_counter(), zeros_like_tree(params),
                                 {k: second_moment_like(v) for k, v in params.items()})

    def update(grads, state, params=None):
        check_update_inputs(grads, params, state.momentum, weight_decay)
        eta = resolve_lr(lr, state.step)
        t = int(state.step) + 1
        updates, ms, vs, us = {}, {}, {}, []
        for k, g in grads.items():
            ms[k], u = nesterov_momentum(g, state.momentum[k], beta, nesterov)
            us.append(u if pre is None else pre(u))
        Os = orthogonalize_many(us, **ns)
        for k, O in zip(grads, Os):
            vs[k], d = step(O, state.second_moment[k], t, eta)
            updates[k] = decoupled_decay(d, eta, weight_decay, params, k)
        return updates, SecondMomentState(state.step + 1, ms, vs)

    hyper = dict(lr=lr, momentum=beta, weight_decay=weight_decay, nesterov=nesterov, **hyper,
                 ns_steps=ns["ns_steps"], ns_coefficients=ns["ns_coefficients"],
                 ns_dtype=str(ns["ns_dtype"]), ns_method=ns["ns_method"], exact=ns["exact"])
    return Optimizer(init, update, name=name, hyper=hyper)

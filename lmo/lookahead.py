"""Correctors that move the point where the gradient is taken: weight prediction and the
delay-adjusted Nesterov look-ahead, as wrappers over the delayed update (docs/design.md §4).

Both apply exactly what :func:`lmo.delay.delayed` applies and keep its virtual iterate::

    x_{t+1} = x_t + a_t,   a_t = d_{t-tau}          y_t = x_t + d_{t-tau} + ... + d_{t-1},   y_{t+1} = y_t + d_t

and change only the point z_t at which the caller takes the next gradient (block k of
delay tau_k; a_{-1} = 0)::

    z_t^k = x_t^k + c_k a_{t-1}^k          a_{t-1} = x_t - x_{t-1} = d_{t-1-tau}   (the last applied update)

    weight prediction      c_k = h tau_k                                  (h = horizon; 1 by default)
    Nesterov look-ahead    c_k = beta + beta^2 + ... + beta^{tau_k}       (= beta (1 - beta^tau_k)/(1 - beta))

The gradient g_t = g(z_t) then feeds the inner optimizer, whose d_t lands tau steps later on
x_{t+tau} = y_t: z_t predicts y_t from what a pipeline knows when step t's forward pass
starts. The updates d_{t-tau}, ..., d_{t-1} are not known then (their gradients are still in
flight), so the prediction extrapolates the last applied one; using the pending queue
itself would give z_t = y_t, i.e. synchronous training, which no pipeline can do. The
perturbation of the theory (docs/correctors.md) is r_t = ||z_t - y_t||: for tau = 1,
weight prediction has z_t - y_t = d_{t-2} - d_{t-1}, exactly error feedback's r_t.

Sources. Weight prediction: SpecTrain (Chen et al. 2018, arXiv 1809.02839: W_{t+s} =
W_t - s lr v_t, v_t the smoothed gradient, s the version difference), PipeOptim (Guan et
al. 2023, arXiv 2312.00839: the same with the optimizer's own update direction), and the
marin project's delay harness (``experiments/grug/moe_delay/delay_optim.py``: forward at
w + tau * pred_scale * last applied update; ``horizon`` is its pred_scale). In this
package's notation all three are c_k = h tau_k on a_{t-1}, the optimizer's own last applied
update (its direction, decay included).

Nesterov look-ahead: Ajanthan et al. 2025 (arXiv 2505.01099, Pluralis), who modify NAG's
look-ahead for a fixed delay and prove convergence. Their paper's displayed update could
not be retrieved here; their official code (PluralisResearch/AsyncPP) trains with
torch.optim.NAdam at beta1 = 0.99 under weight stashing, optionally raising each stage's
momentum to beta + tau_s (0.99 - beta)/P (:func:`stage_momentum`). This wrapper is the
package's reading of "NAG's look-ahead adjusted for a fixed delay": NAG evaluates the
gradient at x_t + beta (x_t - x_{t-1}), where heavy-ball momentum alone moves the iterate
in one step; with no new gradient its displacement after j steps is beta^j a_{t-1}, so
the point tau steps ahead is x_t + (beta + ... + beta^tau) a_{t-1}. tau = 1 is NAG's own
look-ahead, beta -> 1 is weight prediction (c = tau), beta = 0 is the plain delay. The code
reading (NAdam at beta1 = 0.99, no wrapper) is ``lmo.delayed(lmo.nadam(lr, betas=(0.99,
0.999)), tau)``.

How a training loop uses them (the gradient point is a pure function of the state, as
``lmo.next_applied`` is; a pipeline stage computes it locally, since it applied a_{t-1}
itself, and stashes z_t, not x_t, for its backward pass)::

    opt = weight_prediction(inner, delay=tau)
    state = opt.init(x)
    for t in range(T):
        z = gradient_point(state, x)          # before the forward pass of step t
        g = grad(z)
        updates, state = opt.update(g, state, x)   # params = x_t, the weights held
        x = apply_updates(x, updates)

For every other optimizer or wrapper :func:`gradient_point` returns x_t itself, so a loop
written this way runs every variant. tau_k = 0 gives z^k = x^k (the same tensor) and
a^k_t = d^k_t: synchronous training bit for bit.
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple

import torch

from lmo.base import Optimizer, check_int
from lmo.delay import DelayState, delayed
from lmo.delay_profiles import tau_of


class LookaheadState(NamedTuple):
    """The delayed wrapper's state, and ``ahead[k]`` = c_k a^k_{t-1} (None where c_k = 0).

    The extrapolation is stored already scaled, so the gradient point is a function of
    the state alone (as ``next_applied`` is)."""

    delay: DelayState
    ahead: dict

    def next_applied(self) -> dict:
        """a_t = d_{t-tau}, as lmo.delay.next_applied (None where tau = 0)."""
        return self.delay.next_applied()

    def offset(self) -> dict:
        """y_t - x_t = d_{t-tau} + ... + d_{t-1}, as lmo.delay.virtual_offset."""
        return self.delay.offset()

    def gradient_point(self, params: Mapping) -> dict:
        """z_t = x_t + c a_{t-1} per block (x_t itself where c = 0)."""
        return {k: v if self.ahead[k] is None else v + self.ahead[k].to(v.dtype) for k, v in params.items()}


def gradient_point(state, params: Mapping) -> dict:
    """z_t, the point at which the next gradient must be taken (module docstring), from
    the state of the outermost wrapper: the corrector's extrapolated point where the state
    has one (:class:`LookaheadState`), x_t = ``params`` for every other optimizer.

    >>> from lmo.steepest_descent import signum
    >>> opt, x = weight_prediction(signum(0.1), 2), {"w": torch.zeros(2)}
    >>> state = opt.init(x)
    >>> for _ in range(3):
    ...     applied, state = opt.update({"w": torch.tensor([1.0, -1.0])}, state, x)
    ...     x = {k: x[k] + applied[k] for k in x}
    >>> x["w"], gradient_point(state, x)["w"]        # z_t = x_t + tau a_{t-1}, tau = 2
    (tensor([-0.1000,  0.1000]), tensor([-0.3000,  0.3000]))
    >>> torch.equal(gradient_point(signum(0.1).init(x), x)["w"], x["w"])   # no extrapolation: x_t
    True
    """
    fn = getattr(state, "gradient_point", None)
    return fn(params) if callable(fn) else dict(params)


def lookahead_coefficient(tau: int, beta: float) -> float:
    """c = beta + beta^2 + ... + beta^tau (0 for tau = 0), summed term by term so that
    beta = 1 gives tau exactly.

    >>> lookahead_coefficient(2, 0.5), lookahead_coefficient(3, 1.0), lookahead_coefficient(0, 0.9)
    (0.75, 3.0, 0.0)
    """
    return math.fsum(beta ** j for j in range(1, tau + 1))


def _extrapolated(opt: Optimizer, delay, coef, name: str, hyper: dict) -> Optimizer:
    """The delayed wrapper of ``opt`` whose state also carries c_k a_{t-1} (c_k = coef(tau_k))."""
    base = delayed(opt, delay)

    def init(params):   # a_{-1} = 0; None where c = 0 for good (a state of fixed structure)
        return LookaheadState(base.init(params),
                              {k: None if coef(tau_of(delay, k)) == 0 else torch.zeros_like(v)
                               for k, v in params.items()})

    def update(grads, state, params=None):
        applied, dstate = base.update(grads, state.delay, params)
        ahead = {}
        for k, a in applied.items():
            c = coef(tau_of(delay, k))
            ahead[k] = None if c == 0 else a * c
        return applied, LookaheadState(dstate, ahead)

    def virtual(params, state):
        return base.virtual(params, state.delay)

    return Optimizer(init, update, virtual=virtual, name=f"{name}({opt.name})",
                     hyper=dict(inner=opt.hyper, delay=dict(delay) if isinstance(delay, Mapping) else delay,
                                **hyper))


def weight_prediction(opt: Optimizer, delay=1, *, horizon: float = 1.0) -> Optimizer:
    """Delayed update with the gradient taken at the predicted weights
    z_t = x_t + horizon * tau_k * a_{t-1} (module docstring; SpecTrain / PipeOptim / marin).

    ``delay``: an int or a mapping name -> tau (per-block delays, lmo.delay). ``horizon``:
    how many multiples of tau to extrapolate (marin's pred_scale; 1 predicts exactly the
    delay).

    >>> from lmo.steepest_descent import signum
    >>> opt, x = weight_prediction(signum(0.1), 1, horizon=2.0), {"w": torch.zeros(1)}
    >>> state = opt.init(x)
    >>> for _ in range(2):
    ...     applied, state = opt.update({"w": torch.tensor([1.0])}, state, x)
    ...     x = {k: x[k] + applied[k] for k in x}
    >>> x["w"], gradient_point(state, x)["w"]        # z_t = x_t + 2 * 1 * a_{t-1}
    (tensor([-0.1000]), tensor([-0.3000]))
    """
    if isinstance(horizon, bool) or not isinstance(horizon, (int, float)) or not math.isfinite(horizon) \
            or horizon < 0:
        raise ValueError(f"horizon must be a finite number >= 0, got {horizon!r}")
    return _extrapolated(opt, delay, lambda tau: horizon * tau, "weight_prediction", dict(horizon=horizon))


def nesterov_lookahead(opt: Optimizer, delay=1, *, beta: float = 0.99) -> Optimizer:
    """Delayed update with the gradient taken at NAG's look-ahead iterated over the delay,
    z_t = x_t + (beta + ... + beta^tau_k) a_{t-1} (module docstring; Ajanthan et al. 2025,
    the package's reading). ``beta`` in [0, 1]: the momentum of the extrapolation (0.99 as
    the official AsyncPP run script; the inner optimizer keeps its own momentum).

    >>> from lmo.steepest_descent import signum
    >>> opt, x = nesterov_lookahead(signum(0.1), 2, beta=0.5), {"w": torch.zeros(1)}
    >>> state = opt.init(x)
    >>> for _ in range(3):
    ...     applied, state = opt.update({"w": torch.tensor([1.0])}, state, x)
    ...     x = {k: x[k] + applied[k] for k in x}
    >>> x["w"], gradient_point(state, x)["w"]        # z_t = x_t + (0.5 + 0.25) a_{t-1}
    (tensor([-0.1000]), tensor([-0.1750]))
    """
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must lie in [0, 1], got {beta!r}")
    return _extrapolated(opt, delay, lambda tau: lookahead_coefficient(tau, beta), "nesterov_lookahead",
                         dict(beta=beta))


def stage_momentum(beta: float, tau: int, num_stages: int, beta_max: float = 0.99) -> float:
    """The per-stage momentum of the official AsyncPP code's ``--adaptive_momentum``:
    beta_s = beta + tau_s (beta_max - beta) / P, with tau_s the stage's delay (its number of
    weight versions minus one) and P the number of stages: the stalest stage gets the
    largest momentum, the last stage (tau = 0) keeps beta.

    >>> [stage_momentum(0.9, tau, 4) for tau in (3, 0)]        # beta + tau (0.99 - 0.9) / P
    [0.9675, 0.9]
    """
    check_int(num_stages, "num_stages", 1)
    check_int(tau, "tau", 0, num_stages - 1)
    if not 0.0 <= beta <= beta_max <= 1.0:
        raise ValueError(f"beta and beta_max must satisfy 0 <= beta <= beta_max <= 1, got {beta!r}, {beta_max!r}")
    return beta + tau * (beta_max - beta) / num_stages

"""DC-ASGD with an EMA of the squared gradient, as wrappers over the delayed update
(docs/design.md §4). Two published readings, one constructor each.

The delayed update x_{t+1} = x_t + d_{t-tau} takes g_t at x_t, and d_t lands on
x_{t+tau} = y_t, the virtual iterate (lmo.delay). Delay compensation corrects g_t,
elementwise, by a diagonal curvature times the offset y_t - x_t (DC-ASGD's "w_now -
w_stale" after the index alignment of lmo.delay; None where tau = 0, which leaves g_t
unchanged). With v_t the EMA of g*g, v_t = beta v_{t-1} + (1 - beta) g_t * g_t (v_{-1} = 0,
updated with g_t before the correction)::

    dc_asgd_adaptive (Zheng et al. 2017, DC-ASGD-a):
        g~_t = g_t + lambda / sqrt(v_t + eps) * g_t * g_t * (y_t - x_t)
    dc_asgd_ema (the marin project's "dc_asgd_ema"):
        g~_t = g_t + lambda * v_t * (y_t - x_t)

then d_t = inner(g~_t) as usual. The first is the paper's adaptive variant: the plain
DC-ASGD term lambda g*g*(y - x) (lmo.delay.dc_correct) with lambda_t = lambda_0 /
sqrt(MeanSquare(t) + eps); the formula and its defaults (m = beta = 0.95, eps = 1e-7,
the MeanSquare updated before it is used) are those of the authors' own parameter-server
updater (Microsoft multiverso, ``DCASGDAUpdater``), lambda_0 = 2 as the paper's CIFAR
setting. Its correction is scale-free in g: about lambda |g| |y - x|. The second replaces
the instantaneous g*g of DC-ASGD by the EMA itself (marin's
``experiments/grug/moe_delay/delay_optim.py``: dc_lambda = 1, dc_beta2 = 0.99), the
"reuse the second moment as curvature" reading.

Training loop: as lmo.delayed (the gradient is taken at x_t; ``lmo.gradient_point``
returns x_t). For a Muon-type inner optimizer the corrected gradient enters the momentum
before the orthogonalization, as in marin's harness. tau = 0 everywhere: the correction
vanishes and the update is the inner optimizer's bit for bit (v is still tracked).
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple

import torch

from lmo.base import Optimizer, check_finite, check_nonneg, check_same_keys
from lmo.hyperparameters import check_beta
from lmo.delay import DelayState, delayed


class DCAdaptiveState(NamedTuple):
    """The delayed wrapper's state and v_{t-1}, the EMA of g * g per block."""

    delay: DelayState
    sq_avg: dict

    def next_applied(self) -> dict:
        """a_t = d_{t-tau}, as lmo.delay.next_applied."""
        return self.delay.next_applied()

    def offset(self) -> dict:
        """y_t - x_t, as lmo.delay.virtual_offset."""
        return self.delay.offset()


def zheng_correction(g: torch.Tensor, v: torch.Tensor, off: torch.Tensor, lam: float, eps: float) -> torch.Tensor:
    """DC-ASGD-a: g + lambda / sqrt(v + eps) * g * g * off (elementwise).

    >>> g, v, off = torch.tensor([2.0]), torch.tensor([4.0]), torch.tensor([0.5])
    >>> zheng_correction(g, v, off, lam=1.0, eps=0.0)          # 2 + 1 / sqrt(4) * 2 * 2 * 0.5
    tensor([3.])
    """
    return g + lam / torch.sqrt(v + eps) * g * g * off


def ema_correction(g: torch.Tensor, v: torch.Tensor, off: torch.Tensor, lam: float, eps: float) -> torch.Tensor:
    """marin's dc_asgd_ema: g + lambda * v * off (elementwise; eps unused).

    >>> g, v, off = torch.tensor([2.0]), torch.tensor([4.0]), torch.tensor([0.5])
    >>> ema_correction(g, v, off, lam=1.0, eps=0.0)            # 2 + 4 * 0.5
    tensor([4.])
    """
    return g + lam * v * off


class Compensation(NamedTuple):
    """One reading of the correction (module docstring): ``correction`` a key of
    :data:`CORRECTIONS`, lambda, beta (the EMA's) and eps.

    >>> Compensation("dc_asgd_ema", lam=1.0, beta=0.99, eps=0.0).correction in CORRECTIONS
    True
    """

    correction: str
    lam: float
    beta: float
    eps: float


#: correction name -> its elementwise formula (g, v_t, y_t - x_t, lambda, eps) -> g~_t
CORRECTIONS = {"dc_asgd_adaptive": zheng_correction, "dc_asgd_ema": ema_correction}


def compensate(grads, state: DCAdaptiveState, comp: Compensation) -> tuple[dict, dict]:
    """The first half of the wrapper's update: (g~_t, v_t) from g_t and the state after t
    updates, v_t = beta v_{t-1} + (1 - beta) g_t * g_t and g~_t = correction(g_t, v_t, y_t - x_t)
    (g~_t = g_t where the block's tau = 0 or lambda = 0). A caller that scales g~_t before the
    inner optimizer (a pipeline stage's share of a global-norm clip) calls the two halves itself.

    >>> from lmo.steepest_descent import signum
    >>> opt, x = dc_asgd_ema(signum(0.1), 1, beta=0.5), {"w": torch.zeros(1)}
    >>> _, state = opt.update({"w": torch.tensor([1.0])}, opt.init(x), x)          # pending d_0 = -0.1
    >>> compensate({"w": torch.tensor([2.0])}, state, compensation_of(opt))       # v = 0.5 * 0.5 + 0.5 * 4
    ({'w': tensor([1.7750])}, {'w': tensor([2.2500])})
    """
    check_same_keys(grads, state.sq_avg, "grads and DC-ASGD's EMA")
    check_finite(grads)   # before v absorbs them
    off, correction = state.offset(), CORRECTIONS[comp.correction]
    sq_avg, corrected = {}, {}
    for k, g in grads.items():
        v = comp.beta * state.sq_avg[k] + (1 - comp.beta) * g * g
        sq_avg[k] = v
        corrected[k] = g if off[k] is None or not comp.lam else correction(g, v, off[k].to(g.dtype), comp.lam, comp.eps)
    return corrected, sq_avg


def compensated_update(base: Optimizer, corrected, sq_avg, state: DCAdaptiveState, params=None):
    """The second half: the delayed update ``base`` (lmo.delay.delayed of the inner optimizer)
    of g~_t, and the new state (base's, v_t). ``compensate`` then this is the wrapper's update.

    >>> from lmo.steepest_descent import signum
    >>> from lmo.delay import delayed
    >>> opt, x = dc_asgd_ema(signum(0.1), 1), {"w": torch.zeros(1)}
    >>> state = opt.init(x)
    >>> corrected, v = compensate({"w": torch.tensor([1.0])}, state, compensation_of(opt))
    >>> compensated_update(delayed(signum(0.1), 1), corrected, v, state, x)[0]      # the first step applies d_{-1} = 0
    {'w': tensor([0.])}
    """
    applied, dstate = base.update(corrected, state.delay, params)
    return applied, DCAdaptiveState(dstate, sq_avg)


def compensation_of(opt: Optimizer) -> Compensation:
    """The :class:`Compensation` a wrapper built here applies (read from its ``hyper``).

    >>> from lmo.steepest_descent import signum
    >>> compensation_of(dc_asgd_adaptive(signum(0.1)))
    Compensation(correction='dc_asgd_adaptive', lam=2.0, beta=0.95, eps=1e-07)
    """
    h = opt.hyper
    if h.get("correction") not in CORRECTIONS:
        raise ValueError(f"compensation_of: {opt.name!r} is not a DC-ASGD-a / -EMA wrapper")
    return Compensation(h["correction"], h["lam"], h["beta"], h["eps"])


def compensated(opt: Optimizer, delay, comp: Compensation) -> Optimizer:
    """The delayed update of ``opt`` (``delay``: an int or a mapping name -> tau) whose inner
    optimizer sees g~_t: :func:`compensate`, then :func:`compensated_update`.

    >>> from lmo.steepest_descent import signum
    >>> compensated(signum(0.1), 1, Compensation("dc_asgd_ema", 1.0, 0.99, 0.0)).name
    'dc_asgd_ema(signum)'
    """
    check_nonneg(comp.lam, "lam")
    check_beta(comp.beta, "beta")
    if comp.correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {sorted(CORRECTIONS)}, got {comp.correction!r}")
    base = delayed(opt, delay)

    def init(params):
        return DCAdaptiveState(base.init(params), {k: torch.zeros_like(v) for k, v in params.items()})

    def update(grads, state, params=None):
        corrected, sq_avg = compensate(grads, state, comp)
        return compensated_update(base, corrected, sq_avg, state, params)

    def virtual(params, state):
        return base.virtual(params, state.delay)

    return Optimizer(init, update, virtual=virtual, name=f"{comp.correction}({opt.name})",
                     hyper=dict(inner=opt.hyper, delay=dict(delay) if isinstance(delay, Mapping) else delay,
                                correction=comp.correction, lam=comp.lam, beta=comp.beta, eps=comp.eps))


def dc_asgd_adaptive(opt: Optimizer, delay=1, *, lam: float = 2.0, beta: float = 0.95,
                     eps: float = 1e-7) -> Optimizer:
    """Delayed update with DC-ASGD-a's correction (Zheng et al. 2017; module docstring):
    g~ = g + lam / sqrt(v + eps) * g * g * (y - x), v the EMA (weight ``1 - beta``) of g * g.
    ``delay``: an int or a mapping name -> tau.

    >>> from lmo.steepest_descent import signum
    >>> opt, x = dc_asgd_adaptive(signum(0.1), 1), {"w": torch.zeros(1)}
    >>> state = opt.init(x)
    >>> for _ in range(2):
    ...     applied, state = opt.update({"w": torch.tensor([1.0])}, state, x)
    ...     x = {k: x[k] + applied[k] for k in x}
    >>> x["w"]                   # one delayed sign step: d_0 applied at step 1
    tensor([-0.1000])
    """
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
    return compensated(opt, delay, Compensation("dc_asgd_adaptive", lam, beta, eps))


def dc_asgd_ema(opt: Optimizer, delay=1, *, lam: float = 1.0, beta: float = 0.99) -> Optimizer:
    """Delayed update with marin's DC-ASGD-EMA correction (module docstring):
    g~ = g + lam * v * (y - x), v the EMA (weight ``1 - beta``) of g * g.
    ``delay``: an int or a mapping name -> tau.

    >>> from lmo.steepest_descent import signum
    >>> opt, x = dc_asgd_ema(signum(0.1), 1), {"w": torch.zeros(1)}
    >>> _, state = opt.update({"w": torch.tensor([1.0])}, opt.init(x), x)
    >>> state.sq_avg, state.offset()            # v_1 = 0.01 g^2; y - x = the pending d_0
    ({'w': tensor([0.0100])}, {'w': tensor([-0.1000])})
    """
    return compensated(opt, delay, Compensation("dc_asgd_ema", lam, beta, 0.0))

"""Every delay corrector by name: the one table a run specification can point at
(docs/design.md §4; docs/correctors.md says what each is predicted to do).

Each entry is a constructor ``(opt, delay, **options) -> Optimizer`` around the synchronous
optimizer ``opt``, with ``delay`` an int or a mapping name -> tau; every one applies
x_{t+1} = x_t + (its update of d_{t-tau}) and is the inner optimizer itself, bit for bit,
at tau = 0. The gradient is taken at ``lmo.gradient_point(state, x)`` (x itself except for
the look-ahead correctors).

=====================  ==========================================================
``none``               lmo.delay.delayed: the plain delay, x_{t+1} = x_t + d_{t-tau}
``weight_prediction``  lmo.lookahead.weight_prediction: g at x_t + tau a_{t-1}
``nesterov_lookahead`` lmo.lookahead.nesterov_lookahead: g at x_t + (beta + ... + beta^tau) a_{t-1}
``dc_asgd``            lmo.delay.delayed(dc_asgd=lambda): g + lambda g*g*(y_t - x_t)
``dc_asgd_adaptive``   lmo.delay_compensation.dc_asgd_adaptive (Zheng et al.'s DC-ASGD-a)
``dc_asgd_ema``        lmo.delay_compensation.dc_asgd_ema (marin's reading)
``lr_damping``         lmo.step_damping.lr_damping: eta tau^(-p), PipeMare's annealed form, or a factor
=====================  ==========================================================

Error feedback (lmo.ef_correction) is the paper's corrector for tau = 1 only and keeps its
own constructor.
"""
from __future__ import annotations

from lmo.base import Optimizer
from lmo.delay_compensation import dc_asgd_adaptive, dc_asgd_ema
from lmo.delay import delayed
from lmo.lookahead import nesterov_lookahead, weight_prediction
from lmo.step_damping import lr_damping


def _plain(opt: Optimizer, delay=1) -> Optimizer:
    return delayed(opt, delay)


def _dc_asgd(opt: Optimizer, delay=1, *, lam: float = 0.04) -> Optimizer:
    return delayed(opt, delay, dc_asgd=lam)


#: corrector name -> constructor (opt, delay, **options)
CORRECTORS = {
    "none": _plain,
    "weight_prediction": weight_prediction,
    "nesterov_lookahead": nesterov_lookahead,
    "dc_asgd": _dc_asgd,
    "dc_asgd_adaptive": dc_asgd_adaptive,
    "dc_asgd_ema": dc_asgd_ema,
    "lr_damping": lr_damping,
}


def with_corrector(opt: Optimizer, corrector: str, delay=1, **options) -> Optimizer:
    """``CORRECTORS[corrector](opt, delay, **options)``; an unknown name is refused, listing
    the known ones.

    >>> from lmo.steepest_descent import signum
    >>> with_corrector(signum(0.1), "weight_prediction", 2).name, sorted(CORRECTORS)[:3]
    ('weight_prediction(signum)', ['dc_asgd', 'dc_asgd_adaptive', 'dc_asgd_ema'])
    """
    if corrector not in CORRECTORS:
        raise ValueError(f"corrector must be one of {sorted(CORRECTORS)}, got {corrector!r}")
    return CORRECTORS[corrector](opt, delay, **options)

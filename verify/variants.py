"""Build the optimizer of a run: momentum LMO (m_0 = g_0, weight_decay = 0, scale = 1, so
eta = lr is the LMO step norm) under one of the variants (``lmo.variants.RUN_VARIANTS``)

    sync | delayed (tau = 1, PipeDream-2BW) | ef | pipedream (one block with delay tau >= 2,
    the staleness of the first stage of a tau + 1 stage PipeDream pipeline).

``backend="lmo"`` uses lmo.lmo_momentum under ``lmo.variants.Delay.wrap`` (lmo's delay /
error-feedback wrappers); ``"reference"`` uses verify.reference (an independent
re-statement of the recursions); ``"auto"`` takes lmo when its modules are importable and
accept m_0 = g_0.
"""
from __future__ import annotations

import inspect

from lmo.variants import DELAYED, PIPEDREAM, RUN_VARIANTS, Delay, theory_variant

from .reference import reference_optimizer

#: keyword names under which lmo_momentum might offer m_0 = g_0
_INIT_KWS = {"init": "grad", "momentum_init": "grad", "m0": "grad", "init_momentum": "grad",
             "first_grad_init": True, "m0_is_g0": True, "init_with_grad": True}


def default_delay(variant: str, delay: int | None) -> int:
    if variant == PIPEDREAM:
        return 2 if delay is None else delay
    return 1 if delay is None else delay


def _lmo_init_kw():
    """The keyword of lmo_momentum that sets m_0 = g_0, or raise ImportError."""
    from lmo.steepest_descent import lmo_momentum
    params = inspect.signature(lmo_momentum).parameters
    for kw, val in _INIT_KWS.items():
        if kw in params:
            return lmo_momentum, {kw: val}
    raise ImportError("lmo_momentum has no option for m_0 = g_0")


def lmo_available() -> bool:
    try:
        _lmo_init_kw()
        import lmo.delay  # noqa: F401
        import lmo.ef_correction  # noqa: F401
        return True
    except Exception:
        return False


def build_optimizer(variant: str, lr: float, geometry, mu: float, delay: int | None = None,
                    backend: str = "auto"):
    """The lmo.base.Optimizer of a run (see the module docstring)."""
    if variant not in RUN_VARIANTS:
        raise ValueError(f"variant must be one of {RUN_VARIANTS}, got {variant!r}")
    if backend not in ("auto", "lmo", "reference"):
        raise ValueError(f"backend must be auto, lmo or reference, got {backend!r}")
    tau = default_delay(variant, delay)
    if variant == PIPEDREAM and tau < 2:
        raise ValueError(f"delay must be >= 2 for the pipedream variant, got {tau}")
    if backend == "auto":
        backend = "lmo" if lmo_available() else "reference"
    if backend == "reference":   # pipedream: the delayed recursion of one block
        return reference_optimizer(lr, geometry, mu, theory_variant(variant), tau)
    lmo_momentum, kw = _lmo_init_kw()
    base = lmo_momentum(lr, geometry, mu=mu, scale=1.0, weight_decay=0.0, **kw)
    # the delay is a parameter of the delayed and pipedream runs only (sync and ef ignore it)
    return Delay.of_run_variant(variant, tau if variant in (DELAYED, PIPEDREAM) else None).wrap(base)

"""Delay profiles: the delay tau_k of each parameter block, for the wrappers of
lmo.delay, lmo.lookahead, lmo.delay_compensation and lmo.step_damping (docs/design.md §4).

A delay is an int (every block waits tau steps) or a mapping name -> tau_k. The profiles
of a pipeline of P stages: PipeDream-2BW delays every block by 1; the original PipeDream
delays the blocks of stage s by P - 1 - s (``lmo.pipedream.pipedream_delays``); marin's
harness uses the same profile with the embedding at P - 1 and the head at 0.
:func:`delay_by_label` builds the attribution profiles: a delay per group label (e.g.
``lmo.muon_labels``' "matrix" / "other"), tau = 0 for a group left synchronous::

    delay_by_label(muon_labels(params), {"matrix": 1, "other": 0})   # delay only the Muon group
"""
from __future__ import annotations

from typing import Mapping

from lmo.base import check_int


def tau_of(delay, name: str) -> int:
    """tau_k of block ``name`` for ``delay`` = an int or a mapping name -> tau.

    >>> tau_of(2, "h.w"), tau_of({"h.w": 1, "h.b": 0}, "h.b")
    (2, 0)
    """
    if isinstance(delay, Mapping):
        if name not in delay:
            raise KeyError(f"delay: no entry for parameter '{name}'")
        return delay[name]
    return delay


def delay_by_label(labels: Mapping[str, str], taus: Mapping[str, int]) -> dict:
    """{name: taus[labels[name]]}: one delay per group label (0 = that group stays
    synchronous). Every label must have a delay.

    >>> delay_by_label({"h.w": "matrix", "h.b": "other"}, {"matrix": 1, "other": 0})
    {'h.w': 1, 'h.b': 0}
    """
    missing = sorted({lab for lab in labels.values() if lab not in taus})
    if missing:
        raise KeyError(f"taus: no delay for labels {missing} (labels present: {sorted(set(labels.values()))})")
    for lab, tau in taus.items():
        check_int(tau, f"taus['{lab}']")
    return {k: taus[lab] for k, lab in labels.items()}

"""Registry of bounds: ``get(name) -> Bound``, ``all_bounds() -> list[Bound]``.

Names (docs/interfaces.md): kovalev_sync_lemma, kovalev_sync_theorem,
paper_delayed_noise_literal, paper_delayed_noise_consistent, derived_sync_lemma,
derived_sync_theorem, derived_delayed_lemma, derived_delayed_lemma_x,
derived_delayed_theorem, derived_ef_lemma_trajectory, derived_ef_lemma_worst,
derived_ef_theorem_trajectory, derived_ef_theorem_worst; plus
derived_delayed_theorem_x (the delayed theorem at x_t) and the readings of the paper's
delayed bound paper_c1_y, paper_c2_y, paper_c1_x, paper_c2_x, paper_c3_y, paper_c4_y,
paper_c3_x, paper_c4_x (theory.records.paper_readings; each record names its reading).
"""
from __future__ import annotations

from . import package_bounds, paper_readings
from .bound import Bound

ALL = package_bounds.ALL[:2] + paper_readings.ALL + package_bounds.ALL[2:]

_BY_NAME: dict[str, Bound] = {b.name: b for b in ALL}


def get(name: str) -> Bound:
    """The registered bound called ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no bound named {name!r}; known: {sorted(_BY_NAME)}") from None


def all_bounds() -> list[Bound]:
    """All registered bounds, in registration order."""
    return list(ALL)


def names() -> list[str]:
    """Registered names, in registration order."""
    return [b.name for b in ALL]

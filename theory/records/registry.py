"""Registry of bounds: ``get(name) -> Bound``, ``all_bounds() -> list[Bound]``, ``names()``.

The records are theory.records.package_bounds (Kovalev's restated bounds and the package's derived
ones) and theory.records.paper_readings (the paper's delayed bound, one record per reading, and its
noise term alone); appending a record to one of their ``ALL`` tuples registers it (docs/interfaces.md,
"How to add a lemma"). ``names()`` is the list; theory.examples.bounds has a function per name.
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

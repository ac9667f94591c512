"""Every derivation, by name: the package's own (theory.package_derivations) and the paper's
readings derived as checked chains (theory.paper_derivations). The bounds they prove are
registered by name in theory.registry.
"""
from __future__ import annotations

from .derivation import Derivation
from .package_derivations import package_derivations
from .paper_derivations import paper_derivations


def all_derivations() -> list[Derivation]:
    """The package's derivations followed by the paper-reading derivations (C1, C2 chains)."""
    return package_derivations() + paper_derivations()


def get_derivation(name: str) -> Derivation:
    """The derivation called ``name`` (see all_derivations)."""
    for d in all_derivations():
        if d.name == name:
            return d
    raise KeyError(f"no derivation {name!r}; known: {[d.name for d in all_derivations()]}")

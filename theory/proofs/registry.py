"""Every derivation, by name: the package's own (theory.proofs.package_derivations) and the paper's
readings derived as checked chains (theory.proofs.paper_derivations). The bounds they prove are
registered by name in theory.records.registry.
"""
from __future__ import annotations

from .derivation import Derivation, duplicate_ids
from .package_derivations import package_derivations
from .paper_derivations import paper_derivations


def registered(derivations) -> list[Derivation]:
    """``derivations`` as a registry: refused (ValueError) when two derivations share a name or
    two different steps share a premise id (theory.proofs.derivation.premise_id: the premise witnesses
    and check() key their results by it, so a shared id would hide one of the two results)."""
    names = [d.name for d in derivations]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"derivation names registered twice: {twice}")
    dup = duplicate_ids(derivations)
    if dup:
        raise ValueError(f"premise ids registered twice: {dup}")
    return list(derivations)


def all_derivations() -> list[Derivation]:
    """The package's derivations followed by the paper-reading derivations (C1, C2 chains)."""
    return registered(package_derivations() + paper_derivations())


def get_derivation(name: str) -> Derivation:
    """The derivation called ``name`` (see all_derivations)."""
    for d in all_derivations():
        if d.name == name:
            return d
    raise KeyError(f"no derivation {name!r}; known: {[d.name for d in all_derivations()]}")

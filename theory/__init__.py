"""theory: bounds for sync / delayed / error-feedback LMO momentum methods, checked by sympy.

``theory.registry.get(name)`` returns a `Bound` (expr, quantity, variant, assumptions,
source, status, valid, symbols, evaluate). Derivations with machine-checked steps live in
theory.derivation, scaling/units checks in theory.scaling, limits and comparisons in
theory.limits, optimized rates and the price of the delay in theory.rates.
``python -m theory --help`` prints the proofs and the registry.
"""
from .bound import Bound
from .registry import all_bounds, get

__all__ = ["Bound", "get", "all_bounds"]

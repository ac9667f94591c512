"""Synthetic smooth problems with certified constants (docs/design.md §6, step 3)."""
from .base import Certificate, Problem
from .nonconvex import CosineSum, random_cosine_sum
from .quadratic import (Quadratic, least_squares, random_least_squares, random_psd,
                        random_quadratic, sign_constant_enumerated, vector_quadratic)

__all__ = ["Certificate", "Problem", "CosineSum", "random_cosine_sum", "Quadratic",
           "least_squares", "random_least_squares", "random_psd", "random_quadratic",
           "sign_constant_enumerated", "vector_quadratic"]

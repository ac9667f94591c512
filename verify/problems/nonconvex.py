"""A smooth non-convex objective: f(X) = sum_i c_i (1 - cos <A_i, X - X*>), c_i > 0.

grad f(X) = sum_i c_i sin(<A_i, X - X*>) A_i; the Hessian sum_i c_i cos(.) A_i (x) A_i is
indefinite away from X*, so f is non-convex. f* = 0, attained at X* (exact).

A2 certificate (proven, generally not tight): with a_i = <A_i, X - X*>, b_i = <A_i, Y - X*>,

    ||grad f(X) - grad f(Y)||_* = ||sum_i c_i (sin a_i - sin b_i) A_i||_*
                                <= sum_i c_i |a_i - b_i| ||A_i||_*          (|sin'| <= 1)
                                <= (sum_i c_i ||A_i||_*^2) ||X - Y||          (Hoelder: |<A_i, D>| <= ||A_i||_* ||D||)

so L = sum_i c_i ||A_i||_*^2 with ||.||_* the geometry's dual norm. Problem.L_lower
reports how loose it is.
"""
from __future__ import annotations

import torch

from .base import Certificate, Problem, check_positive


class CosineSum(Problem):
    """f(X) = sum_i c_i (1 - cos <A_i, X - X*>); A of shape (k, m, n), c of shape (k,)."""

    def __init__(self, A, c, Xstar, geometry, x0=None, name: str = "cosine_sum"):
        A = torch.as_tensor(A, dtype=torch.float64)
        c = torch.as_tensor(c, dtype=torch.float64)
        if A.ndim != 3 or c.shape != (A.shape[0],):
            raise ValueError(f"A must be (k, m, n) and c (k,), got {tuple(A.shape)}, {tuple(c.shape)}")
        if (c <= 0).any():
            raise ValueError("c must be positive entrywise")
        self.A, self.c = A, c
        self.shape = tuple(A.shape[1:])
        self.Xstar = torch.as_tensor(Xstar, dtype=torch.float64)
        self.geometry = geometry
        self.f_star, self.f_star_exact, self.name = 0.0, True, name
        self._x0 = torch.zeros(self.shape, dtype=torch.float64) if x0 is None else torch.as_tensor(x0, dtype=torch.float64)

    def _inner(self, X):
        D = (X - self.Xstar).unsqueeze(-3)  # (..., 1, m, n)
        return (D * self.A).sum(dim=(-2, -1))  # (..., k)

    def f(self, X):
        return (self.c * (1 - torch.cos(self._inner(X)))).sum(-1)

    def grad(self, X):
        s = self.c * torch.sin(self._inner(X))  # (..., k)
        return torch.einsum("...k,kmn->...mn", s, self.A)

    def x0(self):
        return self._x0.clone()

    def scaled(self, c: float) -> "CosineSum":
        check_positive(c, "c")
        return CosineSum(self.A, c * self.c, self.Xstar, self.geometry, self._x0, f"{self.name}*{c:g}")

    def certificate(self) -> Certificate:
        dn = self.geometry.dual_norm(self.A)
        return Certificate(float((self.c * dn ** 2).sum()), False,
                           "L <= sum_i c_i ||A_i||_*^2 (|sin'| <= 1, Hoelder)")


def random_cosine_sum(m: int, n: int, geometry, generator: torch.Generator, k: int = 4,
                      scale: float = 1.0, dist: float = 2.0) -> CosineSum:
    """k random Gaussian directions A_i / sqrt(m n), weights c_i = scale / k, X* of size dist."""
    A = torch.randn((k, m, n), generator=generator, dtype=torch.float64) / (m * n) ** 0.5
    c = torch.full((k,), scale / k, dtype=torch.float64)
    Xs = dist * torch.randn((m, n), generator=generator, dtype=torch.float64)
    return CosineSum(A, c, Xs, geometry, name=f"cosine_sum{m}x{n}")

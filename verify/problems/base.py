"""The `Problem` protocol: a smooth objective with certified constants (docs/design.md §5; §6, step 3).

A problem acts on one matrix parameter X of shape (m, n) (vectors are (1, d)), batched
over any leading dims (independent seeds). It exposes

* ``f(X)``, ``grad(X)``: exact, batched over leading dims;
* ``f_star``: the exact infimum (or a certified lower bound, ``f_star_exact=False``);
* ``L``: a certified A2 constant in the pair (geometry.norm, geometry.dual_norm),
  i.e. ``||grad f(X) - grad f(Y)||_* <= L ||X - Y||`` for all X, Y, exact when
  ``L_exact`` (with the derivation in ``L_derivation``);
* ``rho = geometry.rho(shape)`` (A4);
* ``L_lower(...)``: a numerical lower estimate of the best A2 constant (a ratio
  actually attained by a pair X, Y), so a report can say how loose ``L`` is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

Tensor = torch.Tensor


@dataclass(frozen=True)
class Certificate:
    """A2 certificate: ``L`` proven; ``exact`` when it equals the best constant."""

    L: float
    exact: bool
    derivation: str


class Problem:
    """Base class; subclasses set name, shape, geometry, f_star, f_star_exact and
    implement f, grad, certificate, x0, scaled."""

    name: str = "problem"
    shape: tuple[int, int]
    geometry: object
    f_star: float
    f_star_exact: bool = True
    dtype: torch.dtype = torch.float64

    # -- to implement
    def f(self, X: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def grad(self, X: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def certificate(self) -> Certificate:  # pragma: no cover - abstract
        raise NotImplementedError

    def x0(self) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def scaled(self, c: float) -> "Problem":  # pragma: no cover - abstract
        """The problem c f (L, f* scale by c; the minimisers do not move)."""
        raise NotImplementedError

    # -- derived
    @property
    def L(self) -> float:
        return self.certificate().L

    @property
    def rho(self) -> float:
        return float(self.geometry.rho(self.shape))

    def delta0(self) -> float:
        """Delta_0 = f(x_0) - f* (an upper bound when f* is only a lower bound)."""
        return float(self.f(self.x0()) - self.f_star)

    def check_shape(self, X: Tensor, name: str = "X") -> None:
        if X.shape[-2:] != tuple(self.shape):
            raise ValueError(f"{name} must end in shape {tuple(self.shape)}, got {tuple(X.shape)}")

    def ratio(self, X: Tensor, Y: Tensor) -> Tensor:
        """||grad f(X) - grad f(Y)||_* / ||X - Y|| (batched)."""
        g = self.geometry
        return g.dual_norm(self.grad(X) - self.grad(Y)) / g.norm(X - Y)

    def L_lower(self, generator: torch.Generator, restarts: int = 32, iters: int = 30,
                h: float = 1e-3) -> float:
        """Numerical lower estimate of the best A2 constant (a ratio attained by a pair).

        Random search + local refinement, batched over ``restarts``: from base points
        X (x_0, X*-like 0, random) and random directions D, alternate
        W = -lmo(H D), D = -lmo(H W) with H the Hessian at X applied by central
        differences of grad (exact for quadratics). This ascent is monotone for a
        fixed symmetric H, since ||H D'||_* >= <W, H D'> = <H W, D'> = ||H W||_* >=
        ||H D||_*/||D||. Returns max over restarts of the *actual* finite ratio at
        the pair (X + s D, X - s D), s = h * scale, together with plain random pairs.
        """
        g = self.geometry
        m, n = self.shape
        x0 = self.x0().to(self.dtype)
        scale = float(max(x0.abs().max(), 1.0))
        base = torch.randn((restarts, m, n), generator=generator, dtype=self.dtype) * scale
        base[0] = x0
        if restarts > 1:
            base[1] = 0.0
        D = torch.randn((restarts, m, n), generator=generator, dtype=self.dtype)
        s = h * scale

        def hess(V):
            return (self.grad(base + s * V) - self.grad(base - s * V)) / (2 * s)

        for _ in range(iters):
            W = -g.lmo(hess(D))
            D = -g.lmo(hess(W))
            D = torch.where(torch.isfinite(D), D, torch.zeros_like(D))
        nrm = g.norm(D)
        ok = nrm > 0
        best = self.ratio(base[ok] + s * D[ok], base[ok] - s * D[ok]).max() if ok.any() else torch.tensor(0.0)
        Xr = torch.randn((restarts, m, n), generator=generator, dtype=self.dtype) * scale
        Yr = torch.randn((restarts, m, n), generator=generator, dtype=self.dtype) * scale
        best = torch.maximum(best, self.ratio(Xr, Yr).max())
        return float(best)

    def describe(self) -> dict:
        c = self.certificate()
        return {"problem": self.name, "shape": list(self.shape), "geometry": self.geometry.name,
                "L": c.L, "L_exact": c.exact, "rho": self.rho, "f_star": self.f_star,
                "f_star_exact": self.f_star_exact, "Delta_0": self.delta0()}


def check_positive(x: float, name: str) -> None:
    if not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {x!r}")

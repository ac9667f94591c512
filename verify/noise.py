"""Zero-mean gradient-noise models with exact A3 level: E ||xi||_2^2 = sigma^2 (docs/design.md §5).

A draw ``noise.sample(shape, generator, direction=None)`` returns xi of ``shape``
(leading dims: seeds; the Euclidean norm is over the last two dims, d = m n entries).
Every draw takes an explicit torch.Generator. ``direction`` is the current LMO
direction (predictable: it depends only on the past), used by the aligned model.

* Gaussian(sigma):          xi = sigma / sqrt(d) z,  z ~ N(0, I)
* Anisotropic(sigma, w):    xi = sigma w / ||w||_2 (.) z  (per-entry scales w)
* StudentT(sigma, df):      xi = sigma / sqrt(d) sqrt((df-2)/df) T, T_ij iid t_df
                            (Var t_df = df/(df-2); df an integer >= 3, chi^2 drawn as a sum
                            of df squared normals)
* Aligned(sigma):           xi = eps sigma D / ||D||_2 with eps = +-1 (fair coin) and D the
                            current LMO direction: ||xi||_2 = sigma on every draw, E[xi | past]
                            = 0, and all the variance lies along D, so ||xi||_* is as large as
                            A4 allows for the spectral LMO (||D||_nuc / ||D||_F = rho).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def _check_sigma(sigma: float) -> None:
    if not isinstance(sigma, (int, float)) or not math.isfinite(sigma) or sigma < 0:
        raise ValueError(f"sigma must be a finite number >= 0, got {sigma!r}")


def _d(shape) -> int:
    return int(shape[-1] * shape[-2])


@dataclass(frozen=True)
class Gaussian:
    sigma: float
    name: str = "gaussian"

    def __post_init__(self):
        _check_sigma(self.sigma)

    def sample(self, shape, generator, direction=None, dtype=torch.float64):
        z = torch.randn(tuple(shape), generator=generator, dtype=dtype)
        return z * (self.sigma / math.sqrt(_d(shape)))

    def scaled(self, c: float):
        return Gaussian(c * self.sigma)


@dataclass(frozen=True)
class Anisotropic:
    """Per-entry standard deviations proportional to ``weights`` (shape (m, n))."""

    sigma: float
    weights: torch.Tensor
    name: str = "anisotropic"

    def __post_init__(self):
        _check_sigma(self.sigma)
        w = torch.as_tensor(self.weights, dtype=torch.float64)
        if w.ndim != 2 or (w < 0).any() or float(w.norm()) == 0:
            raise ValueError("weights must be a nonnegative (m, n) tensor, not all zero")
        object.__setattr__(self, "weights", w / w.norm())

    def sample(self, shape, generator, direction=None, dtype=torch.float64):
        if tuple(shape[-2:]) != tuple(self.weights.shape):
            raise ValueError(f"shape must end in {tuple(self.weights.shape)}, got {tuple(shape)}")
        z = torch.randn(tuple(shape), generator=generator, dtype=dtype)
        return z * (self.sigma * self.weights.to(dtype))

    def scaled(self, c: float):
        return Anisotropic(c * self.sigma, self.weights)


@dataclass(frozen=True)
class StudentT:
    sigma: float
    df: int = 3
    name: str = "student_t"

    def __post_init__(self):
        _check_sigma(self.sigma)
        if not isinstance(self.df, int) or self.df < 3:
            raise ValueError(f"df must be an integer >= 3 (finite variance), got {self.df!r}")

    def sample(self, shape, generator, direction=None, dtype=torch.float64):
        shape = tuple(shape)
        z = torch.randn(shape, generator=generator, dtype=dtype)
        chi2 = (torch.randn((self.df,) + shape, generator=generator, dtype=dtype) ** 2).sum(0)
        t = z / torch.sqrt(chi2 / self.df)
        return t * (self.sigma / math.sqrt(_d(shape)) * math.sqrt((self.df - 2) / self.df))

    def scaled(self, c: float):
        return StudentT(c * self.sigma, self.df)


@dataclass(frozen=True)
class Aligned:
    sigma: float
    name: str = "aligned"
    needs_direction: bool = True

    def __post_init__(self):
        _check_sigma(self.sigma)

    def sample(self, shape, generator, direction=None, dtype=torch.float64):
        shape = tuple(shape)
        if direction is None:
            raise ValueError("direction: the aligned noise needs the current LMO direction")
        lead = shape[:-2]
        eps = torch.randint(0, 2, lead + (1, 1), generator=generator).to(dtype) * 2 - 1
        D = direction.to(dtype).expand(shape)
        nrm = torch.linalg.vector_norm(D, dim=(-2, -1), keepdim=True)
        # a zero direction (e.g. sign(0)) falls back to the first coordinate axis
        e1 = torch.zeros(shape[-2:], dtype=dtype)
        e1[0, 0] = 1.0
        unit = torch.where(nrm > 0, D / nrm.clamp_min(torch.finfo(dtype).tiny), e1)
        return eps * self.sigma * unit

    def scaled(self, c: float):
        return Aligned(c * self.sigma)


NOISES = {"gaussian": Gaussian, "anisotropic": Anisotropic, "student_t": StudentT, "aligned": Aligned}


def make_noise(name: str, sigma: float, shape=None, generator=None, **kw):
    """Build a noise model by name; ``anisotropic`` without weights gets log-spaced ones."""
    if name not in NOISES:
        raise ValueError(f"name: unknown noise {name!r}; known: {sorted(NOISES)}")
    if name == "anisotropic" and "weights" not in kw:
        if shape is None:
            raise ValueError("shape: anisotropic noise needs the parameter shape for default weights")
        m, n = shape
        kw["weights"] = torch.logspace(0, -1, m * n, dtype=torch.float64).reshape(m, n)
    return NOISES[name](sigma, **kw)

"""Geometries: a norm ||.||, its dual ||.||_*, the LMO and the A4 constant rho.

    lmo(g) in argmin_{||d|| <= 1} <g, d>,   so <g, lmo(g)> = -||g||_*   (points downhill)
    rho(shape) = max_v ||v||_* / ||v||_2    (A4: ||v||_* <= rho ||v||_2, attained)

Matrix geometries act on the last two dims (shape (..., m, n) = (fan_out, fan_in));
entrywise ones (Sign, L2) on the last ``event_ndim`` dims (capped at x.ndim). Leading
dims are a batch and never mix. Every LMO maps zero to zero (no NaN).

| geometry     | ||x||                     | ||g||_*                   | lmo(g)                           | rho(m, n)           |
|--------------|---------------------------|---------------------------|----------------------------------|---------------------|
| Spectral     | s_max                     | sum s_i                   | -U V^T (svd) / -NS(g) (ns)       | sqrt(min(m, n))     |
| Frobenius    | ||x||_F                   | ||g||_F                   | -g / ||g||_F                     | 1                   |
| Sign         | max |x|                   | sum |g|                   | -sign(g)                         | sqrt(d)             |
| L2           | ||x||_2                   | ||g||_2                   | -g / ||g||_2                     | 1                   |
| RMSToRMS     | sqrt(n/m) s_max           | sqrt(m/n) sum s_i         | -sqrt(m/n) U V^T                 | sqrt(m/n min(m, n)) |
| ColNorm      | c max_j ||x_:j||          | (1/c) sum_j ||g_:j||      | -(1/c) g_:j / ||g_:j||           | sqrt(n) / c         |
| RowNorm      | c max_i ||x_i:||          | (1/c) sum_i ||g_i:||      | -(1/c) g_i: / ||g_i:||           | sqrt(m) / c         |

(d = number of entries reduced over; c as in lmo.norms.) rho is attained by any v with
all singular values equal (spectral family), all |v_ij| equal (Sign), all column /
row norms equal (ColNorm / RowNorm): see ``rho_witness``.

Spectral(method="ns") is an inexact LMO: norm and dual stay exact, lmo(g) = -NS(g),
whose singular values lie in a band around 1 (lmo.polar_factor, ns_inexactness), so
<g, lmo(g)> only approximates -||g||_* and ||lmo(g)||_2 may exceed 1 slightly.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import Tensor

from lmo import norms as N
from lmo.base import check_int
from lmo import polar_factor
from lmo.ns_dtype import check_ns_dtype
from lmo.polar_factor import resolve_coefficients

__all__ = ["Geometry", "Spectral", "Frobenius", "Sign", "L2", "RMSToRMS", "ColNorm", "RowNorm",
           "get_geometry", "GEOMETRIES"]

_TINY = 1e-30


def _safe_div(x: Tensor, nrm: Tensor) -> Tensor:
    """x / nrm with 0 / 0 = 0 (nrm broadcast, already keepdim)."""
    return torch.where(nrm > 0, x / nrm.clamp(min=_TINY), torch.zeros_like(x))


def _shape2(shape: Sequence[int]) -> tuple[int, int]:
    shape = tuple(shape)
    if len(shape) < 2:
        raise ValueError(f"shape must have at least 2 dims (..., m, n), got {shape}")
    return shape[-2], shape[-1]


class Geometry:
    """Base: subclasses set ``name``, the norm pair ``_norm`` / ``_dual`` (lmo.norms
    functions f(x, *self._norm_args())) and implement lmo, rho.

    >>> g = torch.tensor([[3.0, -4.0]])
    >>> geo = Sign()
    >>> geo.norm(geo.lmo(g)), geo.inner(g, geo.lmo(g)), -geo.dual_norm(g)      # <g, lmo(g)> = -||g||_*
    (tensor(1.), tensor(-7.), tensor(-7.))
    """
    name = "geometry"
    event_ndim = 2
    _norm = _dual = None

    def _norm_args(self) -> tuple:
        """The options the norm pair takes after x (event_ndim, normalized, ...)."""
        return ()

    def norm(self, x: Tensor) -> Tensor:
        """||x||."""
        return self._pair()[0](x, *self._norm_args())

    def dual_norm(self, g: Tensor) -> Tensor:
        """||g||_*."""
        return self._pair()[1](g, *self._norm_args())

    def _pair(self) -> tuple:
        if self._norm is None or self._dual is None:
            raise NotImplementedError(f"{type(self).__name__}: set _norm and _dual (lmo.norms functions) "
                                      "or override norm and dual_norm")
        return self._norm, self._dual

    def inner(self, g: Tensor, d: Tensor) -> Tensor:
        """<g, d> over the geometry's event dims."""
        return N.inner(g, d, self.event_ndim)

    def rho_witness(self, shape: Sequence[int], dtype=torch.float64) -> Tensor:
        """A v of the given shape with ||v||_* = rho(shape) ||v||_2 (the equality case)."""
        return torch.ones(tuple(shape), dtype=dtype)

    def lmo_many(self, gs: Sequence[Tensor]) -> list:
        """``[self.lmo(g) for g in gs]``; matrix geometries batch same-shape matrices."""
        return [self.lmo(g) for g in gs]

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Spectral(Geometry):
    """Spectral norm, nuclear dual; lmo(g) = -U V^T exactly (method="svd", rank-deficient
    g: -U_r V_r^T on its numerical range, see lmo.polar_factor.polar) or approximately
    by Newton-Schulz (method="ns").

    >>> geo = Spectral()
    >>> geo.lmo(torch.diag(torch.tensor([2.0, 3.0]))), geo.norm(torch.diag(torch.tensor([2.0, 3.0])))
    (tensor([[-1., -0.],
            [-0., -1.]]), tensor(3.))
    """
    name = "spectral"
    _norm, _dual = staticmethod(N.spectral), staticmethod(N.nuclear)

    def __init__(self, method: str = "svd", ns_steps: int = 5, ns_coefficients="keller",
                 eps: float = 1e-7, ns_dtype: torch.dtype | str | None = None,
                 ns_method: str = "standard"):
        if method not in ("svd", "ns"):
            raise ValueError(f"method must be 'svd' or 'ns', got {method!r}")
        if ns_method not in ("standard", "gram"):
            raise ValueError(f"ns_method must be 'standard' or 'gram', got {ns_method!r}")
        resolve_coefficients(ns_coefficients, ns_steps)  # validate now, fail loudly
        self.method, self.ns_steps, self.ns_coefficients = method, ns_steps, ns_coefficients
        self.eps, self.ns_dtype, self.ns_method = eps, check_ns_dtype(ns_dtype), ns_method

    def _ns_kwargs(self) -> dict:
        return dict(exact=self.method == "svd", steps=self.ns_steps, coefficients=self.ns_coefficients,
                    eps=self.eps, dtype=self.ns_dtype, method=self.ns_method)

    def lmo(self, g: Tensor) -> Tensor:
        N.check_matrix(g, "g")
        return -polar_factor.orthogonalize_many([g], **self._ns_kwargs())[0]

    def lmo_many(self, gs: Sequence[Tensor]) -> list:
        """``[self.lmo(g) for g in gs]``: -lmo.polar_factor.orthogonalize_many(gs) (NS batched over
        same-shape matrices), the Muon family's one route to Newton-Schulz."""
        for g in gs:
            N.check_matrix(g, "g")
        return [-o for o in polar_factor.orthogonalize_many(list(gs), **self._ns_kwargs())]

    def rho(self, shape) -> float:
        m, n = _shape2(shape)
        return math.sqrt(min(m, n))

    def rho_witness(self, shape, dtype=torch.float64) -> Tensor:
        m, n = _shape2(shape)
        return torch.eye(m, n, dtype=dtype).expand(tuple(shape)).clone()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(method={self.method!r})"


class RMSToRMS(Spectral):
    """RMS->RMS operator norm sqrt(n/m) ||x||_2 (m = fan_out, n = fan_in); dual
    sqrt(m/n) ||g||_nuc; lmo(g) = -sqrt(m/n) U V^T (same options as Spectral).

    >>> RMSToRMS().norm(torch.ones(4, 1)), RMSToRMS().dual_norm(torch.ones(4, 1))
    (tensor(1.0000), tensor(4.0000))
    """
    name = "rms_to_rms"
    _norm, _dual = staticmethod(N.rms_to_rms), staticmethod(N.rms_to_rms_dual)

    def lmo(self, g: Tensor) -> Tensor:
        d = super().lmo(g)
        m, n = g.shape[-2:]
        return d * math.sqrt(m / n)

    def lmo_many(self, gs: Sequence[Tensor]) -> list:
        return [d * math.sqrt(g.shape[-2] / g.shape[-1]) for d, g in zip(super().lmo_many(gs), gs)]

    def rho(self, shape) -> float:
        m, n = _shape2(shape)
        return math.sqrt(m / n * min(m, n))


class Frobenius(Geometry):
    """Frobenius norm on the last two dims (self-dual); lmo(g) = -g / ||g||_F.

    >>> Frobenius().lmo(torch.tensor([[3.0, 4.0]]))
    tensor([[-0.6000, -0.8000]])
    """
    name = "frobenius"
    _norm = _dual = staticmethod(N.frobenius)

    def lmo(self, g: Tensor) -> Tensor:
        N.check_matrix(g, "g")
        nrm = torch.linalg.vector_norm(g, dim=(-2, -1), keepdim=True)
        return -_safe_div(g, nrm)

    def rho(self, shape) -> float:
        _shape2(shape)
        return 1.0


class _Entrywise(Geometry):
    """What Sign and L2 share: a norm and dual of lmo.norms over the last event_ndim dims."""

    def __init__(self, event_ndim: int = 2):
        self.event_ndim = check_int(event_ndim, "event_ndim", 1)

    def _norm_args(self) -> tuple:
        return (self.event_ndim,)

    def _d(self, shape) -> int:
        shape = tuple(shape)
        k = min(self.event_ndim, len(shape))
        return math.prod(shape[len(shape) - k:])

    def __repr__(self) -> str:
        return f"{type(self).__name__}(event_ndim={self.event_ndim})"


class Sign(_Entrywise):
    """l_inf norm, l_1 dual over the last event_ndim dims; lmo(g) = -sign(g).

    >>> geo = Sign(event_ndim=1)
    >>> geo.lmo(torch.tensor([2.0, -3.0, 0.0])), geo.dual_norm(torch.tensor([2.0, -3.0]))
    (tensor([-1.,  1., -0.]), tensor(5.))
    """
    name = "sign"
    _norm, _dual = staticmethod(N.linf), staticmethod(N.l1)

    def lmo(self, g: Tensor) -> Tensor:
        N._check_tensor(g, "g")
        return -torch.sign(g)

    def rho(self, shape) -> float:
        return math.sqrt(self._d(shape))


class L2(_Entrywise):
    """Euclidean norm over the last event_ndim dims (self-dual); lmo(g) = -g / ||g||_2.
    Equals Frobenius on matrices, and also accepts vectors.

    >>> L2(event_ndim=1).lmo(torch.tensor([3.0, 4.0]))
    tensor([-0.6000, -0.8000])
    """
    name = "l2"
    _norm = _dual = staticmethod(N.l2)

    def lmo(self, g: Tensor) -> Tensor:
        N._check_tensor(g, "g")
        dims = N.event_dims(g, self.event_ndim)
        return -_safe_div(g, torch.linalg.vector_norm(g, dim=dims, keepdim=True))

    def rho(self, shape) -> float:
        return 1.0


class _LineNorm(Geometry):
    """What ColNorm and RowNorm share: c max over lines of ||line||_2, a line being a column
    (``dim`` = -2, reduced over the rows) or a row (``dim`` = -1); dual (1/c) sum over lines;
    lmo(g) = -(1/c) g_line / ||g_line||_2 per line; rho = sqrt(number of lines) / c."""
    dim = -2
    _scale = None   # subclasses: lmo.norms' c(shape, normalized)

    def __init__(self, normalized: bool):
        self.normalized = bool(normalized)

    def _norm_args(self) -> tuple:
        return (self.normalized,)

    def lmo(self, g: Tensor) -> Tensor:
        N.check_matrix(g, "g")
        c = self._scale(g.shape, self.normalized)
        return -_safe_div(g, torch.linalg.vector_norm(g, dim=self.dim, keepdim=True)) / c

    def rho(self, shape) -> float:
        m, n = _shape2(shape)
        lines = n if self.dim == -2 else m
        return math.sqrt(lines) / self._scale((m, n), self.normalized)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(normalized={self.normalized})"


class ColNorm(_LineNorm):
    """Scion's ColNorm: c max_j ||x_{:,j}||_2 with c = 1/sqrt(m) (x n if normalized),
    i.e. every column has RMS <= 1; lmo sets every column to RMS 1/(c sqrt(m)) along -g.

    >>> ColNorm().lmo(torch.tensor([[3.0, 0.0], [4.0, 1.0]]))
    tensor([[-0.8485, -0.0000],
            [-1.1314, -1.4142]])
    """
    name = "colnorm"
    dim = -2
    _norm, _dual, _scale = (staticmethod(N.colnorm), staticmethod(N.colnorm_dual),
                            staticmethod(N.colnorm_scale))

    def __init__(self, normalized: bool = False):
        super().__init__(normalized)


class RowNorm(_LineNorm):
    """Scion's RowNorm: c max_i ||x_{i,:}||_2 with c = sqrt(n) if normalized (Scion's
    default) else 1; lmo sets every row to l_2 norm 1/c along -g.

    >>> RowNorm(normalized=False).lmo(torch.tensor([[3.0, 4.0], [0.0, 2.0]]))
    tensor([[-0.6000, -0.8000],
            [-0.0000, -1.0000]])
    """
    name = "rownorm"
    dim = -1
    _norm, _dual, _scale = (staticmethod(N.rownorm), staticmethod(N.rownorm_dual),
                            staticmethod(N.rownorm_scale))

    def __init__(self, normalized: bool = True):
        super().__init__(normalized)


GEOMETRIES = {"spectral": Spectral, "frobenius": Frobenius, "sign": Sign, "l2": L2,
              "rms_to_rms": RMSToRMS, "colnorm": ColNorm, "rownorm": RowNorm}


def get_geometry(name: str, **kw) -> Geometry:
    """Build a geometry by name (one of GEOMETRIES), passing ``kw`` to its constructor.

    >>> get_geometry("sign", event_ndim=1), get_geometry("spectral").name
    (Sign(event_ndim=1), 'spectral')
    """
    if name not in GEOMETRIES:
        raise ValueError(f"name: unknown geometry {name!r}; known: {sorted(GEOMETRIES)}")
    return GEOMETRIES[name](**kw)

"""Norms and their duals on the last two dims (matrix norms) or the last ``event_ndim``
dims (entrywise norms). Leading dims are a batch: every function returns one value per
leading index and never mixes them. Computation is in at least float32; the result has
the input's dtype.

For W of shape (m, n) = (fan_out, fan_in), columns W_{:,j}, rows W_{i,:}, singular
values s_i:

| norm                          | formula                                  | dual                               |
|-------------------------------|------------------------------------------|------------------------------------|
| spectral                      | max_i s_i                                | nuclear: sum_i s_i                 |
| Frobenius / l_2               | sqrt(sum W_ij^2)                         | itself                             |
| l_inf (entrywise)             | max |W_ij|                               | l_1: sum |W_ij|                    |
| RMS->RMS                      | sqrt(n/m) max_i s_i                      | sqrt(m/n) sum_i s_i                |
| ColNorm (Scion), scale c      | c max_j ||W_{:,j}||_2                    | (1/c) sum_j ||W_{:,j}||_2          |
| RowNorm (Scion), scale c      | c max_i ||W_{i,:}||_2                    | (1/c) sum_i ||W_{i,:}||_2          |

Scion's ColNorm (Pethick et al. 2025) bounds every column's RMS: c = 1/sqrt(m)
(times n when ``normalized``); RowNorm bounds every row's l_2 norm: c = 1 (times
sqrt(n) when ``normalized``, Scion's default for RowNorm).
"""
from __future__ import annotations

import math

import torch
from torch import Tensor

from lmo.base import check_int

__all__ = ["check_matrix", "inner", "spectral", "nuclear", "frobenius", "linf", "l1", "l2",
           "rms_to_rms", "rms_to_rms_dual", "colnorm_scale", "rownorm_scale",
           "colnorm", "colnorm_dual", "rownorm", "rownorm_dual", "event_dims"]


def check_matrix(x: Tensor, name: str = "x") -> None:
    """Raise ValueError naming ``name`` unless x is a float tensor with ndim >= 2.

    >>> check_matrix(torch.zeros(2, 2))
    >>> check_matrix(torch.zeros(3))
    Traceback (most recent call last):
    ...
    ValueError: x must be a matrix (..., m, n) with ndim >= 2, got shape (3,)
    """
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise ValueError(f"{name} must be a matrix (..., m, n) with ndim >= 2, got shape "
                         f"{tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")


def _check_tensor(x: Tensor, name: str) -> None:
    if not isinstance(x, Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be a floating-point tensor, got {x.dtype}")


def event_dims(x: Tensor, event_ndim: int) -> tuple[int, ...]:
    """The last min(event_ndim, x.ndim) dims, as negative indices.

    >>> event_dims(torch.zeros(3, 4, 5), 2), event_dims(torch.zeros(5), 2)
    ((-2, -1), (-1,))
    """
    check_int(event_ndim, "event_ndim", 1)
    k = min(event_ndim, x.ndim)
    return tuple(range(-k, 0))


def _up(x: Tensor) -> Tensor:
    return x.to(torch.promote_types(x.dtype, torch.float32))


def inner(g: Tensor, d: Tensor, event_ndim: int = 2) -> Tensor:
    """<g, d> = sum over the last event_ndim dims of g * d (one value per batch index).

    >>> inner(torch.diag(torch.tensor([3.0, 4.0])), torch.eye(2))
    tensor(7.)
    """
    _check_tensor(g, "g")
    _check_tensor(d, "d")
    if g.shape != d.shape:
        raise ValueError(f"g and d must have the same shape, got {tuple(g.shape)} and {tuple(d.shape)}")
    dims = event_dims(g, event_ndim)
    return (_up(g) * _up(d)).sum(dim=dims).to(g.dtype)


def spectral(x: Tensor) -> Tensor:
    """||x||_2 = max_i s_i(x) per matrix.

    >>> spectral(torch.diag(torch.tensor([3.0, 4.0])))
    tensor(4.)
    """
    check_matrix(x)
    return torch.linalg.matrix_norm(_up(x), ord=2).to(x.dtype)


def nuclear(g: Tensor) -> Tensor:
    """||g||_nuc = sum_i s_i(g) per matrix (dual of spectral).

    >>> nuclear(torch.diag(torch.tensor([3.0, 4.0])))
    tensor(7.)
    """
    check_matrix(g, "g")
    return torch.linalg.matrix_norm(_up(g), ord="nuc").to(g.dtype)


def frobenius(x: Tensor) -> Tensor:
    """||x||_F = sqrt(sum_ij x_ij^2) per matrix (self-dual).

    >>> frobenius(torch.diag(torch.tensor([3.0, 4.0])))
    tensor(5.)
    """
    check_matrix(x)
    return torch.linalg.vector_norm(_up(x), dim=(-2, -1)).to(x.dtype)


def l2(x: Tensor, event_ndim: int = 2) -> Tensor:
    """||x||_2 = sqrt(sum x^2) over the last event_ndim dims (self-dual).

    >>> l2(torch.tensor([3.0, -4.0]))
    tensor(5.)
    """
    _check_tensor(x, "x")
    return torch.linalg.vector_norm(_up(x), dim=event_dims(x, event_ndim)).to(x.dtype)


def linf(x: Tensor, event_ndim: int = 2) -> Tensor:
    """||x||_inf = max |x| over the last event_ndim dims.

    >>> linf(torch.tensor([3.0, -4.0]))
    tensor(4.)
    """
    _check_tensor(x, "x")
    return torch.linalg.vector_norm(_up(x), ord=math.inf, dim=event_dims(x, event_ndim)).to(x.dtype)


def l1(g: Tensor, event_ndim: int = 2) -> Tensor:
    """||g||_1 = sum |g| over the last event_ndim dims (dual of l_inf).

    >>> l1(torch.tensor([3.0, -4.0]))
    tensor(7.)
    """
    _check_tensor(g, "g")
    return torch.linalg.vector_norm(_up(g), ord=1, dim=event_dims(g, event_ndim)).to(g.dtype)


def rms_to_rms(x: Tensor) -> Tensor:
    """||x||_{RMS->RMS} = sqrt(n/m) ||x||_2 for x of shape (..., m, n) = (fan_out, fan_in).

    >>> rms_to_rms(torch.ones(4, 1))             # sqrt(1/4) * ||x||_2 = 0.5 * 2
    tensor(1.0000)
    """
    check_matrix(x)
    m, n = x.shape[-2:]
    return (math.sqrt(n / m) * torch.linalg.matrix_norm(_up(x), ord=2)).to(x.dtype)


def rms_to_rms_dual(g: Tensor) -> Tensor:
    """Dual of RMS->RMS: sqrt(m/n) ||g||_nuc.

    >>> rms_to_rms_dual(torch.ones(4, 1))        # sqrt(4/1) * ||g||_nuc = 2 * 2
    tensor(4.0000)
    """
    check_matrix(g, "g")
    m, n = g.shape[-2:]
    return (math.sqrt(m / n) * torch.linalg.matrix_norm(_up(g), ord="nuc")).to(g.dtype)


def colnorm_scale(shape, normalized: bool = False) -> float:
    """c of ColNorm for shape (..., m, n): 1/sqrt(m), times n if normalized.

    >>> colnorm_scale((4, 8)), colnorm_scale((4, 8), normalized=True)
    (0.5, 4.0)
    """
    m, n = shape[-2:]
    return (n if normalized else 1) / math.sqrt(m)


def rownorm_scale(shape, normalized: bool = True) -> float:
    """c of RowNorm for shape (..., m, n): 1, times sqrt(n) if normalized.

    >>> rownorm_scale((4, 9)), rownorm_scale((4, 9), normalized=False)
    (3.0, 1.0)
    """
    return math.sqrt(shape[-1]) if normalized else 1.0


def _max_line(x: Tensor, c: float, dim: int) -> Tensor:
    """c max over lines of ||line||_2, a line reducing over ``dim`` (-2: columns, -1: rows)."""
    return (c * torch.linalg.vector_norm(_up(x), dim=dim).amax(dim=-1)).to(x.dtype)


def _sum_lines(g: Tensor, c: float, dim: int) -> Tensor:
    """(1/c) sum over lines of ||line||_2, a line reducing over ``dim`` (-2: columns, -1: rows)."""
    return (torch.linalg.vector_norm(_up(g), dim=dim).sum(dim=-1) / c).to(g.dtype)


def colnorm(x: Tensor, normalized: bool = False) -> Tensor:
    """c max_j ||x_{:,j}||_2 (c = colnorm_scale).

    >>> colnorm(torch.tensor([[3.0, 0.0], [4.0, 1.0]]))          # (1 / sqrt(2)) * ||(3, 4)||_2
    tensor(3.5355)
    """
    check_matrix(x)
    return _max_line(x, colnorm_scale(x.shape, normalized), -2)


def colnorm_dual(g: Tensor, normalized: bool = False) -> Tensor:
    """(1/c) sum_j ||g_{:,j}||_2.

    >>> colnorm_dual(torch.tensor([[3.0, 0.0], [4.0, 1.0]]))     # sqrt(2) * (5 + 1)
    tensor(8.4853)
    """
    check_matrix(g, "g")
    return _sum_lines(g, colnorm_scale(g.shape, normalized), -2)


def rownorm(x: Tensor, normalized: bool = True) -> Tensor:
    """c max_i ||x_{i,:}||_2 (c = rownorm_scale).

    >>> rownorm(torch.tensor([[3.0, 4.0], [0.0, 1.0]]), normalized=False)
    tensor(5.)
    """
    check_matrix(x)
    return _max_line(x, rownorm_scale(x.shape, normalized), -1)


def rownorm_dual(g: Tensor, normalized: bool = True) -> Tensor:
    """(1/c) sum_i ||g_{i,:}||_2.

    >>> rownorm_dual(torch.tensor([[3.0, 4.0], [0.0, 1.0]]), normalized=False)
    tensor(6.)
    """
    check_matrix(g, "g")
    return _sum_lines(g, rownorm_scale(g.shape, normalized), -1)

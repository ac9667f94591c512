"""Muon under data parallelism: Newton-Schulz once per matrix, sharded over the dp group.

After the dp averaging every replica of a stage holds the same gradient, hence the same
momentum and the same Nesterov blend u_t per matrix (docs/design.md §4):

    d_t = -eta_t s(shape) NS(u_t) - eta_t lambda x_t.

Computing NS(u_t) on every replica repeats the same work D times. Here matrix j is
orthogonalised only by replica ``owner(j)`` (a greedy balance of the NS cost
min(m, n) m n over the D replicas, the same on every rank), and the results are
all-gathered, as distributed Muon implementations do. Everything else (momentum, scale,
decay, the AdamW group) runs on every replica as before, so the state stays replicated and
a stage checkpoint is the same whichever D wrote it.

``ShardedSpectral`` is the ``lmo.geometry.Spectral`` geometry (method "ns") whose
``lmo_many`` does the sharding; ``sharded_muon`` is ``lmo.muon.muon`` with it;
``base_optimizer`` is ``gpu_runs.recipe.base_optimizer`` for ``--optimizer muon`` with it.
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.distributed as dist

from lmo.geometry import Spectral
from lmo.muon_family import muon
from lmo.muon_family import muon_ns_dtype


def owners(shapes: Sequence[tuple], dp: int) -> list[int]:
    """owner(j) for each matrix: largest NS cost first, each to the least loaded replica
    (ties: the lower replica; cost min(m, n) m n per matrix of a (..., m, n) batch)."""
    cost = []
    for sh in shapes:
        m, n = sh[-2], sh[-1]
        batch = 1
        for b in sh[:-2]:
            batch *= b
        cost.append(batch * min(m, n) * m * n)
    load = [0] * dp
    out = [0] * len(shapes)
    for j in sorted(range(len(shapes)), key=lambda j: (-cost[j], j)):
        r = min(range(dp), key=lambda r: (load[r], r))
        out[j] = r
        load[r] += cost[j]
    return out


class ShardedSpectral(Spectral):
    """Spectral(method="ns") whose batched LMO runs NS on this rank's share and all-gathers."""

    def __init__(self, group, dp: int, **kw):
        super().__init__(method="ns", **kw)
        self.group, self.dp = group, dp

    def lmo_many(self, gs: Sequence[torch.Tensor]) -> list:
        gs = list(gs)
        if self.dp == 1 or not gs:
            return super().lmo_many(gs)
        me = dist.get_rank(self.group)
        own = owners([tuple(g.shape) for g in gs], self.dp)
        mine = [j for j in range(len(gs)) if own[j] == me]
        res = dict(zip(mine, super().lmo_many([gs[j] for j in mine])))
        dtype, device = gs[0].dtype, gs[0].device
        if any(g.dtype != dtype for g in gs):
            raise ValueError("ShardedSpectral.lmo_many: all matrices must share one dtype, got "
                             f"{sorted({str(g.dtype) for g in gs})}")
        sizes = [sum(gs[j].numel() for j in range(len(gs)) if own[j] == r) for r in range(self.dp)]
        width = max(sizes)
        flat = torch.zeros(width, dtype=dtype, device=device)
        if mine:
            flat[:sizes[me]] = torch.cat([res[j].reshape(-1) for j in mine])
        parts = [torch.empty(width, dtype=dtype, device=device) for _ in range(self.dp)]
        dist.all_gather(parts, flat, group=self.group)
        out, offs = [None] * len(gs), [0] * self.dp
        for j, g in enumerate(gs):
            r, n = own[j], g.numel()
            out[j] = parts[r][offs[r]:offs[r] + n].view_as(g)
            offs[r] += n
        return out


def sharded_muon(lr, group, dp: int, *, ns_steps: int = 5, ns_coefficients="keller", eps: float = 1e-7,
                 ns_dtype="auto", ns_method: str = "standard", **muon_kw):
    """``lmo.muon`` (same keywords and defaults, NS only: no ``exact``) with the Newton-Schulz
    step sharded over ``group`` of ``dp`` ranks (its geometry is a :class:`ShardedSpectral`)."""
    if muon_kw.get("exact"):
        raise ValueError("exact: the sharded Muon orthogonalizes by Newton-Schulz only")
    geometry = ShardedSpectral(group, dp, ns_steps=ns_steps, ns_coefficients=ns_coefficients, eps=eps,
                               ns_dtype=muon_ns_dtype(ns_dtype), ns_method=ns_method)
    opt = muon(lr, ns_steps=ns_steps, ns_coefficients=ns_coefficients, eps=eps, ns_dtype=ns_dtype,
               ns_method=ns_method, geometry=geometry, **muon_kw)
    opt.hyper.update(ns_dtype=str(geometry.ns_dtype), sharded_dp=dp)
    return opt


#: lmo.muon's keywords that shape its Newton-Schulz (they become the sharded geometry's)
NS_KEYWORDS = ("ns_steps", "ns_coefficients", "eps", "ns_method")


def base_optimizer(tc, params: dict, group, dp: int):
    """``gpu_runs.recipe.base_optimizer(tc, params)`` for ``tc.optimizer == "muon"`` with Muon's
    geometry replaced by a :class:`ShardedSpectral` of the same Newton-Schulz options: the
    same groups, schedule and update, Newton-Schulz split over ``group``."""
    from dataclasses import replace

    from gpu_runs.recipe import base_optimizer as recipe_optimizer
    from gpu_runs.recipe import resolve_ns_dtype

    if tc.optimizer != "muon":
        raise ValueError(f"sharded NS is for --optimizer muon, got {tc.optimizer!r}")
    if tc.opt_kwargs.get("exact"):
        raise ValueError("exact: the sharded Muon orthogonalizes by Newton-Schulz only")
    dtype = tc.opt_kwargs.get("ns_dtype", resolve_ns_dtype(tc.ns_dtype, tc.device))
    geometry = ShardedSpectral(group, dp, ns_dtype=muon_ns_dtype(dtype),
                               **{k: tc.opt_kwargs[k] for k in NS_KEYWORDS if k in tc.opt_kwargs})
    return recipe_optimizer(replace(tc, opt_kwargs={**tc.opt_kwargs, "geometry": geometry}), params)[0]

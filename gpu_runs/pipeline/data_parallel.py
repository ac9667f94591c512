"""Data parallel x pipeline parallel: the 2-D layout of ``--dp D`` (docs/design.md §4).

N = D x P ranks form a (dp, pp) grid built by ``torch.distributed.device_mesh.init_device_mesh``
with dims ("dp", "pp"): global rank ``r = i * P + s`` is stage s of replica i. A replica's
stages talk point-to-point (activations, gradients, the tied weight) on the default group,
through ``rank_of(s) = i * P + s``; stage s's D replicas form its "dp" group; replica i's
P stages form its "pp" group, which carries the clipping all-reduce of squared norms.

The global batch B of step t is split row-wise into D disjoint shards of B / D rows
(replica i takes rows [i B/D, (i+1) B/D)), each split into M microbatches of B / (D M)
rows with loss weight 1/M. Before a stage's clipping norm and optimizer, its gradient is
averaged over its dp group,

    g_t^s = (1/D) sum_i g_t^{s,i},

which is the gradient of the mean loss over the whole batch (equal shard sizes), so every
replica holds the same g_t^s, takes the same step, and the schedules' delays (gpipe /
1f1b: none, 2bw: one step, pipedream: tau_s = P - 1 - s) are unchanged: the averaging sits
inside R(t), before the norm, DC-ASGD's correction and U(t). The logged training loss is
the dp mean of the replicas' losses (the loss of the global batch).
"""
from __future__ import annotations

import datetime
from dataclasses import dataclass

import torch
import torch.distributed as dist

#: bytes per all-reduce bucket of the gradient averaging
BUCKET_BYTES = 25 * 2 ** 20


@dataclass
class Layout:
    """Where this rank sits: stage ``stage`` of replica ``replica`` in a D x P grid, with
    its "dp" group (same stage, every replica) and "pp" group (same replica, every stage)."""

    dp: int
    pp: int
    rank: int
    dp_group: object = None
    pp_group: object = None
    mesh: object = None

    @property
    def stage(self) -> int:
        return self.rank % self.pp

    @property
    def replica(self) -> int:
        return self.rank // self.pp

    def rank_of(self, stage: int) -> int:
        """The global rank of ``stage`` in this rank's replica: i * P + s."""
        return self.replica * self.pp + stage


def grid_shape(world_size: int, dp: int) -> tuple[int, int]:
    """(D, P) with P = N / D; ValueError naming --dp when D does not divide N."""
    if dp < 1:
        raise ValueError(f"--dp must be >= 1, got {dp}")
    if world_size % dp:
        raise ValueError(f"--dp ({dp}) must divide the number of processes (WORLD_SIZE = {world_size}); "
                         f"the pipeline has P = WORLD_SIZE / dp stages")
    return dp, world_size // dp


def init_layout(dp: int, backend: str, timeout: float) -> Layout:
    """Start the default process group and the (dp, pp) device mesh; returns this rank's Layout.
    The mesh's subgroups are separate communicators, so the dp averaging, the clipping
    all-reduce (pp) and the stages' P2P (default group) never interleave on one."""
    import os

    from torch.distributed.device_mesh import init_device_mesh
    if backend == "nccl":  # one GPU per local rank, current before NCCL starts (multi-node: LOCAL_RANK)
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % max(1, torch.cuda.device_count()))
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout))
    N, rank = dist.get_world_size(), dist.get_rank()
    D, P = grid_shape(N, dp)
    device_type = "cuda" if backend == "nccl" else "cpu"
    mesh = init_device_mesh(device_type, (D, P), mesh_dim_names=("dp", "pp"))
    return Layout(D, P, rank, mesh["dp"].get_group(), mesh["pp"].get_group(), mesh)


def shard_rows(x: torch.Tensor, y: torch.Tensor, replica: int, dp: int):
    """Replica ``replica``'s rows of a global batch: [i B/D, (i+1) B/D)."""
    n = x.shape[0] // dp
    return x[replica * n:(replica + 1) * n], y[replica * n:(replica + 1) * n]


def buckets(names: list[str], grads: dict, bucket_bytes: int = BUCKET_BYTES) -> list[list[str]]:
    """Consecutive names grouped into buckets of at most ``bucket_bytes`` (a tensor larger
    than that is a bucket of its own), a new bucket at every change of dtype / device."""
    out, cur, size, key = [], [], 0, None
    for k in names:
        g = grads[k]
        nbytes = g.numel() * g.element_size()
        k_key = (g.dtype, g.device)
        if cur and (k_key != key or size + nbytes > bucket_bytes):
            out.append(cur)
            cur, size = [], 0
        cur.append(k)
        size += nbytes
        key = k_key
    if cur:
        out.append(cur)
    return out


def average_gradients(grads: dict, group, dp: int, bucket_bytes: int = BUCKET_BYTES) -> dict:
    """g = (1/D) sum_i g^i over ``group``, one flat all-reduce per bucket (all launched,
    then awaited); returns new tensors (the inputs are not modified)."""
    if dp == 1:
        return grads
    names = list(grads)
    flats, works = [], []
    for b in buckets(names, grads, bucket_bytes):
        flat = torch.cat([grads[k].detach().reshape(-1) for k in b])
        works.append(dist.all_reduce(flat, group=group, async_op=True))
        flats.append((b, flat))
    out = {}
    for w, (b, flat) in zip(works, flats):
        w.wait()
        flat.div_(dp)
        off = 0
        for k in b:
            n = grads[k].numel()
            out[k] = flat[off:off + n].view_as(grads[k])
            off += n
    return out


def dp_mean(value: float, group, dp: int, device="cpu") -> float:
    """(1/D) sum_i value_i over ``group`` (the training loss of the global batch)."""
    if dp == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, group=group)
    return float(t) / dp

"""The pieces of ``--dp`` on their own: the sharded Newton-Schulz of Muon equals
``lmo.muon.muon``'s unsharded update; the bucketed gradient averaging equals the mean of
the replicas' gradients; the NS work split and the buckets partition their inputs.
Collective checks fork D gloo ranks (single-threaded) from the test process."""
import multiprocessing as mp
import os
import tempfile

import pytest
import torch
from hypothesis import given, strategies as st

from gpu_runs.pipeline.data_parallel import buckets
from gpu_runs.pipeline.launch import free_port
from gpu_runs.pipeline.sharded_muon import owners

SHAPES = [(16, 8), (8, 16), (16, 8), (4, 4), (3, 12, 6), (32, 16), (5, 7)]


def _grads(seed):
    g = torch.Generator().manual_seed(seed)
    return {f"w{i}": torch.randn(sh, generator=g) for i, sh in enumerate(SHAPES)}


def _rank(rank, D, env, path, ns_dtype):
    torch.set_num_threads(1)
    os.environ.update(env)
    import torch.distributed as dist

    from gpu_runs.pipeline.data_parallel import average_gradients
    from gpu_runs.pipeline.sharded_muon import sharded_muon
    dist.init_process_group("gloo", rank=rank, world_size=D)
    group = dist.new_group()
    params = _grads(100)
    opt = sharded_muon(0.02, group, D, momentum=0.9, weight_decay=0.1, ns_dtype=ns_dtype)
    state = opt.init(params)
    ups = []
    for t in range(3):  # the same averaged gradient on every rank, as after the dp averaging
        d, state = opt.update(_grads(t), state, params)
        ups.append(d)
    # the averaging: rank r holds (r + 1) * g; the mean is (D + 1) / 2 * g; 64-byte buckets
    avg = average_gradients({k: (rank + 1) * v for k, v in _grads(7).items()}, group, D, bucket_bytes=64)
    torch.save(dict(updates=ups, avg=avg), path)
    dist.destroy_process_group()
    os._exit(0)


def run_ranks(D, ns_dtype):
    ctx = mp.get_context("fork")
    env = dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    with tempfile.TemporaryDirectory(prefix="dp_parts_") as tmp:
        procs = [ctx.Process(target=_rank, args=(r, D, dict(env, RANK=str(r), WORLD_SIZE=str(D)),
                                                 os.path.join(tmp, f"{r}.pt"), ns_dtype)) for r in range(D)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
            if p.is_alive():
                p.kill()
        assert [p.exitcode for p in procs] == [0] * D
        return [torch.load(os.path.join(tmp, f"{r}.pt")) for r in range(D)]


@pytest.mark.parametrize("D, ns_dtype", [(2, torch.float32), pytest.param(3, torch.bfloat16, marks=pytest.mark.slow)])
def test_sharded_muon_equals_unsharded_and_averaging_is_the_mean(D, ns_dtype):
    from lmo.muon_family import muon
    ref = muon(0.02, momentum=0.9, weight_decay=0.1, ns_dtype=ns_dtype)
    params = _grads(100)
    state = ref.init(params)
    want = []
    for t in range(3):
        d, state = ref.update(_grads(t), state, params)
        want.append(d)
    got = run_ranks(D, ns_dtype)
    for r in range(D):
        for t in range(3):
            for k in want[t]:
                # NS per matrix is the same arithmetic, batched or alone: equal to rounding
                torch.testing.assert_close(got[r]["updates"][t][k], want[t][k], rtol=1e-6, atol=1e-7,
                                           msg=f"rank {r} step {t} {k}")
        for k, v in _grads(7).items():
            torch.testing.assert_close(got[r]["avg"][k], (D + 1) / 2 * v, rtol=1e-6, atol=1e-7)


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 40), st.integers(1, 40)), min_size=0, max_size=12),
       st.integers(1, 5))
def test_owners_split_every_matrix_once_and_balanced(shapes, D):
    own = owners(shapes, D)
    assert len(own) == len(shapes) and all(0 <= r < D for r in own)
    cost = [b * min(m, n) * m * n for b, m, n in shapes]
    load = [sum(c for c, r in zip(cost, own) if r == q) for q in range(D)]
    if shapes:  # greedy largest-first: no replica exceeds another by more than one matrix's cost
        assert max(load) - min(load) <= max(cost)


@given(st.lists(st.integers(1, 50), min_size=1, max_size=20), st.integers(4, 400))
def test_buckets_partition_names_in_order_within_the_size(sizes, cap):
    grads = {f"p{i}": torch.zeros(n) for i, n in enumerate(sizes)}
    bs = buckets(list(grads), grads, cap)
    assert [k for b in bs for k in b] == list(grads)
    for b in bs:
        assert len(b) == 1 or sum(grads[k].numel() * 4 for k in b) <= cap

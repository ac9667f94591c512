"""Our ``lion`` against lion-pytorch (lucidrains, pinned in the dev extra), step for step.

Mapping: ``lmo.lion(lr, betas, weight_decay)`` = ``lion_pytorch.Lion(lr, betas,
weight_decay)`` with its default ``decoupled_weight_decay=False``, which (despite the
name) is the decoupled x <- x (1 - lr wd) of the paper; ``decoupled_weight_decay=True``
divides wd by the initial lr instead (then ``weight_decay=wd * lr`` on our side).
Both agree to fp64 rounding.
"""
import torch
from hypothesis import given, settings, strategies as st

import lmo
from tests.lmo.reference_harness import any_shapes, require, run_pair

lion_pytorch = require("lion_pytorch")


@settings(max_examples=10, deadline=None)
@given(any_shapes, st.integers(0, 2 ** 16), st.floats(0.0, 0.5), st.sampled_from([(0.9, 0.99), (0.95, 0.98)]),
       st.sampled_from([torch.float64, torch.float32]))
def test_lion(shapes, seed, wd, betas, dtype):
    ref = lambda p: lion_pytorch.Lion(p, lr=0.01, betas=betas, weight_decay=wd)  # noqa: E731
    d = run_pair(ref, lmo.lion(0.01, betas=betas, weight_decay=wd), shapes, steps=6, dtype=dtype, seed=seed)
    assert max(d) < (1e-12 if dtype == torch.float64 else 1e-6), d


def test_lion_decoupled_flag_is_wd_over_lr():
    ref = lambda p: lion_pytorch.Lion(p, lr=0.01, weight_decay=0.3, decoupled_weight_decay=True)  # noqa: E731
    assert max(run_pair(ref, lmo.lion(0.01, weight_decay=0.3 / 0.01), [(5, 4), (3,)])) < 1e-12

"""Purity: ``init`` / ``update`` never mutate params, grads or the incoming state (every optimizer, wrapped or not)."""
import pytest
import torch
from hypothesis import given, strategies as st

from lmo.base import state_dict
from lmo.delay import delayed
from lmo.ef_correction import error_feedback
from lmo.registry import OPTIMIZERS, build

WRAPPERS = {"sync": lambda o: o, "delayed": lambda o: delayed(o, 1, dc_asgd=0.1), "ef": error_feedback}


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
@pytest.mark.parametrize("name", list(OPTIMIZERS))
@given(seed=st.integers(0, 2 ** 16), steps=st.integers(1, 3))
def test_update_never_mutates_its_inputs(name, wrapper, seed, steps):
    g = torch.Generator().manual_seed(seed)
    params = {"layers.0.w": torch.randn(4, 3, generator=g), "embed.weight": torch.randn(6, 3, generator=g),
              "norm.weight": torch.randn(3, generator=g)}
    opt = WRAPPERS[wrapper](build(name, params, lr=1e-2, weight_decay=0.1))
    state = opt.init(params)
    for _ in range(steps):
        grads = {k: torch.randn(v.shape, generator=g) for k, v in params.items()}
        p_before = {k: v.clone() for k, v in params.items()}
        g_before = {k: v.clone() for k, v in grads.items()}
        s_before = state_dict(state)
        updates, new_state = opt.update(grads, state, params)
        assert all(torch.equal(params[k], p_before[k]) for k in params)
        assert all(torch.equal(grads[k], g_before[k]) for k in grads)
        s_after = state_dict(state)
        assert s_before.keys() == s_after.keys() and all(torch.equal(s_before[k], s_after[k]) for k in s_before)
        params = {k: v + updates[k] for k, v in params.items()}
        state = new_state

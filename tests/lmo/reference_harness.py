"""Step-for-step comparison of one of our pure optimizers with a torch.optim-style
reference class (optax's equivalence_test.py, for torch): both start from the same
parameters, see the same gradients, and the parameters are compared after every step."""
from __future__ import annotations

import importlib

import pytest
import torch
from hypothesis import strategies as st

from lmo.base import apply_updates


def require(module: str):
    """Import a reference library or skip the test, saying which and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - the dev extra installs them
        pytest.skip(f"reference library {module!r} not importable ({e}); "
                    f"install the dev extra: pip install -e '.[dev]'")


def run_pair(make_ref, ours, shapes, steps: int = 5, dtype=torch.float64, seed: int = 0,
             grad_scale: float = 1.0, relative: bool = False) -> list[float]:
    """Max |x_ours - x_ref| over all entries after each of ``steps`` steps.

    ``make_ref(list_of_parameters) -> torch.optim.Optimizer``; ``ours``: an lmo Optimizer.
    Gradients are fresh N(0, grad_scale^2) draws each step, the same for both.
    ``relative=True`` divides each step's difference by the reference's total
    displacement so far, max |x_ref - x_0| (a scale-free measure for disagreements).
    """
    g = torch.Generator().manual_seed(seed)
    init = {f"p{i}": torch.randn(*s, generator=g, dtype=dtype) for i, s in enumerate(shapes)}
    tparams = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    ref = make_ref(list(tparams.values()))
    params = {k: v.clone() for k, v in init.items()}
    state = ours.init(params)
    diffs = []
    for _ in range(steps):
        grads = {k: grad_scale * torch.randn(v.shape, generator=g, dtype=dtype) for k, v in init.items()}
        for k, p in tparams.items():
            p.grad = grads[k].clone()
        ref.step()
        u, state = ours.update(grads, state, params)
        params = apply_updates(params, u)
        diff = max(float((params[k] - tparams[k].detach()).abs().max()) for k in init)
        if relative:
            diff /= max(float((tparams[k].detach() - init[k]).abs().max()) for k in init)
        diffs.append(diff)
    return diffs


# hypothesis: a few random matrix shapes (both orientations, square, thin)
matrix_shapes = st.lists(st.tuples(st.integers(2, 12), st.integers(2, 12)), min_size=1, max_size=3)
any_shapes = st.lists(st.one_of(st.tuples(st.integers(1, 12)),
                                st.tuples(st.integers(2, 10), st.integers(2, 10))), min_size=1, max_size=3)

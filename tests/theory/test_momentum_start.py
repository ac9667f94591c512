"""The momentum start is stated once (docs/design.md §3): the bounds are for m_0 = g_0, named as lmo
names it (init_momentum="grad"); lmo's default "zero" gives m_0 = mu g_0, and theory's simulator and
the certificates' weights take that name too. Cross-checked against lmo's own momentum."""
from pathlib import Path

import numpy as np
import pytest
import torch

from theory.checks.certificates import relations as R
from theory.checks.witness_runs import simulate
from theory.records.bound import INIT_MOMENTA, INIT_MOMENTUM

ROOT = Path(__file__).resolve().parents[2]


def _lmo_momenta(init, mu=0.3, steps=5):
    """lmo_momentum's own momentum on a fixed gradient sequence."""
    from lmo import L2, lmo_momentum
    opt = lmo_momentum(0.1, L2(event_ndim=1), mu=mu, **({} if init is None else {"init_momentum": init}))
    gen = torch.Generator().manual_seed(0)
    gs = torch.randn(steps, 3, generator=gen, dtype=torch.float64)
    x = {"w": torch.zeros(3, dtype=torch.float64)}
    state, ms = opt.init(x), []
    for g in gs:
        _, state = opt.update({"w": g}, state, x)
        ms.append(state.momentum["w"].clone())
    return gs.numpy(), torch.stack(ms).numpy()


@pytest.mark.parametrize("init", INIT_MOMENTA)
def test_the_weights_of_each_start_are_lmos(init):
    gs, ms = _lmo_momenta(init)
    for t in range(len(gs)):
        assert np.allclose(R.weights(0.3, t, init) @ gs[: t + 1], ms[t], atol=1e-12), (init, t)


def test_lmos_default_is_the_other_start_and_the_bounds_name_theirs():
    gs, ms = _lmo_momenta(None)
    assert np.allclose(ms[0], 0.3 * gs[0])                 # lmo's default: m_0 = mu g_0
    assert INIT_MOMENTUM == "grad" and INIT_MOMENTA == ("grad", "zero")
    assert np.isclose(R.weights(0.3, 4, "zero").sum(), 1 - 0.7 ** 5)


def test_the_simulator_takes_both_starts():
    a = simulate("sync", T=3, seeds=2, mu=0.4, seed=1)
    b = simulate("sync", T=3, seeds=2, mu=0.4, seed=1, init_momentum="zero")
    assert np.allclose(a["m"][:, 0], a["g"][:, 0]) and np.allclose(b["m"][:, 0], 0.4 * b["g"][:, 0])
    with pytest.raises(ValueError, match="init_momentum"):
        simulate("sync", T=2, init_momentum="ones")


def test_design_md_states_the_start_once_with_both_names():
    doc = (ROOT / "docs" / "design.md").read_text()
    assert 'init_momentum="grad"' in doc and 'init_momentum="zero"' in doc
    assert "m_0 = mu g_0" in doc

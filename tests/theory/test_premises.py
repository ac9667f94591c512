"""Every premise step of the derivations has a numeric witness that holds on exact instances;
a mis-stated premise is caught."""
import numpy as np
import pytest

from theory.derivation import all_derivations
from theory.premises import PREMISE_WITNESS, simulate, witnesses

PREMISES = {s.name for d in all_derivations() for s in d.steps if s.kind == "premise"}
TOL = 1e-9


def test_every_premise_has_a_witness():
    assert PREMISES <= set(PREMISE_WITNESS), PREMISES - set(PREMISE_WITNESS)


@pytest.mark.parametrize("geometry", ["sign", "spectral"])
@pytest.mark.parametrize("variant", ["sync", "delayed", "ef"])
def test_witnesses_hold(variant, geometry):
    H = simulate(variant, geometry, T=30, seeds=48, mu=0.25, eta=0.05, sigma=0.5, seed=1)
    w = witnesses(H)
    for name, margin in w.items():
        assert margin >= -TOL * max(1.0, H["L"]), (name, margin)


def test_mis_stated_premises_are_caught():
    H = simulate("delayed", "sign", T=30, seeds=16, mu=0.25, eta=0.05, sigma=0.5, seed=2)
    r = H["geometry"].norm(H["x"] - H["y"])
    assert np.max(r) > H["eta"] / 2  # "r_t <= eta/2" would be false
    f, y, d, gy, L, eta = H["f"], H["y"], H["d"], H["gy"], H["L"], H["eta"]
    # descent lemma without the L eta^2/2 term is false on this run
    gap = f(y[:, 1:]) - (f(y[:, :-1]) + (gy[:, :-1] * d[:, :-1]).sum(-1))
    assert np.max(gap) > 0
    # and with it, it holds (the witness)
    assert np.max(gap - L * eta**2 / 2) <= 1e-9

"""Integer parameters and a gradient of another shape than its parameter are refused in
one line naming the entry, before any state changes (issue 50)."""
import pytest
import torch

import lmo

NAMES = ["muon", "adamw", "lion", "scion"]


@pytest.mark.parametrize("name", NAMES)
def test_integer_parameters_are_refused_by_name(name):
    if not hasattr(lmo, name):
        pytest.skip(f"no lmo.{name}")
    with pytest.raises(TypeError, match=r"params\['w'\] is torch.int64"):
        getattr(lmo, name)(lr=0.1).init({"w": torch.ones(4, 4, dtype=torch.int64)})


@pytest.mark.parametrize("name", NAMES)
def test_a_gradient_of_another_shape_is_refused_by_name(name):
    if not hasattr(lmo, name):
        pytest.skip(f"no lmo.{name}")
    opt = getattr(lmo, name)(lr=0.1)
    p = {"w": torch.ones(4, 4)}
    st = opt.init(p)
    with pytest.raises(ValueError, match=r"grads\['w'\] has shape \(4, 3\) but params\['w'\] has \(4, 4\)"):
        opt.update({"w": torch.ones(4, 3)}, st, p)

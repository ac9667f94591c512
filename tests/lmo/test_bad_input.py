"""Bad input fails loudly, naming the parameter, and changes no state."""
import pytest
import torch

from lmo.adam_family import adamw
from lmo.base import state_dict
from lmo.delay import delayed
from lmo.ef_correction import error_feedback
from lmo.muon_family import muon
from lmo.steepest_descent import lion, signum


@pytest.mark.parametrize("ctor,kw,match", [
    (muon, dict(lr=0.0), "lr"), (muon, dict(lr=-1.0), "lr"), (adamw, dict(lr=float("nan")), "lr"),
    (muon, dict(lr=0.02, mu=0.0), "mu"), (muon, dict(lr=0.02, mu=1.5), "mu"),
    (signum, dict(lr=0.1, mu=-0.1), "mu"), (muon, dict(lr=0.02, momentum=1.0), "momentum"),
    (lion, dict(lr=0.1, betas=(1.2, 0.9)), "betas"), (adamw, dict(lr=0.1, weight_decay=-1.0), "weight_decay"),
])
def test_bad_hyperparameters(ctor, kw, match):
    with pytest.raises(ValueError, match=match):
        ctor(**kw)


@pytest.mark.parametrize("delay", [-1, {"w": -2}, 1.5])
def test_negative_or_non_integer_delay(delay):
    with pytest.raises(ValueError, match="delay"):
        delayed(adamw(0.1), delay)


def test_non_matrix_parameter_for_matrix_lmo():
    with pytest.raises(ValueError, match="bias"):
        muon(0.02).init({"bias": torch.zeros(3)})


@pytest.mark.parametrize("wrap", [lambda o: o, lambda o: delayed(o, 1), error_feedback])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nonfinite_gradient_refused_state_unchanged(wrap, bad):
    opt = wrap(muon(0.02))
    p = {"w": torch.randn(4, 3)}
    s = opt.init(p)
    _, s = opt.update({"w": torch.randn(4, 3)}, s, p)
    before = state_dict(s)
    g = torch.randn(4, 3)
    g[1, 2] = bad
    with pytest.raises(FloatingPointError, match="w"):
        opt.update({"w": g}, s, p)
    after = state_dict(s)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_missing_gradient_entry_named():
    opt = adamw(0.1)
    p = {"a": torch.zeros(2), "b": torch.zeros(2)}
    with pytest.raises(KeyError, match="b"):
        opt.update({"a": torch.zeros(2)}, opt.init(p), p)

"""Optimizers are atomic per step (issue 39, item 6): every group's gradients are checked
before any group is updated (lmo.TorchOptimizer with several groups, and the pure update of
a partition); complex parameters are supported by AdamW exactly as torch.optim.AdamW
supports them (pairs of reals) and refused by name by every other optimizer; sparse
gradients are refused by name; an lr a scheduler drives non-finite or negative is refused
at the step that receives it, naming the lr, with nothing changed."""
import copy

import pytest
import torch

import lmo
from lmo.base import Optimizer
from lmo.registry import OPTIMIZERS, make


def _two_groups(second_opt=None):
    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 3), torch.nn.Linear(3, 2)
    groups = [{"params": list(a.named_parameters())},
              {"params": list(b.named_parameters()), **({"optimizer": second_opt} if second_opt else {})}]
    return a, b, lmo.TorchOptimizer(lmo.adamw(1e-2), groups, lr=1e-2)


def _snapshot(modules, opt):
    return [copy.deepcopy(m.state_dict()) for m in modules], copy.deepcopy(opt.state_dict())


def _unchanged(before, modules, opt):
    params, state = before
    for old, m in zip(params, modules):
        assert all(torch.equal(old[k], v) for k, v in m.state_dict().items())
    now = opt.state_dict()
    flat = lambda sd: {f"{i}/{k}": v for i, g in enumerate(sd.get("groups", [sd])) for k, v in g["fstate"].items()}
    assert flat(now).keys() == flat(state).keys()
    assert all(torch.equal(flat(now)[k], v) for k, v in flat(state).items())


def _grads(modules, x):
    for m in modules:
        m.zero_grad()
    modules[1](modules[0](x)).pow(2).sum().backward()


# ----------------------------------------------------------------------------- atomic steps
def test_nan_gradient_in_the_second_group_changes_nothing():
    """The probe: the first group used to be updated before the second raised."""
    a, b, opt = _two_groups()
    x = torch.randn(5, 4)
    _grads((a, b), x)
    opt.step()                                   # one good step: the state is not at its init
    _grads((a, b), x)
    b.weight.grad[0, 0] = float("nan")
    before = _snapshot((a, b), opt)
    with pytest.raises(FloatingPointError, match=r"param group 1: grads\['weight'\] contains NaN"):
        opt.step()
    _unchanged(before, (a, b), opt)


def test_a_refusal_inside_the_second_groups_update_changes_nothing():
    """Refused while the second group computes its update (its own lr schedule turns NaN): the
    first group's update, already computed, is not applied."""
    a, b, opt = _two_groups(lmo.adamw(lambda t: 1e-2 if int(t) == 0 else float("nan")))
    x = torch.randn(5, 4)
    _grads((a, b), x)
    opt.step()
    _grads((a, b), x)
    before = _snapshot((a, b), opt)
    with pytest.raises(FloatingPointError, match="lr schedule at step 1 is nan"):
        opt.step()
    _unchanged(before, (a, b), opt)


def test_a_partition_checks_every_groups_gradients_before_any_group_computes():
    calls = []
    inner = lmo.adamw(1e-2)
    spy = Optimizer(inner.init, lambda g, s, p=None: (calls.append(1), inner.update(g, s, p))[1], name="spy")
    opt = lmo.partition({"a": spy, "b": lmo.adamw(1e-2)}, {"w": "a", "v": "b"})
    params = {"w": torch.randn(3, 2), "v": torch.randn(4)}
    state = opt.init(params)
    grads = {"w": torch.randn(3, 2), "v": torch.tensor([1.0, float("inf"), 0.0, 0.0])}
    with pytest.raises(FloatingPointError, match=r"grads\['v'\] contains NaN or Inf"):
        opt.update(grads, state, params)
    assert calls == []


# ----------------------------------------------------------------------------- lr per step
def _scheduled(lambda_lr):
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    opt = lmo.TorchOptimizer(lmo.adamw(1e-2), m.named_parameters(), lr=1e-2)
    return m, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda_lr)


@pytest.mark.parametrize("bad, kind, words", [(-0.5, ValueError, "lr is -0.005 < 0"),
                                              (float("nan"), FloatingPointError, "lr is nan")])
def test_a_scheduler_driving_the_lr_bad_is_refused_at_that_step(bad, kind, words):
    m, opt, sched = _scheduled(lambda k: 1.0 if k < 2 else bad)
    x = torch.randn(4, 3)
    for _ in range(2):
        m.zero_grad()
        m(x).pow(2).sum().backward()
        opt.step()
        sched.step()
    m.zero_grad()
    m(x).pow(2).sum().backward()
    before = _snapshot((m,), opt)
    with pytest.raises(kind, match=f"param group 0: {words}"):
        opt.step()
    _unchanged(before, (m,), opt)


def test_a_scheduler_reaching_zero_is_allowed():
    m, opt, sched = _scheduled(lambda k: 0.0)
    x = torch.randn(4, 3)
    w = m.weight.detach().clone()
    m(x).pow(2).sum().backward()
    opt.step()
    assert torch.equal(m.weight.detach(), w)


# ----------------------------------------------------------------------------- sparse gradients
def test_sparse_gradients_are_refused_naming_the_parameter():
    emb = torch.nn.Embedding(10, 4, sparse=True)
    opt = lmo.TorchOptimizer(lmo.adamw(1e-2), emb.named_parameters(), lr=1e-2)
    emb(torch.tensor([1, 2])).sum().backward()
    w = emb.weight.detach().clone()
    with pytest.raises(ValueError, match=r"grads\['weight'\] is a sparse tensor .*nn.Embedding\(\.\.\., sparse=False\)"):
        opt.step()
    assert torch.equal(emb.weight.detach(), w)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_optimizer_refuses_a_sparse_gradient_by_name(name):
    opt = make(name)
    params = {"w": torch.randn(4, 3)}
    grads = {"w": torch.randn(4, 3).to_sparse()}
    with pytest.raises(ValueError, match=r"grads\['w'\] is a sparse tensor"):
        opt.update(grads, opt.init(params), params)


# ----------------------------------------------------------------------------- complex parameters
@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_treats_complex_parameters_as_torch_optim_adamw_does(amsgrad):
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(4, 3, dtype=torch.complex64, generator=g)
    b0 = torch.randn(3, generator=g)                 # a real parameter beside it
    grads = [(torch.randn(4, 3, dtype=torch.complex64, generator=g), torch.randn(3, generator=g)) for _ in range(6)]
    ref = [x0.clone().requires_grad_(True), b0.clone().requires_grad_(True)]
    torch_opt = torch.optim.AdamW(ref, lr=1e-2, weight_decay=0.1, amsgrad=amsgrad)
    ours = lmo.adamw(1e-2, weight_decay=0.1, amsgrad=amsgrad)
    x = {"w": x0.clone(), "b": b0.clone()}
    state = ours.init(x)
    adapter_params = [torch.nn.Parameter(x0.clone()), torch.nn.Parameter(b0.clone())]
    adapter = lmo.TorchOptimizer(lmo.adamw(1e-2, weight_decay=0.1, amsgrad=amsgrad),
                                 list(zip(("w", "b"), adapter_params)), lr=1e-2)
    for gw, gb in grads:
        ref[0].grad, ref[1].grad = gw.clone(), gb.clone()
        torch_opt.step()
        u, state = ours.update({"w": gw, "b": gb}, state, x)
        x = lmo.apply_updates(x, u)
        adapter_params[0].grad, adapter_params[1].grad = gw.clone(), gb.clone()
        adapter.step()
        assert x["w"].dtype == torch.complex64
        torch.testing.assert_close(x["w"], ref[0].detach(), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(x["b"], ref[1].detach(), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(adapter_params[0].detach(), ref[0].detach(), rtol=1e-6, atol=1e-6)


def test_treating_complex_as_one_real_number_would_be_caught():
    """The check can fail: AdamW on the real part alone (what a complex-blind update amounts
    to, e.g. g^2 taken as a complex square) ends far from torch.optim.AdamW."""
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(4, 3, dtype=torch.complex64, generator=g)
    ref = x0.clone().requires_grad_(True)
    torch_opt = torch.optim.AdamW([ref], lr=1e-2)
    naive = x0.clone()
    m = v = torch.zeros_like(x0)
    for t in range(1, 6):
        gr = torch.randn(4, 3, dtype=torch.complex64, generator=g)
        ref.grad = gr.clone()
        torch_opt.step()
        m, v = 0.9 * m + 0.1 * gr, 0.999 * v + 0.001 * gr * gr        # complex square: the bug
        naive = naive * (1 - 1e-2 * 0.01) - 1e-2 * (m / (1 - 0.9 ** t)) / ((v / (1 - 0.999 ** t)).sqrt() + 1e-8)
    assert (naive - ref.detach()).abs().max() > 1e-3


@pytest.mark.parametrize("name", sorted(set(OPTIMIZERS) - {"adamw"}))
def test_every_other_optimizer_refuses_complex_parameters_by_name(name):
    opt = make(name)
    with pytest.raises(ValueError, match=rf"{name}: params\['w'\] is complex \(torch.complex64\); {name} is "
                                         r"defined for real parameters only"):
        opt.init({"w": torch.randn(4, 3, dtype=torch.complex64)})
    params = {"w": torch.randn(4, 3)}
    with pytest.raises(ValueError, match=rf"{name}: grads\['w'\] is complex"):
        opt.update({"w": torch.randn(4, 3, dtype=torch.complex64)}, opt.init(params), params)


def test_clipping_measures_a_complex_gradient_by_its_modulus():
    g = {"w": torch.tensor([3 + 4j, 0j], dtype=torch.complex64)}
    assert float(lmo.clipping.global_norm(g)) == pytest.approx(5.0)
    assert float(torch.linalg.vector_norm(g["w"])) == pytest.approx(5.0)    # torch's clip_grad_norm_ norm

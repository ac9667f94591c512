"""TorchOptimizer with torch's param groups (issue 30): per-group lr (scheduled per group),
weight decay and optimizer (Muon on the matrices, AdamW on the rest), add_param_group,
each against torch.optim in the same loop; what lmo fixes at construction is refused."""
from __future__ import annotations

import pytest
import torch

import lmo
from lmo.torch_adapter import TorchOptimizer

LR, WD = 1e-2, 0.1
X = torch.randn(16, 4, generator=torch.Generator().manual_seed(3))
Y = torch.randn(16, 1, generator=torch.Generator().manual_seed(4))


def _pair(seed=0):
    torch.manual_seed(seed)
    a = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    b = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    b.load_state_dict(a.state_dict())
    return a, b


def _loop(ma, oas, mb, obs, steps=8, scheds=(), tol=(1e-5, 1e-6), between=None):
    for t in range(steps):
        for m, opts in ((ma, oas), (mb, obs)):
            for o in opts:
                o.zero_grad()
            torch.nn.functional.mse_loss(m(X), Y).backward()
            for o in opts:
                o.step()
        for s in scheds:
            s.step()
        if between is not None:
            between(t)
        for (n, p), q in zip(ma.named_parameters(), mb.parameters()):
            torch.testing.assert_close(p, q, rtol=tol[0], atol=tol[1], msg=lambda m: f"step {t} {n}: {m}")


def test_per_group_lr_scheduled_like_torch_adamw():
    a, b = _pair()
    oa = TorchOptimizer(lmo.adamw(LR, weight_decay=WD), [
        {"params": a[0].named_parameters()}, {"params": a[2].named_parameters(), "lr": LR / 10}], lr=LR)
    ob = torch.optim.AdamW([{"params": b[0].parameters()}, {"params": b[2].parameters(), "lr": LR / 10}],
                           lr=LR, weight_decay=WD)
    sa = torch.optim.lr_scheduler.StepLR(oa, step_size=3, gamma=0.5)
    sb = torch.optim.lr_scheduler.StepLR(ob, step_size=3, gamma=0.5)
    _loop(a, [oa], b, [ob], scheds=(sa, sb))
    assert [g["lr"] for g in oa.param_groups] == [g["lr"] for g in ob.param_groups] == [LR / 4, LR / 40]


def test_per_group_weight_decay_like_torch_adamw():
    a, b = _pair(1)
    oa = TorchOptimizer(lmo.adamw(LR, weight_decay=WD), [
        {"params": [(n, p) for n, p in a.named_parameters() if n.endswith("weight")], "weight_decay": WD},
        {"params": [(n, p) for n, p in a.named_parameters() if n.endswith("bias")], "weight_decay": 0.0,
         "optimizer": lmo.adamw(LR, weight_decay=0.0)}], lr=LR)
    ob = torch.optim.AdamW([
        {"params": [p for n, p in b.named_parameters() if n.endswith("weight")]},
        {"params": [p for n, p in b.named_parameters() if n.endswith("bias")], "weight_decay": 0.0}],
        lr=LR, weight_decay=WD)
    _loop(a, [oa], b, [ob])


def test_per_group_optimizer_muon_and_adamw_like_torch():
    """Muon on the matrices, AdamW on the biases, in one adapter; torch needs two optimizers."""
    a, b = _pair(2)
    mats = lambda m: [(n, p) for n, p in m.named_parameters() if p.ndim == 2]
    vecs = lambda m: [(n, p) for n, p in m.named_parameters() if p.ndim < 2]
    oa = TorchOptimizer(lmo.adamw(LR, weight_decay=WD), [
        {"params": vecs(a)}, {"params": mats(a), "optimizer": lmo.muon(0.02, ns_dtype=torch.bfloat16)}], lr=LR)
    assert [g["lr"] for g in oa.param_groups] == [LR, 0.02]           # each group at its optimizer's lr
    obs = [torch.optim.AdamW([p for _, p in vecs(b)], lr=LR, weight_decay=WD),
           torch.optim.Muon([p for _, p in mats(b)], lr=0.02)]
    _loop(a, [oa], b, obs, tol=(1e-4, 5e-6))


def test_add_param_group_parameters_are_updated_like_torch():
    a, b = _pair(3)
    oa = TorchOptimizer(lmo.adamw(LR, weight_decay=WD), a[0].named_parameters(), lr=LR)
    ob = torch.optim.AdamW(b[0].parameters(), lr=LR, weight_decay=WD)
    head0 = a[2].weight.detach().clone()

    def unfreeze(t):
        if t == 2:
            oa.add_param_group({"params": a[2].named_parameters(), "lr": LR / 2})
            ob.add_param_group({"params": b[2].parameters(), "lr": LR / 2})

    for m in (a, b):
        m[2].requires_grad_(True)
    _loop(a, [oa], b, [ob], between=unfreeze)
    assert not torch.equal(a[2].weight, head0)


def test_groups_state_dict_round_trips():
    a, _ = _pair(4)
    groups = lambda: [{"params": a[0].named_parameters()}, {"params": a[2].named_parameters(), "lr": LR / 3}]
    o = TorchOptimizer(lmo.adamw(LR), groups(), lr=LR)
    torch.nn.functional.mse_loss(a(X), Y).backward()
    o.step()
    o2 = TorchOptimizer(lmo.adamw(LR), groups(), lr=LR)
    o2.load_state_dict(o.state_dict())
    assert [g["lr"] for g in o2.param_groups] == [LR, LR / 3]
    for s, s2 in zip(o.fstates, o2.fstates):
        assert all(torch.equal(x, y) for x, y in zip(lmo.state_dict(s).values(), lmo.state_dict(s2).values()))
    with pytest.raises(ValueError, match="param group"):
        TorchOptimizer(lmo.adamw(LR), a.named_parameters(), lr=LR).load_state_dict(o.state_dict())


@pytest.mark.parametrize("group, kind, words", [
    ({"betas": (0.9, 0.95)}, ValueError, ["'betas'", "not supported", "'optimizer'"]),
    ({"momentum": 0.9}, ValueError, ["'momentum'"]),
    ({"weight_decay": 0.0}, ValueError, ["weight_decay=0.0", "(0.1)"]),
    ({"optimizer": "adamw"}, TypeError, ["lmo optimizer"]),
    ({"lr": True}, ValueError, ["lr"]),
    ({"lr": -1.0}, ValueError, ["lr"]),
])
def test_what_lmo_fixes_at_construction_is_refused(group, kind, words):
    a, _ = _pair()
    with pytest.raises(kind) as e:
        TorchOptimizer(lmo.adamw(LR, weight_decay=WD), [dict(group, params=a.named_parameters())], lr=LR)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_changing_a_groups_weight_decay_later_is_refused():
    a, _ = _pair()
    o = TorchOptimizer(lmo.adamw(LR, weight_decay=WD), [{"params": a.named_parameters(), "weight_decay": WD}], lr=LR)
    o.param_groups[0]["weight_decay"] = 0.0
    torch.nn.functional.mse_loss(a(X), Y).backward()
    with pytest.raises(ValueError, match="weight_decay changed"):
        o.step()

"""TorchOptimizer behaves like torch.optim: frozen parameters stay frozen, and torch's lr
schedulers drive ``param_groups[0]["lr"]``. Cross-checked against torch.optim.AdamW in the
same loop (lmo.adamw is torch's AdamW update rule, tests/lmo/test_adamw.py)."""
from __future__ import annotations

import pytest
import torch

from lmo.adam_family import adamw
from lmo.torch_adapter import TorchOptimizer

LR, WD = 1e-2, 0.1


def _pair(seed=0):
    torch.manual_seed(seed)
    a = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    b = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1))
    b.load_state_dict(a.state_dict())
    for m in (a, b):
        m[0].bias.requires_grad_(False)          # frozen
    return a, b


def _loop(ma, oa, sa, mb, ob, sb, steps=8):
    X, Y = torch.randn(16, 4, generator=torch.Generator().manual_seed(3)), torch.randn(16, 1)
    for _ in range(steps):
        for m, o, s in ((ma, oa, sa), (mb, ob, sb)):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(X), Y).backward()
            o.step()
            if s is not None:
                s.step()
        for (n, p), q in zip(ma.named_parameters(), mb.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=lambda m: f"{n}: {m}")


def test_frozen_parameter_unchanged_like_torch_adamw():
    a, b = _pair()
    frozen0 = a[0].bias.detach().clone()
    oa = TorchOptimizer(adamw(LR, weight_decay=WD), a.named_parameters(), lr=LR)
    ob = torch.optim.AdamW(b.parameters(), lr=LR, weight_decay=WD)
    _loop(a, oa, None, b, ob, None)
    assert torch.equal(a[0].bias, frozen0)


def test_old_behaviour_on_request_decays_frozen():
    a, _ = _pair()
    frozen0 = a[0].bias.detach().clone()
    o = TorchOptimizer(adamw(LR, weight_decay=WD), a.named_parameters(), lr=LR, skip_no_grad=False)
    a(torch.randn(2, 4)).sum().backward()
    o.step()
    torch.testing.assert_close(a[0].bias, frozen0 * (1 - LR * WD))


@pytest.mark.parametrize("make_sched", [
    lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda t: 1.0 / (1 + t)),
], ids=["StepLR", "LambdaLR"])
def test_torch_schedulers_drive_the_lr_like_torch_adamw(make_sched):
    a, b = _pair(1)
    oa = TorchOptimizer(adamw(LR, weight_decay=WD), a.named_parameters(), lr=LR)
    ob = torch.optim.AdamW(b.parameters(), lr=LR, weight_decay=WD)
    sa, sb = make_sched(oa), make_sched(ob)
    _loop(a, oa, sa, b, ob, sb)
    assert oa.param_groups[0]["lr"] == ob.param_groups[0]["lr"] < LR


def test_lr_round_trips_and_bad_lr_refused():
    a, _ = _pair()
    o = TorchOptimizer(adamw(LR), a.named_parameters(), lr=LR)
    o.param_groups[0]["lr"] = 0.003
    sd = o.state_dict()
    o2 = TorchOptimizer(adamw(LR), a.named_parameters(), lr=LR)
    o2.load_state_dict(sd)
    assert o2.param_groups[0]["lr"] == 0.003
    for bad in (0.0, -1.0, float("nan"), "0.1"):
        with pytest.raises(ValueError, match="lr"):
            TorchOptimizer(adamw(LR), a.named_parameters(), lr=bad)

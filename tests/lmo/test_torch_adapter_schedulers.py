"""TorchOptimizer behaves like torch.optim to a scheduler (issue 50): every hyperparameter of a
param group (lr, weight decay, betas / momentum) is read at each step, so torch's schedulers,
momentum-cycling ones included, and a hand-written momentum / weight-decay schedule drive it
exactly as they drive torch.optim's own AdamW, SGD (momentum) and Muon, over 20 steps; a key
the adapter cannot honour is refused at the step, by name."""
from __future__ import annotations

import functools

import pytest
import torch
from torch.optim import lr_scheduler as S

import lmo
from lmo.base import Optimizer
from lmo.torch_adapter import TorchOptimizer

STEPS, LR = 20, 0.05


def heavy_ball(lr, momentum=0.9, weight_decay=0.0):
    """torch.optim.SGD's rule as an lmo optimizer (dampening 0, coupled L2 decay):
    b_t = momentum b_{t-1} + (g_t + wd x_t) (b_0 = g_0 + wd x_0), d_t = -lr b_t."""
    def init(params):
        return {"buf": {k: torch.zeros_like(v) for k, v in params.items()}, "t": torch.zeros((), dtype=torch.int64)}

    def update(grads, state, params):
        g = {k: grads[k] + weight_decay * params[k] for k in grads}
        first = int(state["t"]) == 0
        buf = {k: g[k].clone() if first else momentum * state["buf"][k] + g[k] for k in g}
        return {k: -lr * b for k, b in buf.items()}, {"buf": buf, "t": state["t"] + 1}

    return Optimizer(init, update, name="heavy_ball", hyper=dict(lr=lr, momentum=momentum, weight_decay=weight_decay))


# optimizer name -> (lmo builder, torch.optim class, hyperparameters both take)
PAIRS = {
    "adamw": (lmo.adamw, torch.optim.AdamW, dict(betas=(0.9, 0.99), weight_decay=0.1)),
    "sgd": (heavy_ball, torch.optim.SGD, dict(momentum=0.9, weight_decay=0.01)),
    "muon": (functools.partial(lmo.muon, ns_dtype=torch.bfloat16), getattr(torch.optim, "Muon", None),
             dict(momentum=0.95, weight_decay=0.1)),
}


def _hand_schedule(o):
    """A momentum / weight-decay schedule written by hand, as a user would: step t sets them."""
    t = [0]

    class Hand:
        def step(self):
            t[0] += 1
            for g in o.param_groups:
                g["weight_decay"] = 0.1 * (1 + t[0] % 3)
                if "betas" in g:
                    g["betas"] = (0.9 - 0.02 * (t[0] % 4), g["betas"][1])
                else:
                    g["momentum"] = 0.95 - 0.05 * (t[0] % 4)
    return Hand()


SCHEDULES = {
    "onecycle": lambda o: S.OneCycleLR(o, max_lr=2 * LR, total_steps=STEPS),          # cycle_momentum default
    "cyclic": lambda o: S.CyclicLR(o, base_lr=LR / 4, max_lr=LR, step_size_up=4),
    "lambda": lambda o: S.LambdaLR(o, lambda t: 1.0 / (1 + t)),
    "cosine": lambda o: S.CosineAnnealingLR(o, T_max=STEPS, eta_min=LR / 10),
    "plateau": lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=1),
    "sequential": lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.2, total_iters=5),
                                               S.CosineAnnealingLR(o, T_max=15)], milestones=[5]),
    "momentum_and_decay": _hand_schedule,
}


@pytest.mark.parametrize("sched", list(SCHEDULES))
@pytest.mark.parametrize("name", list(PAIRS))
def test_scheduled_like_torch_optim(name, sched):
    build, torch_cls, hyper = PAIRS[name]
    if torch_cls is None:
        pytest.skip("this torch has no torch.optim.Muon")
    gen = torch.Generator().manual_seed(0)
    init = {"w0": torch.randn(6, 4, generator=gen), "w1": torch.randn(4, 5, generator=gen)}
    ours = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    ref = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    oa = TorchOptimizer(build, list(ours.items()), lr=LR, **hyper)
    ob = torch_cls(list(ref.values()), lr=LR, **hyper)
    sa, sb = SCHEDULES[sched](oa), SCHEDULES[sched](ob)
    for t in range(STEPS):
        grads = {k: torch.randn(v.shape, generator=gen) for k, v in init.items()}
        for ps, o, s in ((ours, oa, sa), (ref, ob, sb)):
            for k, p in ps.items():
                p.grad = grads[k].clone()
            o.step()
            s.step(1.0) if sched == "plateau" else s.step()      # a loss that never improves: lr halves
        for k in init:
            torch.testing.assert_close(ours[k], ref[k], rtol=1e-5, atol=1e-6, msg=lambda m: f"step {t} {k}: {m}")
        assert oa.param_groups[0]["lr"] == pytest.approx(ob.param_groups[0]["lr"])
    moved = {k for k in ("betas", "momentum", "weight_decay") if k in ob.param_groups[0]}
    assert moved <= set(oa.param_groups[0])     # the adapter's groups hold what torch's do


def test_the_schedule_is_honoured_not_ignored():
    """The same run without the momentum / decay schedule ends elsewhere: the schedule counts."""
    build, _, hyper = PAIRS["sgd"]
    ends = []
    for hand in (True, False):
        p = torch.nn.Parameter(torch.ones(3, 2))
        o = TorchOptimizer(build, [("w", p)], lr=LR, **hyper)
        s = _hand_schedule(o) if hand else None
        for _ in range(5):
            p.grad = torch.ones(3, 2)
            o.step()
            if s:
                s.step()
        ends.append(p.detach().clone())
    assert not torch.equal(*ends)


def test_a_key_it_cannot_honour_is_refused_at_the_step_by_name():
    p = torch.nn.Parameter(torch.ones(3, 2))
    o = TorchOptimizer(lmo.adamw, [("w", p)], lr=LR, weight_decay=0.1)
    o.param_groups[0]["momentum"] = 0.9          # adamw has betas, no momentum
    p.grad = torch.ones(3, 2)
    before = p.detach().clone()
    with pytest.raises(ValueError, match="'momentum' = 0.9 is no hyperparameter of adamw"):
        o.step()
    assert torch.equal(p, before)


def test_a_built_optimizer_refuses_a_changed_hyperparameter_by_name():
    p = torch.nn.Parameter(torch.ones(3, 2))
    o = TorchOptimizer(lmo.adamw(LR, weight_decay=0.1), [("w", p)], lr=LR)
    assert o.param_groups[0]["betas"] == (0.9, 0.999)       # OneCycleLR / CyclicLR find it
    o.param_groups[0]["betas"] = (0.8, 0.999)
    p.grad = torch.ones(3, 2)
    with pytest.raises(ValueError, match="betas changed to .*pass its builder"):
        o.step()


def test_hyperparameters_round_trip_through_state_dict():
    p = torch.nn.Parameter(torch.ones(3, 2))
    o = TorchOptimizer(lmo.adamw, [("w", p)], lr=LR, weight_decay=0.1)
    o.param_groups[0]["betas"] = (0.8, 0.99)
    sd = o.state_dict()
    o2 = TorchOptimizer(lmo.adamw, [("w", torch.nn.Parameter(torch.ones(3, 2)))], lr=LR, weight_decay=0.1)
    o2.load_state_dict(sd)
    assert o2.param_groups[0]["betas"] == (0.8, 0.99)

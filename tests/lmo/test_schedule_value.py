"""The lr schedule as a value (issue 40 item 2): ``lmo.schedules.WarmupCosine`` equals, at every
step, the closure the package used before (copied below as the reference, not imported); the
optimizer receives the value and evaluates it itself, every group of ``build`` follows its
shape, and ``lmo.registry.lr_of`` / ``lr_at`` read back the lr the update used."""
from __future__ import annotations

import math

import pytest
import torch

from lmo.combine import chain
from lmo.clipping import clip_by_global_norm
from lmo.delay import delayed
from lmo.presets import DEFAULT_LR, peak_lr
from lmo.registry import build, lr_at, lr_of
from lmo.schedules import WarmupCosine, warmup_cosine

PARAMS = {"embed.weight": torch.zeros(8, 4), "layers.0.w.weight": torch.zeros(4, 4), "norm.weight": torch.zeros(4)}


def old_lambda(peak, total_steps, warmup_frac=0.1, final_frac=0.1):
    """The schedule closure of lmo.schedules.warmup_cosine before it became a value (verbatim)."""
    W = int(round(warmup_frac * total_steps))
    T = total_steps

    def schedule(step) -> float:
        t = int(step.item()) if isinstance(step, torch.Tensor) else int(step)
        if t < W:
            return peak * (t + 1) / W
        frac = min(1.0, (t - W) / max(1, T - W))
        return peak * (final_frac + (1 - final_frac) * 0.5 * (1 + math.cos(math.pi * frac)))
    return schedule


CONFIGS = [(1e-3, 200, 0.1, 0.1), (0.02, 7, 0.3, 0.0), (3e-3, 1, 0.0, 1.0), (0.05, 50, 0.5, 0.25),
           (2e-4, 1000, 0.01, 0.1)]


@pytest.mark.parametrize("peak, T, wf, ff", CONFIGS)
def test_value_equals_the_old_lambda_at_every_step(peak, T, wf, ff):
    value, ref, fn = WarmupCosine(peak, T, wf, ff), old_lambda(peak, T, wf, ff), warmup_cosine(peak, T, wf, ff)
    for t in range(T + 3):       # past the horizon too (held at the floor)
        assert value(t) == ref(t) == fn(t), t                   # bit for bit: == on floats
        assert value(torch.tensor(t)) == ref(t)                 # the optimizer's counter is a tensor


def test_with_peak_keeps_the_shape():
    a = WarmupCosine(0.02, 40, 0.2, 0.1)
    b = a.with_peak(1e-3)
    assert (b.total_steps, b.warmup_frac, b.final_frac, b.peak) == (40, 0.2, 0.1, 1e-3)
    assert all(b(t) == old_lambda(1e-3, 40, 0.2, 0.1)(t) for t in range(45))


@pytest.mark.parametrize("bad", [dict(peak=-1.0), dict(total_steps=0), dict(warmup_frac=1.0), dict(final_frac=1.5)])
def test_value_checked_at_construction(bad):
    with pytest.raises(ValueError):
        WarmupCosine(**{**dict(peak=0.01, total_steps=10), **bad})


@pytest.mark.parametrize("name", ["adamw", "muon", "lion", "scion", "nadam"])
def test_build_with_the_value_equals_the_schedule_callback(name):
    """``build(lr=WarmupCosine(...))`` (lmo evaluates the value) makes the same updates as the
    older ``build(lr=peak, schedule=peak -> warmup_cosine(peak, ...))`` (a callback), every group."""
    g = {k: torch.randn_like(v, generator=torch.Generator().manual_seed(i)) for i, (k, v) in enumerate(PARAMS.items())}
    p = {k: v + 0.5 for k, v in PARAMS.items()}
    new = build(name, p, lr=WarmupCosine(peak_lr(name), 20, 0.2, 0.1))
    old = build(name, p, lr=peak_lr(name), schedule=lambda peak: old_lambda(peak, 20, 0.2, 0.1))
    sn, so = new.init(p), old.init(p)
    for _ in range(6):
        un, sn = new.update(g, sn, p)
        uo, so = old.update(g, so, p)
        for k in p:
            assert torch.equal(un[k], uo[k]), k


def test_the_named_group_holds_the_value_itself():
    value = WarmupCosine(0.02, 20)
    opt = build("muon", PARAMS, lr=value)
    assert lr_of(opt) is value
    assert lr_of(chain(clip_by_global_norm(1.0), opt)) is value
    assert lr_of(delayed(chain(clip_by_global_norm(1.0), opt), 1)) is value
    assert lr_of(build("adamw", PARAMS)) == DEFAULT_LR["adamw"]      # a number: itself


def test_value_and_schedule_callback_together_refused():
    with pytest.raises(TypeError, match="not both"):
        build("adamw", PARAMS, lr=WarmupCosine(0.01, 10), schedule=lambda peak: warmup_cosine(peak, 10))


@pytest.mark.parametrize("wrap", [lambda o: o, lambda o: delayed(chain(clip_by_global_norm(100.0), o), 1)])
def test_lr_at_is_the_lr_the_update_used(wrap):
    """Lion without decay steps d_t = -eta_t sign(.), so |d_t| is the lr its update resolved at
    its own counter; lr_at reads the same number from the optimizer (through wrappers too)."""
    p = {"w": torch.zeros(3, 3)}
    g = {"w": torch.full((3, 3), 0.7)}
    base = build("lion", p, lr=WarmupCosine(2e-4, 12, 0.25, 0.1), weight_decay=0.0)
    st = base.init(p)
    opt = wrap(base)
    for t in range(12):
        u, st = base.update(g, st, p)
        assert float(u["w"].abs().max()) == pytest.approx(lr_at(opt, t), rel=1e-6)
        assert lr_at(opt, t) == old_lambda(2e-4, 12, 0.25, 0.1)(t)

"""Our optimizers against pytorch-optimizer (kozistr, pinned in the dev extra), step for step.

Mappings (ours <- reference settings; checked below):

| ours                                   | pytorch_optimizer                                  | agreement |
|----------------------------------------|----------------------------------------------------|-----------|
| adan(lr, betas, wd)                    | Adan(lr, betas, wd) (proximal decay)               | fp64 1e-12 |
| adan(..., no_prox=True)                | Adan(..., weight_decouple=True)                    | fp64 1e-12 |
| mars(lr, betas, wd, gamma, eps=0,      | MARS(lr, betas, wd, gamma, lr_1d=lr_1d_factor*lr,  | fp64 1e-9 |
|      lr_1d_factor, weight_decay_1d)    |      weight_decay_1d, eps=0)                       |           |
| soap(lr, betas, wd, freq)              | SOAP(lr, betas, wd, precondition_frequency=freq)   | fp64 1e-12 before the first basis refresh |
| lion(lr, betas, wd)                    | Lion(lr, betas, wd)                                | fp64 1e-12 |
| muon(lr, momentum, wd, nesterov,       | Muon([{use_muon: True}], lr, momentum, wd,         | NS in fp64 on both: 1e-12; |
|      adjust_lr_fn="original"/"match_rms_adamw") | nesterov, use_adjusted_lr=False/True)     | both bf16: fp32 rounding |
| normuon(lr, momentum, beta2, wd,       | NorMuon(..., update_scale="preserve_norm"/         | as Muon |
|      scale="frobenius"/"rms")          |      "match_rms")                                  |           |
| adamuon(lr, momentum=b1, beta2, wd,    | AdaMuon(lr, betas=(b1, beta2), wd, eps)            | NS in fp64 on both: 1e-12 |
|      eps, nesterov=False)              |                                                    |           |
| newton_schulz(G, method="gram",        | zero_power_via_gram_newton_schulz(G,               | 1e-6 (it rounds the |
|      restarts=(2,))                    |      reset_steps=(2,))                             | normalised G to fp32) |
| newton_schulz(G, dtype=fp64)           | zero_power_via_newton_schulz_5(G, dtype=fp64)      | fp64 1e-12 |

Where they cannot agree (measured below):
- MARS with eps > 0: the reference adds eps before the bias correction,
  m / ((sqrt(v) + eps) / sqrt(1 - b2^t)), ours after it (as torch's Adam): an effective
  eps that differs by the factor sqrt(1 - b2^t) (10x at t = 1 for b2 = 0.99).
- SOAP after a basis refresh: the reference computes the QR of the power step in fp32
  even for fp64 parameters, so in fp64 the two differ by fp32 rounding of the basis.
- AdaMuon with bf16 NS: the reference keeps the bf16 NS output through the second
  moment and the normalisation; ours casts it back to the parameter dtype first, so
  the updates differ by bf16 rounding (2^-8 relative).
- pytorch-optimizer's "polar_express" is an 8-step schedule with safety 1e-2, not the
  5-step modded-nanogpt schedule we ship (tests/lmo/test_reference_modded_nanogpt.py).
"""
import functools

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import lmo
from lmo.polar_factor import newton_schulz
from tests.lmo.reference_harness import any_shapes, matrix_shapes, require, run_pair

po = require("pytorch_optimizer")
FP64 = 1e-12
SETTINGS = settings(max_examples=8, deadline=None)
# the fp64-NS fixture only patches a module attribute: safe to share across examples
PATCHED = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
seeds = st.integers(0, 2 ** 16)


def muon_group(cls, **kw):
    return lambda p: cls([dict(params=p, use_muon=True)], **kw)


@pytest.fixture
def reference_ns_in_fp64(monkeypatch):
    """pytorch-optimizer always runs NS in bf16; for an exact fp64 comparison run it in fp64."""
    from pytorch_optimizer.optimizer.muon import adamuon, base, normuon
    from pytorch_optimizer.optimizer.utils.matrix import zero_power_via_newton_schulz_5 as ns5
    for mod in (base, adamuon, normuon):
        monkeypatch.setattr(mod, "zero_power_via_newton_schulz_5", functools.partial(ns5, dtype=torch.float64))


@SETTINGS
@given(any_shapes, seeds, st.sampled_from([False, True]), st.floats(0.0, 0.3))
def test_adan(shapes, seed, decoupled, wd):
    ref = lambda p: po.Adan(p, lr=0.01, betas=(0.98, 0.92, 0.99), weight_decay=wd,  # noqa: E731
                            weight_decouple=decoupled)
    ours = lmo.adan(0.01, betas=(0.98, 0.92, 0.99), weight_decay=wd, no_prox=decoupled)
    assert max(run_pair(ref, ours, shapes, steps=6, seed=seed)) < FP64


@SETTINGS
@given(any_shapes, seeds)
def test_mars_without_eps(shapes, seed):
    ref = lambda p: po.MARS(p, lr=0.01, betas=(0.95, 0.99), gamma=0.025, weight_decay=0.1,  # noqa: E731
                            lr_1d=0.005, weight_decay_1d=0.05, betas_1d=(0.9, 0.95), eps=0.0)
    ours = lmo.mars(0.01, betas=(0.95, 0.99), gamma=0.025, weight_decay=0.1, lr_1d_factor=0.5,
                    weight_decay_1d=0.05, betas_1d=(0.9, 0.95), eps=0.0)
    # rounding amplified by 1/sqrt(v) on small second moments: 1e-9, not 1e-12
    assert max(run_pair(ref, ours, [s for s in shapes], steps=6, seed=seed)) < 1e-9


def test_mars_eps_placement_difference_is_what_the_formula_says():
    ref = lambda p: po.MARS(p, lr=0.01, weight_decay=0.0, lr_1d=0.01, eps=1e-8)  # noqa: E731
    d = run_pair(ref, lmo.mars(0.01, eps=1e-8), [(6, 5)], steps=4)
    # |m/(1-b1^t)| / (sqrt(v^) + eps) changes by ~eps (1/sqrt(1-b2^t) - 1) / sqrt(v^) per
    # step; with |g| ~ 1 that is ~lr * 9e-8 per step at t = 1: visible, and small
    assert 1e-11 < max(d) < 1e-6, d


@SETTINGS
@given(any_shapes, seeds)
def test_soap_before_the_first_basis_refresh(shapes, seed):
    ref = lambda p: po.SOAP(p, lr=0.01, betas=(0.95, 0.95), weight_decay=0.01,  # noqa: E731
                            precondition_frequency=100)
    ours = lmo.soap(0.01, betas=(0.95, 0.95), weight_decay=0.01, precondition_frequency=100)
    assert max(run_pair(ref, ours, shapes, steps=6, seed=seed)) < FP64


def test_soap_after_basis_refreshes_differs_by_fp32_qr_only():
    ref = lambda p: po.SOAP(p, lr=0.01, weight_decay=0.01, precondition_frequency=3)  # noqa: E731
    d = run_pair(ref, lmo.soap(0.01, weight_decay=0.01, precondition_frequency=3),
                 [(5, 7), (6, 3), (4,)], steps=10)
    assert max(d[:4]) < FP64              # call 0 initializes; the first refresh is at t = 3
    assert 1e-10 < max(d) < 1e-6, d       # fp32 QR of the reference after that


@SETTINGS
@given(any_shapes, seeds, st.floats(0.0, 0.3))
def test_lion(shapes, seed, wd):
    ref = lambda p: po.Lion(p, lr=0.01, betas=(0.9, 0.99), weight_decay=wd)  # noqa: E731
    assert max(run_pair(ref, lmo.lion(0.01, betas=(0.9, 0.99), weight_decay=wd), shapes, seed=seed)) < FP64


MUON_CASES = [dict(nesterov=True, adjusted=False), dict(nesterov=False, adjusted=True)]


@PATCHED
@given(matrix_shapes, seeds, st.sampled_from(MUON_CASES))
def test_muon_with_fp64_ns(reference_ns_in_fp64, shapes, seed, case):
    ref = muon_group(po.Muon, lr=0.02, momentum=0.9, weight_decay=0.1, nesterov=case["nesterov"],
                     use_adjusted_lr=case["adjusted"])
    ours = lmo.muon(0.02, momentum=0.9, weight_decay=0.1, nesterov=case["nesterov"], ns_dtype=torch.float64,
                    adjust_lr_fn="match_rms_adamw" if case["adjusted"] else "original")
    assert max(run_pair(ref, ours, shapes, seed=seed)) < FP64


def test_muon_both_in_bf16_agree_to_fp32_rounding():
    ref = muon_group(po.Muon, lr=0.02, momentum=0.95, weight_decay=0.1)
    ours = lmo.muon(0.02, weight_decay=0.1, ns_dtype=torch.bfloat16)
    d = run_pair(ref, ours, [(5, 7), (6, 3), (4, 4), (5, 7)], dtype=torch.float32)
    assert max(d) < 2e-6, d               # a few fp32 ulps of |x| ~ 1 over 5 steps


@PATCHED
@given(matrix_shapes, seeds, st.sampled_from([("frobenius", "preserve_norm"), ("rms", "match_rms")]))
def test_normuon_with_fp64_ns(reference_ns_in_fp64, shapes, seed, scales):
    ours_scale, ref_scale = scales
    ref = muon_group(po.NorMuon, lr=0.02, momentum=0.95, beta2=0.95, weight_decay=0.1, update_scale=ref_scale)
    ours = lmo.normuon(0.02, momentum=0.95, beta2=0.95, weight_decay=0.1, scale=ours_scale,
                       ns_dtype=torch.float64)
    # the reference adds eps = 1e-10 to ||O^||_F where "rms" clamps it: ~1e-10 relative
    assert max(run_pair(ref, ours, shapes, seed=seed)) < 1e-10


@PATCHED
@given(matrix_shapes, seeds)
def test_adamuon_with_fp64_ns(reference_ns_in_fp64, shapes, seed):
    ref = muon_group(po.AdaMuon, lr=0.02, betas=(0.95, 0.999), weight_decay=0.1, eps=1e-8)
    ours = lmo.adamuon(0.02, momentum=0.95, beta2=0.999, weight_decay=0.1, eps=1e-8, nesterov=False,
                       ns_dtype=torch.float64)
    assert max(run_pair(ref, ours, shapes, seed=seed)) < FP64


def test_adamuon_in_bf16_differs_by_bf16_rounding_of_the_update():
    ref = muon_group(po.AdaMuon, lr=0.02, betas=(0.95, 0.999), weight_decay=0.1, eps=1e-8)
    ours = lmo.adamuon(0.02, weight_decay=0.1, nesterov=False, ns_dtype=torch.bfloat16)
    d = run_pair(ref, ours, [(5, 7), (6, 3), (4, 4)], dtype=torch.float32)
    # per step at most lr * RMS-scale * 2^-8 relative rounding of an update of entries
    # ~0.2 sqrt(mn)/sqrt(mn) * a few: measured ~1e-5 per step, never above lr 2^-8
    assert 1e-7 < max(d) < 5 * 0.02 * 2 ** -8, d


@pytest.mark.parametrize("shape", [(8, 32), (32, 8), (3, 6, 24)])
@pytest.mark.parametrize("restarts", [(2,), ()])
def test_gram_newton_schulz(shape, restarts):
    from pytorch_optimizer.optimizer.utils.matrix import (zero_power_via_gram_newton_schulz,
                                                         zero_power_via_newton_schulz_5)
    G = torch.randn(*shape, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    ref = zero_power_via_gram_newton_schulz(G, num_steps=5, weights=(3.4445, -4.7750, 2.0315),
                                            dtype=torch.float64, reset_steps=restarts)
    ours = newton_schulz(G, method="gram", restarts=restarts, dtype=torch.float64)
    # the reference rounds the normalised G to fp32 (``.float()``) before iterating in fp64
    torch.testing.assert_close(ours, ref, atol=1e-6, rtol=0)
    # its plain NS normalises in fp64: there both agree with ours (plain and Gram) exactly
    plain = zero_power_via_newton_schulz_5(G, num_steps=5, weights=(3.4445, -4.7750, 2.0315),
                                           dtype=torch.float64)
    torch.testing.assert_close(newton_schulz(G, dtype=torch.float64), plain, atol=FP64, rtol=0)
    torch.testing.assert_close(ours, plain, atol=1e-10, rtol=0)


def test_their_polar_express_is_a_different_schedule():
    from pytorch_optimizer.optimizer.utils.matrix import NS_COEFFICIENTS as theirs
    from lmo.polar_factor import NS_COEFFICIENTS as ours
    assert len(theirs["polar_express"]) == 8 and len(ours["polar_express"]) == 5
    assert theirs["polar_express"][0] != ours["polar_express"][0]
    assert ours["keller"][0] == theirs["original"][0]

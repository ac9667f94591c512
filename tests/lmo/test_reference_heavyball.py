"""Our optimizers against heavyball (pinned in the dev extra), where it has the optimizer.

heavyball compiles its steps with torch.compile by default; the tests switch that off
(``heavyball.utils.compile_mode = None``: the same functions run eagerly) so they take
milliseconds on a CPU. heavyball keeps its state in fp32 (``storage_dtype="float32"``),
so even for fp64 parameters it agrees with us to fp32 rounding only.

| ours                                        | heavyball                                    | agreement |
|---------------------------------------------|----------------------------------------------|-----------|
| adamw(lr, betas, wd)                        | AdamW(lr, betas, wd)                         | fp32 rounding |
| nadam(lr, betas)                            | NAdam(lr, betas)                             | fp32 rounding |
| muon(lr, momentum=b, nesterov=False, wd=0,  | Muon(lr, betas=(b, .), nesterov=False, wd=0) | 1e-6 relative (fp32 state) |
|      ns_coefficients=HEAVYBALL_NS,          |   (its debiased EMA m / (1 - b^t) has the    |           |
|      ns_dtype=fp64)                         |    same NS output: NS is scale invariant)    |           |
| muon(..., nesterov=True, momentum=0.5)      | Muon(..., nesterov=True, betas=(0.5, .))     | 1e-6 relative |

Not the same method: heavyball's Nesterov Muon orthogonalises g_t + EMA_t(g) (its
``nesterov_ema``), ours (and torch.optim.Muon's) (1 - b) g_t + b m_t; the two directions
coincide only at b = 0.5; at b = 0.9 they differ by 30-60% of the displacement (measured
below). heavyball's NS uses modded-nanogpt's five "quintic" tuples (HEAVYBALL_NS) with
stochastic bf16 rounding for fp32 input; fp64 input is iterated exactly.
heavyball's SOAP (palm, beta2 scaling, preconditioner schedule, dim merging) is a
different variant from the reference SOAP and is not compared here.
"""
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import lmo
from tests.lmo.reference_harness import any_shapes, matrix_shapes, require, run_pair

heavyball = require("heavyball")
HEAVYBALL_NS = [(4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
                (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012)]
EAGER = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def eager(monkeypatch):
    import heavyball.utils
    monkeypatch.setattr(heavyball.utils, "compile_mode", None)


@EAGER
@given(any_shapes, st.integers(0, 2 ** 16), st.floats(0.0, 0.3))
def test_adamw(shapes, seed, wd):
    ref = lambda p: heavyball.AdamW(p, lr=0.01, betas=(0.9, 0.99), weight_decay=wd)  # noqa: E731
    d = run_pair(ref, lmo.adamw(0.01, betas=(0.9, 0.99), weight_decay=wd), shapes, dtype=torch.float32, seed=seed)
    assert max(d) < 2e-6, d


@EAGER
@given(any_shapes, st.integers(0, 2 ** 16))
def test_nadam(shapes, seed):
    ref = lambda p: heavyball.NAdam(p, lr=0.01, betas=(0.9, 0.99))  # noqa: E731
    d = run_pair(ref, lmo.nadam(0.01, betas=(0.9, 0.99)), shapes, dtype=torch.float32, seed=seed)
    assert max(d) < 2e-6, d


@EAGER
@given(matrix_shapes, st.integers(0, 2 ** 16), st.sampled_from([(False, 0.9), (False, 0.95), (True, 0.5)]))
def test_muon(shapes, seed, case):
    nesterov, b = case
    ref = lambda p: heavyball.Muon(p, lr=0.02, betas=(b, 0.99), weight_decay=0.0, nesterov=nesterov)  # noqa: E731
    ours = lmo.muon(0.02, momentum=b, nesterov=nesterov, weight_decay=0.0, ns_dtype=torch.float64,
                    ns_coefficients=HEAVYBALL_NS)
    assert max(run_pair(ref, ours, shapes, seed=seed, relative=True)) < 1e-5


def test_muon_nesterov_is_a_different_direction_away_from_half():
    ref = lambda p: heavyball.Muon(p, lr=0.02, betas=(0.9, 0.99), weight_decay=0.0)  # noqa: E731
    ours = lmo.muon(0.02, momentum=0.9, weight_decay=0.0, ns_dtype=torch.float64, ns_coefficients=HEAVYBALL_NS)
    d = run_pair(ref, ours, [(5, 7), (6, 3), (4, 4)], relative=True)
    assert d[0] < 1e-5                 # step 1: m_1 is a multiple of g_1 in both
    assert max(d[1:]) > 0.1, d         # then g + m vs 0.1 g + 0.9 m

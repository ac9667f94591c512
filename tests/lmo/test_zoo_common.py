"""Properties every optimizer of the benchmark set shares (the zoo plus adamw, muon, lion):

- under ``lmo.delay.delayed`` step t applies the sync update d_{t-1}; under
  ``lmo.ef_correction.error_feedback`` it applies 2 d_{t-1} - d_{t-2} (fixed gradient
  stream, no weight decay, so d_t depends on the gradients only);
- a leading seed dimension is a batch: the stacked update equals the per-seed updates;
- the state round-trips through state_dict / load_state_dict (and torch.save, weights_only);
- a NaN gradient is refused, naming the entry, with the state unchanged (wrapped too).
"""
import io

import pytest
import torch

from lmo.muon_family import adamuon
from lmo.adam_family import adan
from lmo.base import apply_updates, load_state_dict, state_dict
from lmo.adam_family import mars
from lmo.adam_family import nadam
from lmo.muon_family import normuon
from lmo.adam_family import soap


def _registry(name):
    from lmo.registry import OPTIMIZERS
    return OPTIMIZERS[name]


# name -> (constructor(batch_dims) with weight decay 0, matrix-only?)
FACTORIES = {
    "nadam": (lambda b: nadam(0.01), False),
    "adan": (lambda b: adan(0.01), False),
    "mars": (lambda b: mars(0.01, batch_dims=b), False),
    "soap": (lambda b: soap(0.01, weight_decay=0.0, precondition_frequency=2, batch_dims=b), False),
    "normuon": (lambda b: normuon(0.01, ns_dtype=torch.float64), True),
    "adamuon": (lambda b: adamuon(0.01, weight_decay=0.0, ns_dtype=torch.float64), True),
    "adamw": (lambda b: _registry("adamw")(0.01, weight_decay=0.0), False),
    "muon": (lambda b: _registry("muon")(0.01, weight_decay=0.0, ns_dtype=torch.float64), True),
    "lion": (lambda b: _registry("lion")(0.01, weight_decay=0.0), False),
}
NAMES = list(FACTORIES)


def _params(batch=(), seed=0, matrix_only=False):
    g = torch.Generator().manual_seed(seed)
    p = {"w": torch.randn(*batch, 5, 4, generator=g, dtype=torch.float64)}
    if not matrix_only:
        p["b"] = torch.randn(*batch, 4, generator=g, dtype=torch.float64)
    return p


def _grad_stream(params, n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [{k: torch.randn(v.shape, generator=g, dtype=v.dtype) for k, v in params.items()} for _ in range(n)]


def _updates(opt, params, grads):
    s = opt.init(params)
    p, out = dict(params), []
    for g in grads:
        u, s = opt.update(g, s, p)
        p = apply_updates(p, u)
        out.append(u)
    return out, s


@pytest.mark.parametrize("name", NAMES)
def test_delayed_and_error_feedback_apply_the_shifted_sync_updates(name):
    from lmo.delay import delayed
    from lmo.ef_correction import error_feedback
    make, mat = FACTORIES[name]
    params = _params(matrix_only=mat)
    grads = _grad_stream(params, 5)
    sync, _ = _updates(make(0), params, grads)
    dly, _ = _updates(delayed(make(0), 1), params, grads)
    ef, _ = _updates(error_feedback(make(0)), params, grads)
    zero = {k: torch.zeros_like(v) for k, v in params.items()}
    for t in range(5):
        d1 = sync[t - 1] if t >= 1 else zero
        d2 = sync[t - 2] if t >= 2 else zero
        for k in params:
            torch.testing.assert_close(dly[t][k], d1[k], rtol=1e-9, atol=1e-12)
            torch.testing.assert_close(ef[t][k], 2 * d1[k] - d2[k], rtol=1e-9, atol=1e-12)
    assert any(float(sync[1][k].abs().max()) > 0 for k in params)  # not trivially zero


@pytest.mark.parametrize("name", NAMES)
def test_leading_seed_dim_is_a_batch(name):
    make, mat = FACTORIES[name]
    S = 3
    params = _params((S,), matrix_only=mat)
    grads = _grad_stream(params, 4)
    batched, _ = _updates(make(1), params, grads)
    for i in range(S):
        single, _ = _updates(make(0), {k: v[i] for k, v in params.items()},
                             [{k: v[i] for k, v in g.items()} for g in grads])
        for t in range(4):
            for k in params:
                torch.testing.assert_close(batched[t][k][i], single[t][k], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_state_round_trip(name):
    make, mat = FACTORIES[name]
    opt = make(0)
    params = _params(matrix_only=mat)
    grads = _grad_stream(params, 4)
    _, s = _updates(opt, params, grads[:3])
    buf = io.BytesIO()
    torch.save(state_dict(s), buf)
    buf.seek(0)
    s2 = load_state_dict(opt.init(params), torch.load(buf, weights_only=True))
    u1, n1 = opt.update(grads[3], s, params)
    u2, n2 = opt.update(grads[3], s2, params)
    for k in params:
        assert torch.equal(u1[k], u2[k])
    f1, f2 = state_dict(n1), state_dict(n2)
    assert f1.keys() == f2.keys() and all(torch.equal(f1[k], f2[k]) for k in f1)


@pytest.mark.parametrize("name", NAMES)
def test_nan_gradient_refused_state_unchanged(name):
    from lmo.delay import delayed
    make, mat = FACTORIES[name]
    params = _params(matrix_only=mat)
    grads = _grad_stream(params, 2)
    for opt in (make(0), delayed(make(0), 1)):
        _, s = _updates(opt, params, grads[:1])
        before = state_dict(s)
        bad = {k: v.clone() for k, v in grads[1].items()}
        bad["w"][0, 0] = float("nan")
        with pytest.raises((FloatingPointError, ValueError), match="w"):
            opt.update(bad, s, params)
        after = state_dict(s)
        assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
def test_updates_keep_the_param_dtype_and_are_finite(name, dtype):
    make, mat = FACTORIES[name]
    params = {k: v.to(dtype) for k, v in _params(matrix_only=mat).items()}
    grads = [{k: v.to(dtype) for k, v in g.items()} for g in _grad_stream(params, 3)]
    updates, _ = _updates(make(0), params, grads)
    for u in updates:
        for k in params:
            assert u[k].dtype == dtype and u[k].shape == params[k].shape
            assert torch.isfinite(u[k].float()).all()


def test_zoo_bench_quick_runs_every_optimizer_and_counts_state_memory(capsys):
    """The benchmark runs end to end; state sizes (not times) follow from the buffers each keeps."""
    from lmo.bench.zoo import ZOO, main
    res = main(quick=True)
    step = res.pop("train_step")
    assert set(step) == {"adamw", "muon", "muon[ns bf16]", "muon[ns fp32]"}
    assert all(t > 0 for t in step.values())
    assert set(res) == set(ZOO) and not any("error" in r for r in res.values())
    ratio = {k: r["bytes"] / res["adamw"]["bytes"] for k, r in res.items()}
    assert ratio["nadam"] == pytest.approx(1.0, rel=1e-3)    # m, v
    assert ratio["adan"] == pytest.approx(2.0, rel=1e-3)     # m, v(diff), n, g_{t-1}
    assert ratio["mars"] == pytest.approx(1.5, rel=1e-3)     # m, v, g_{t-1}
    assert ratio["lion"] == pytest.approx(0.5, rel=1e-3)     # m
    assert ratio["soap"] > 2.0                                # + Kronecker factors and eigenbases
    assert "x AdamW" in capsys.readouterr().out

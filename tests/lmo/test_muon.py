"""Our pure ``muon`` against torch.optim.Muon, step for step (an independent implementation)."""
import pytest
import torch

from lmo.base import apply_updates
from lmo.muon_family import muon


def _run_pair(steps, ours_kw, torch_kw, shapes=((8, 5), (5, 8), (6, 6)), seed=0):
    g = torch.Generator().manual_seed(seed)
    init = {f"w{i}": torch.randn(*s, generator=g) for i, s in enumerate(shapes)}
    tparams = {k: torch.nn.Parameter(v.clone()) for k, v in init.items()}
    ref = torch.optim.Muon(list(tparams.values()), **torch_kw)
    opt = muon(**ours_kw)
    params = {k: v.clone() for k, v in init.items()}
    state = opt.init(params)
    diffs = []
    for _ in range(steps):
        grads = {k: torch.randn(v.shape, generator=g) for k, v in init.items()}
        for k, p in tparams.items():
            p.grad = grads[k].clone()
        ref.step()
        u, state = opt.update(grads, state, params)
        params = apply_updates(params, u)
        diffs.append(max(float((params[k] - tparams[k].detach()).abs().max()) for k in init))
    return diffs


@pytest.mark.parametrize("kw", [
    dict(lr=0.02),
    dict(lr=0.02, nesterov=False),
    dict(lr=0.05, weight_decay=0.0, momentum=0.9),
    dict(lr=0.02, adjust_lr_fn="match_rms_adamw"),
    dict(lr=0.01, weight_decay=0.3, adjust_lr_fn="original", ns_steps=3),
])
def test_muon_matches_torch_muon_in_bf16(kw):
    diffs = _run_pair(6, dict(kw, ns_dtype=torch.bfloat16), kw)
    # torch runs NS in bf16; ours too (ns_dtype=bf16). Remaining differences are the
    # fp32 rounding of x (1 - lr wd) vs x - lr wd x: far below one bf16 ulp of the update.
    assert max(diffs) < 5e-6, diffs


def test_fp32_newton_schulz_differs_from_torch_by_bf16_rounding_only():
    diffs_fp32 = _run_pair(4, dict(lr=0.02, ns_dtype=torch.float32), dict(lr=0.02))
    # fp32 NS differs from torch's bf16 NS by bf16 rounding of the update (~lr * 2^-8),
    # i.e. visibly more than the bf16-matched run, but no more than that.
    assert 1e-6 < max(diffs_fp32) < 0.02 * 4 * 2 ** -6, diffs_fp32


def test_exact_muon_is_lmo_step_of_norm_lr_times_scale():
    from lmo.norms import spectral
    opt = muon(0.1, weight_decay=0.0, exact=True, nesterov=False, mu=1.0)
    p = {"w": torch.randn(6, 3, dtype=torch.float64)}
    g = {"w": torch.randn(6, 3, dtype=torch.float64)}
    u, _ = opt.update(g, opt.init(p), p)
    # shape scale sqrt(max(1, 6/3)) = sqrt(2); mu = 1: the step is -0.1 sqrt 2 polar(g)
    assert torch.allclose(spectral(u["w"]), torch.tensor(0.1 * 2 ** 0.5, dtype=torch.float64))
    assert float((u["w"] * g["w"]).sum()) < 0


def test_muon_momentum_is_beta_and_mu_override_agrees():
    p = {"w": torch.randn(4, 4)}
    gs = [{"w": torch.randn(4, 4)} for _ in range(3)]
    a, b = muon(0.02, momentum=0.8), muon(0.02, mu=0.2)
    sa, sb = a.init(p), b.init(p)
    for g in gs:
        ua, sa = a.update(g, sa, p)
        ub, sb = b.update(g, sb, p)
    assert torch.allclose(ua["w"], ub["w"]) and torch.allclose(sa.momentum["w"], sb.momentum["w"])


def test_muon_batched_over_seeds_equals_per_seed():
    opt = muon(0.02, ns_dtype=torch.float32)
    P = {"w": torch.randn(3, 5, 4)}
    G = {"w": torch.randn(3, 5, 4)}
    u, _ = opt.update(G, opt.init(P), P)
    for i in range(3):
        ui, _ = opt.update({"w": G["w"][i]}, opt.init({"w": P["w"][i]}), {"w": P["w"][i]})
        assert torch.allclose(u["w"][i], ui["w"], atol=1e-6)

"""lr damping by delay (lmo.step_damping) against the published rules, each re-written here:

- the official AsyncPP code's "PipeMare type LR correction" (Ajanthan et al. 2025,
  main_with_runtime.py): lr_t = lr / tau ** (1 - min((1 + t)/K, 1)), in its own model of
  the delay (weight stashing: the gradient of step s is taken at w_{s-tau} and applied at
  once); with SGD the update-delay wrapper equals it after the index shift w_s = x_{s+tau};
- the staleness-aware constant rule lr / tau (K = 0) and lr / sqrt(tau) (power 1/2);
- marin's lr_damp, one constant multiplier on every delayed block.
"""
import math

import pytest
import torch

from lmo.adam_family import adamw
from lmo.base import apply_updates
from lmo.delay import delayed
from lmo.step_damping import damping_factor, lr_damping

from lmo_toy import make, run, sgd

SHAPES = (("a", (4, 3)), ("b", (3, 3)), ("c", (5, 2)))


def asyncpp_stale_sgd(x0, grad, tau, steps, lr, K, power=1.0):
    """Weight-stashed SGD with AsyncPP's lr correction (power 1 is the code's rule)."""
    w, history = dict(x0), [dict(x0)]
    for s in range(steps):
        lr_s = lr / (tau ** (power * (1 - min(float(1 + s) / K, 1)))) if K else lr / tau ** power
        g = grad(history[max(0, s - tau)])
        w = {k: w[k] - lr_s * g[k] for k in w}
        history.append(w)
    return history


@pytest.mark.parametrize("tau", [1, 2, 4, 8])
@pytest.mark.parametrize("K, power", [(10, 1.0), (0, 1.0), (0, 0.5)])
def test_damping_equals_the_published_rule(tau, K, power):
    x0, grad = make(31, shapes=SHAPES)
    ours, _ = run(lr_damping(sgd(0.005), tau, power=power, anneal_steps=K), x0, grad, 20 + tau)
    ref = asyncpp_stale_sgd(x0, grad, tau, 20, lr=0.005, K=K, power=power)
    for s in range(21):
        for k in x0:
            torch.testing.assert_close(ours[s + tau][k], ref[s][k], rtol=1e-12, atol=1e-14)


def test_the_reference_tells_damping_apart():
    x0, grad = make(32, shapes=SHAPES)
    ref = asyncpp_stale_sgd(x0, grad, 4, 20, lr=0.005, K=10)
    plain, _ = run(delayed(sgd(0.005), 4), x0, grad, 24)
    assert max((plain[24][k] - ref[20][k]).abs().max() for k in x0) > 1e-6


def test_factor_is_marins_constant_multiplier():
    """Every delayed block's update scaled by f, tau = 0 blocks untouched; with AdamW (whose
    state does not depend on the lr) this is the delayed AdamW at lr f * lr."""
    x0, grad = make(33, shapes=SHAPES)
    profile = {"a": 2, "b": 1, "c": 0}
    ours, _ = run(lr_damping(adamw(0.01, weight_decay=0.1), profile, factor=0.5), x0, grad, 12)
    half, _ = run(delayed(adamw(0.005, weight_decay=0.1), profile), x0, grad, 12)
    full, _ = run(delayed(adamw(0.01, weight_decay=0.1), profile), x0, grad, 12)
    for k in ("a", "b"):
        torch.testing.assert_close(ours[-1][k], half[-1][k], rtol=1e-12, atol=1e-14)
    assert torch.equal(ours[-1]["c"], full[-1]["c"])


def test_one_step_delay_is_not_damped_by_the_published_rules():
    assert damping_factor(1, 0) == 1.0 and damping_factor(1, 5, power=0.5, anneal_steps=3) == 1.0
    assert damping_factor(4, 0) == 0.25 and damping_factor(4, 0, power=0.5) == 0.5
    assert damping_factor(4, 9, anneal_steps=10) == 1.0           # annealed away after K steps
    assert damping_factor(4, 4, anneal_steps=10) == pytest.approx(4 ** -0.5)
    assert damping_factor(0, 0, factor=0.3) == 1.0 and damping_factor(1, 0, factor=0.3) == 0.3


def test_damped_step_is_the_inner_optimizer_at_the_damped_lr():
    """d~_t = s(t) d_t is the inner update at lr s(t) eta (AdamW: state independent of the lr)."""
    x0, grad = make(34, shapes=SHAPES)
    opt = lr_damping(adamw(0.01, weight_decay=0.1), 4, power=1.0)
    x, s = dict(x0), opt.init(x0)
    ref, sr = adamw(0.0025, weight_decay=0.1), None
    sr = ref.init(x0)
    for _ in range(6):
        g = grad(x)
        d, sr = ref.update(g, sr, x)
        u, s = opt.update(g, s, x)
        for k in x0:
            torch.testing.assert_close(s.pending[k][-1], d[k], rtol=1e-12, atol=1e-15)
        x = apply_updates(x, u)


@pytest.mark.parametrize("bad", [dict(power=-1.0), dict(power=math.nan), dict(anneal_steps=-1),
                                 dict(anneal_steps=1.5), dict(factor=0.0), dict(factor=True)])
def test_refusals_name_the_argument(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        lr_damping(adamw(0.01), 2, **bad)

"""Properties every delay corrector of lmo.corrector_registry must have (issue 41):

- tau = 0 (an int, or a mapping of zeros) is the synchronous optimizer bit for bit
  (``torch.equal`` at every step of a long run, through ``lmo.gradient_point``);
- the virtual iterate follows the synchronous recursion: y_{t+1} = y_t + (the update the
  wrapper queued at t), and that update is the inner optimizer's on the wrapper's gradient;
- a per-block delay profile acts block by block: on a separable objective with a per-block
  optimizer, every block follows the uniform run of its own delay, bit for bit;
- the state survives torch.save / torch.load mid-run with an identical continuation;
- inputs are never mutated.
Each corrector's published formula is checked in its own test file.
"""
import pytest
import torch

from lmo.adam_family import adamw
from lmo.muon_family import muon
from lmo.steepest_descent import signum
from lmo.base import apply_updates, state_dict
from lmo.corrector_registry import CORRECTORS, with_corrector
from lmo.lookahead import gradient_point
from lmo.registry import build

from lmo_toy import assert_resumes_identically, make, run_at_point

#: every corrector with options that make its correction active (nonzero) on the toy problems
OPTIONS = {
    "none": {},
    "weight_prediction": {"horizon": 1.0},
    "nesterov_lookahead": {"beta": 0.9},
    "dc_asgd": {"lam": 0.5},
    "dc_asgd_adaptive": {"lam": 2.0},
    "dc_asgd_ema": {"lam": 1.0},
    "lr_damping": {"power": 1.0, "anneal_steps": 5},
}
SHAPES = (("a", (4, 3)), ("b", (3, 3)), ("c", (5, 2)))
INNERS = {
    "adamw": lambda: adamw(0.01, weight_decay=0.1),
    "muon": lambda: muon(0.02, ns_dtype=torch.float64),
    "signum": lambda: signum(0.05, momentum=0.7, weight_decay=0.1),
}


def test_every_corrector_is_covered():
    assert set(OPTIONS) == set(CORRECTORS)
    with pytest.raises(ValueError, match="corrector must be one of"):
        with_corrector(adamw(0.01), "nosuch", 1)


@pytest.mark.parametrize("inner", sorted(INNERS))
@pytest.mark.parametrize("name", sorted(CORRECTORS))
@pytest.mark.parametrize("zero", [0, "mapping"], ids=["int", "mapping"])
def test_tau_zero_is_synchronous_bit_for_bit(name, inner, zero):
    x0, grad = make(7, shapes=SHAPES)
    delay = 0 if zero == 0 else {k: 0 for k in x0}
    sync = INNERS[inner]()
    opt = with_corrector(INNERS[inner](), name, delay, **OPTIONS[name])
    x, s = dict(x0), sync.init(x0)
    xc, sc = dict(x0), opt.init(x0)
    for _ in range(40):
        z = gradient_point(sc, xc)
        assert all(z[k] is xc[k] for k in xc)                # the gradient is taken at x_t itself
        u, s = sync.update(grad(x), s, x)
        uc, sc = opt.update(grad(z), sc, xc)
        x, xc = apply_updates(x, u), apply_updates(xc, uc)
        assert all(torch.equal(x[k], xc[k]) for k in x)


@pytest.mark.parametrize("name", sorted(CORRECTORS))
def test_tau_zero_whole_model_bit_for_bit(name):
    """The registry's whole-model optimizers (muon + AdamW group, scion) at tau = 0."""
    g = torch.Generator().manual_seed(3)
    params = {"embed.weight": torch.randn(12, 6, generator=g), "layers.0.w": torch.randn(6, 6, generator=g),
              "norm.weight": torch.randn(6, generator=g)}
    for opt_name in ("muon", "scion"):
        sync = build(opt_name, params, lr=0.01)
        opt = with_corrector(build(opt_name, params, lr=0.01), name, 0, **OPTIONS[name])
        x, s, xc, sc = dict(params), sync.init(params), dict(params), opt.init(params)
        for _ in range(15):
            grads = {k: torch.randn(v.shape, generator=g) for k, v in params.items()}
            u, s = sync.update(grads, s, x)
            uc, sc = opt.update(grads, sc, xc)
            x, xc = apply_updates(x, u), apply_updates(xc, uc)
            assert all(torch.equal(x[k], xc[k]) for k in x), (opt_name, name)


def _delay_state(state):
    return getattr(state, "delay", state)


@pytest.mark.parametrize("name", sorted(CORRECTORS))
@pytest.mark.parametrize("tau", [1, 3])
def test_virtual_iterate_follows_the_queued_updates(name, tau):
    x0, grad = make(2, shapes=SHAPES)
    opt = with_corrector(adamw(0.01, weight_decay=0.1), name, tau, **OPTIONS[name])
    x, s = dict(x0), opt.init(x0)
    y = opt.virtual_iterate(x, s)
    for _ in range(8):
        u, s = opt.update(grad(gradient_point(s, x)), s, x)
        x = apply_updates(x, u)
        y_new = opt.virtual_iterate(x, s)
        newest = {k: q[-1] for k, q in _delay_state(s).pending.items()}
        for k in x0:
            torch.testing.assert_close(y_new[k], y[k] + newest[k], rtol=1e-12, atol=1e-12)
        y = y_new


@pytest.mark.parametrize("name", ["none", "weight_prediction", "nesterov_lookahead"])
def test_queued_update_is_the_inner_optimizers_on_the_wrappers_gradient(name):
    """The point correctors change only where g_t is taken: d_t = inner(g(z_t), x_t)."""
    x0, grad = make(4, shapes=SHAPES)
    inner = adamw(0.01, weight_decay=0.1)
    opt = with_corrector(inner, name, 2, **OPTIONS[name])
    x, s, si = dict(x0), opt.init(x0), inner.init(x0)
    for _ in range(7):
        g = grad(gradient_point(s, x))
        d, si = inner.update(g, si, x)
        u, s = opt.update(g, s, x)
        assert all(torch.equal(_delay_state(s).pending[k][-1], d[k]) for k in x0)
        x = apply_updates(x, u)


@pytest.mark.parametrize("inner", ["adamw", "muon"])
@pytest.mark.parametrize("name", sorted(CORRECTORS))
def test_per_block_profile_acts_block_by_block(name, inner):
    """Separable objective, per-block optimizer: under the PipeDream-like profile
    {a: 3, b: 1, c: 0} each block follows the uniform run of its own delay bit for bit
    (block c the synchronous run)."""
    x0, grad = make(5, shapes=SHAPES)
    profile = {"a": 3, "b": 1, "c": 0}
    mixed, _, _ = run_at_point(with_corrector(INNERS[inner](), name, profile, **OPTIONS[name]), x0, grad, 12)
    for k, tau in profile.items():
        uniform, _, _ = run_at_point(with_corrector(INNERS[inner](), name, tau, **OPTIONS[name]), x0, grad, 12)
        for t in range(13):
            assert torch.equal(mixed[t][k], uniform[t][k]), (k, tau, t)


@pytest.mark.parametrize("name", sorted(CORRECTORS))
@pytest.mark.parametrize("inner", ["adamw", "muon"])
def test_save_restore_mid_run_gives_identical_continuation(name, inner):
    x0, grad = make(6, shapes=SHAPES)
    opt = with_corrector(INNERS[inner](), name, {"a": 2, "b": 1, "c": 0}, **OPTIONS[name])
    assert_resumes_identically(opt, x0, grad, 10, 5)


@pytest.mark.parametrize("name", sorted(CORRECTORS))
def test_update_never_mutates_its_inputs(name):
    x0, grad = make(8, shapes=SHAPES)
    opt = with_corrector(adamw(0.01, weight_decay=0.1), name, 2, **OPTIONS[name])
    x, s = dict(x0), opt.init(x0)
    for _ in range(4):
        z = gradient_point(s, x)
        g = grad(z)
        before = ({k: v.clone() for k, v in x.items()}, {k: v.clone() for k, v in g.items()}, state_dict(s))
        u, s_new = opt.update(g, s, x)
        assert all(torch.equal(x[k], before[0][k]) for k in x)
        assert all(torch.equal(g[k], before[1][k]) for k in g)
        after = state_dict(s)
        assert after.keys() == before[2].keys() and all(torch.equal(after[k], before[2][k]) for k in after)
        x, s = apply_updates(x, u), s_new


@pytest.mark.parametrize("name", sorted(CORRECTORS))
def test_refusals_name_the_argument(name):
    x0, grad = make(0, shapes=SHAPES)
    with pytest.raises(ValueError, match="delay"):
        with_corrector(adamw(0.01), name, -1, **OPTIONS[name]).init(x0)
    opt = with_corrector(adamw(0.01), name, 1, **OPTIONS[name])
    s = opt.init(x0)
    bad = grad(x0)
    bad["a"] = bad["a"].clone()
    bad["a"][0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match="grads\\['a'\\]"):
        opt.update(bad, s, x0)

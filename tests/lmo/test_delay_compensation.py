"""DC-ASGD with an EMA of g*g (lmo.delay_compensation) against the published formulas,
each re-written here in its own model of the delay:

- DC-ASGD-a as the authors' parameter server applies it (Microsoft multiverso,
  ``DCASGDAUpdater``): the gradient arrives tau updates after the weights it was taken at,
  MeanSquare <- m MeanSquare + (1 - m) g*g, then w <- w - lr (g + lambda / sqrt(MeanSquare
  + 1e-7) g*g (w - w_shadow)). Against the update-delay wrapper with plain SGD the two
  trajectories coincide after the index shift w_s = x_{s+tau} (lmo.delay);
- marin's dc_asgd_ema, its gradient-delay loop (a FIFO of gradients and of the weights
  they were taken at): g_stale + lambda v (w_t - w_stale), v the EMA of g_stale^2; no shift.
"""
import pytest
import torch

from lmo.adam_family import adamw
from lmo.steepest_descent import signum
from lmo.base import apply_updates
from lmo.delay import delayed
from lmo.delay_compensation import (compensate, compensated_update, compensation_of, dc_asgd_adaptive,
                                    dc_asgd_ema)

from lmo_toy import make, run, sgd

SHAPES = (("a", (4, 3)), ("b", (3, 3)), ("c", (5, 2)))


def parameter_server_dc_asgd_a(x0, grad, tau, steps, lr, lam, m=0.95, e=1e-7):
    """One worker whose gradient reaches the server tau updates late (multiverso's formula)."""
    w, ms, history = dict(x0), {k: torch.zeros_like(v) for k, v in x0.items()}, [dict(x0)]
    for s in range(steps):
        shadow = history[max(0, s - tau)]                 # the weights the gradient was taken at
        g = grad(shadow)
        for k in w:
            ms[k] = ms[k] * m + (1 - m) * g[k] * g[k]
        w = {k: w[k] - lr * (g[k] + lam / torch.sqrt(ms[k] + e) * g[k] * g[k] * (w[k] - shadow[k])) for k in w}
        history.append(w)
    return history


@pytest.mark.parametrize("tau", [1, 2, 4, 8])
def test_dc_asgd_a_equals_the_authors_parameter_server(tau):
    x0, grad = make(21, shapes=SHAPES)
    ours, _ = run(dc_asgd_adaptive(sgd(0.005), tau, lam=2.0, beta=0.95, eps=1e-7), x0, grad, 25 + tau)
    server = parameter_server_dc_asgd_a(x0, grad, tau, 25, lr=0.005, lam=2.0)
    for t in range(tau + 1):
        assert all(torch.equal(ours[t][k], x0[k]) for k in x0)   # the pipeline fills
    for s in range(26):
        for k in x0:
            torch.testing.assert_close(ours[s + tau][k], server[s][k], rtol=1e-10, atol=1e-12)


def test_the_reference_tells_the_correction_apart():
    """The parameter-server reference is sensitive to the correction: plain delayed SGD
    and plain DC-ASGD (lmo.delay) both miss it."""
    x0, grad = make(22, shapes=SHAPES)
    server = parameter_server_dc_asgd_a(x0, grad, 2, 20, lr=0.005, lam=2.0)
    for other in (delayed(sgd(0.005), 2), delayed(sgd(0.005), 2, dc_asgd=2.0)):
        traj, _ = run(other, x0, grad, 22)
        assert max((traj[22][k] - server[20][k]).abs().max() for k in x0) > 1e-6


def marin_dc_asgd_ema_loop(inner, x0, grad, tau, steps, lam, beta):
    """marin's wrap_delayed(corrector="dc_asgd_ema"), transcribed."""
    zeros = {k: torch.zeros_like(v) for k, v in x0.items()}
    x, s = dict(x0), inner.init(x0)
    grad_buf = [dict(zeros) for _ in range(tau)]
    param_buf = [dict(x0) for _ in range(tau)]           # seeded with the initial weights
    v, traj = dict(zeros), [dict(x0)]
    for _ in range(steps):
        g = grad(x)
        g_stale = ([g] + list(reversed(grad_buf)))[tau]
        w_stale = ([x] + list(reversed(param_buf)))[tau]
        grad_buf = grad_buf[1:] + [g] if tau else []
        param_buf = param_buf[1:] + [x] if tau else []
        v = {k: beta * v[k] + (1.0 - beta) * (g_stale[k] * g_stale[k]) for k in x}
        corrected = {k: g_stale[k] + lam * v[k] * (x[k] - w_stale[k]) for k in x}
        u, s = inner.update(corrected, s, x)
        x = {k: x[k] + u[k] for k in x}
        traj.append(x)
    return traj


@pytest.mark.parametrize("tau", [1, 2, 4, 8])
@pytest.mark.parametrize("inner", ["sgd", "signum"])
def test_dc_asgd_ema_equals_marins_harness(tau, inner):
    """No index shift: both models fill for tau steps. marin feeds the inner optimizer zero
    gradients meanwhile, which leave SGD and decay-free Signum (momentum 0, sign(0) = 0) at
    rest; an optimizer that counts steps (AdamW's bias correction) would differ."""
    x0, grad = make(23, shapes=SHAPES)
    make_inner = {"sgd": lambda: sgd(0.005), "signum": lambda: signum(0.01, momentum=0.9)}[inner]
    ours, _ = run(dc_asgd_ema(make_inner(), tau, lam=1.0, beta=0.99), x0, grad, 25)
    theirs = marin_dc_asgd_ema_loop(make_inner(), x0, grad, tau, 25, lam=1.0, beta=0.99)
    for t in range(26):
        for k in x0:
            torch.testing.assert_close(ours[t][k], theirs[t][k], rtol=1e-10, atol=1e-12)
    if inner == "sgd":   # the correction is not negligible here (Signum's signs mostly survive it)
        plain, _ = run(delayed(make_inner(), tau), x0, grad, 25)
        assert max((plain[25][k] - theirs[25][k]).abs().max() for k in x0) > 1e-6


def test_correction_is_zero_where_tau_is_zero_and_tracks_the_ema():
    x0, grad = make(24, shapes=SHAPES)
    opt = dc_asgd_adaptive(adamw(0.01), {"a": 2, "b": 0, "c": 1}, beta=0.9)
    s = opt.init(x0)
    g = grad(x0)
    _, s = opt.update(g, s, x0)
    for k in x0:
        torch.testing.assert_close(s.sq_avg[k], 0.1 * g[k] * g[k], rtol=1e-14, atol=0)


@pytest.mark.parametrize("bad", [dict(lam=-1.0), dict(beta=1.0), dict(eps=0.0), dict(eps=float("nan"))])
def test_refusals_name_the_argument(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        dc_asgd_adaptive(adamw(0.01), 1, **bad)


@pytest.mark.parametrize("build", [lambda o, d: dc_asgd_adaptive(o, d, lam=1.5, beta=0.9, eps=1e-6),
                                   lambda o, d: dc_asgd_ema(o, d, lam=0.7, beta=0.8)], ids=["adaptive", "ema"])
def test_the_two_halves_are_the_update_and_a_scale_between_them_is_a_scaled_inner(build):
    """compensate -> compensated_update is the wrapper's update bit for bit; a scalar c on g~
    between them (a pipeline stage's share of a global-norm clip) is the wrapper around c * inner,
    which differs from scaling the raw gradient (the order the halves exist for)."""
    x0, grad = make(25, shapes=SHAPES)
    taus, c = {"a": 2, "b": 0, "c": 1}, 0.3
    opt, plain = build(sgd(0.01), taus), delayed(sgd(0.01), taus)
    scaled = build(sgd(0.01 * c), taus)    # sgd is linear in g: inner(c g~) = sgd(c lr)(g~)
    comp = compensation_of(opt)
    x = {"whole": dict(x0), "halves": dict(x0), "scaled": dict(x0), "halves_c": dict(x0)}
    s = {k: opt.init(x0) for k in x}
    for _ in range(6):
        u, s["whole"] = opt.update(grad(x["whole"]), s["whole"], x["whole"])
        g_t, v = compensate(grad(x["halves"]), s["halves"], comp)
        h, s["halves"] = compensated_update(plain, g_t, v, s["halves"], x["halves"])
        us, s["scaled"] = scaled.update(grad(x["scaled"]), s["scaled"], x["scaled"])
        g_t, v = compensate(grad(x["halves_c"]), s["halves_c"], comp)
        hc, s["halves_c"] = compensated_update(plain, {k: c * w for k, w in g_t.items()}, v, s["halves_c"],
                                               x["halves_c"])
        for k in x0:
            assert torch.equal(h[k], u[k])
            torch.testing.assert_close(hc[k], us[k], rtol=1e-12, atol=1e-14)
        x = {"whole": apply_updates(x["whole"], u), "halves": apply_updates(x["halves"], h),
             "scaled": apply_updates(x["scaled"], us), "halves_c": apply_updates(x["halves_c"], hc)}
    # scaling the raw gradient instead is another trajectory for the EMA's reading (DC-ASGD-a's g~ is
    # homogeneous of degree 1 in g up to eps, so a fixed scale commutes with it; a clip's c does not:
    # ||g~|| is not ||g||)
    if comp.correction != "dc_asgd_ema":
        return
    raw, xr = opt.init(x0), dict(x0)
    for _ in range(6):
        ur, raw = opt.update({k: c * w for k, w in grad(xr).items()}, raw, xr)
        xr = apply_updates(xr, ur)
    assert max(float((xr[k] - x["halves_c"][k]).abs().max()) for k in x0) > 1e-6


def test_compensation_of_names_what_it_reads():
    assert compensation_of(dc_asgd_ema(sgd(0.1), 1, lam=0.5, beta=0.9)) == ("dc_asgd_ema", 0.5, 0.9, 0.0)
    with pytest.raises(ValueError, match="not a DC-ASGD-a / -EMA wrapper"):
        compensation_of(delayed(sgd(0.1), 1))

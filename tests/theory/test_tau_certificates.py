"""Certificates beyond one step (theory.checks.certificates.tau_step): the relations are those of
lmo's tau-step delay and weight-prediction wrappers, tau = 1 reduces to the one-step certificates,
the stored values match fresh PEPit solves on a sub-grid, no derived term is below its certificate,
and docs/proof.md holds the section."""
from pathlib import Path

import numpy as np
import pytest
import torch

from theory.checks.certificates import relations as R
from theory.checks.certificates import tau_step as TS

ROOT = Path(__file__).resolve().parents[2]


def _run(kind: str, tau: int, mu=0.3, eta=0.1, steps=10, seed=0):
    """A real run of lmo's wrapper (normalized SGD with momentum, m_0 = g_0) on a quadratic in R^3:
    the gradient points z_t (lmo.gradient_point), y_t (virtual_iterate) and d_t = y_{t+1} - y_t."""
    import lmo
    from lmo import L2, lmo_momentum
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    A, b = (A + A.T) / 2, torch.randn(3, generator=gen, dtype=torch.float64)
    inner = lmo_momentum(eta, L2(event_ndim=1), mu=mu, init_momentum="grad")
    opt = lmo.delayed(inner, tau) if kind == "delay" else lmo.weight_prediction(inner, delay=tau)
    x = {"w": torch.randn(3, generator=gen, dtype=torch.float64)}
    state = opt.init(x)
    zs, ys = [], []
    for _ in range(steps + 1):
        z = lmo.gradient_point(state, x)["w"].clone()
        zs.append(z)
        ys.append(opt.virtual_iterate(x, state)["w"].clone())
        upd, state = opt.update({"w": A @ z + b}, state, x)
        x = {"w": x["w"] + upd["w"]}
    ys_t = torch.stack(ys).numpy()
    d = np.diff(ys_t, axis=0)            # y_{t+1} - y_t = d_t: the steps the virtual iterate takes
    return torch.stack(zs).numpy(), ys_t, d


@pytest.mark.parametrize("kind", TS.KINDS)
@pytest.mark.parametrize("tau", [1, 2, 4])
def test_relations_reproduce_lmos_wrappers(kind, tau):
    zs, ys, d = _run(kind, tau)
    assert np.allclose(np.linalg.norm(d, axis=1), 0.1, rtol=1e-9)      # every step has norm eta
    for t in range(len(d)):
        X, target = TS.points(kind, t, tau)
        basis = np.vstack([ys[:1], d[:t]])
        assert np.allclose(X @ basis, zs[: t + 1], atol=1e-12), (kind, tau, t)
        assert np.allclose(target @ basis, ys[t], atol=1e-12)


def test_tau_one_is_the_one_step_certificate():
    for t in range(6):
        assert np.allclose(TS.points("delay", t, 1)[0], R.points("delayed", t)[0])
        # prediction at tau = 1: z_j = y_j - d_{j-1} + d_{j-2}, EF's gradient point x_j exactly
        assert np.allclose(TS.points("prediction", t, 1)[0], R.points("ef", t)[0])
    from theory.checks.certificates.stored import VALUES
    for mu in TS.MUS:
        for t in (1, 2, 4, 8):
            assert TS.stored()[("prediction", mu, t, 1)] == pytest.approx(VALUES[("ef", mu, t)], abs=2e-4)


@pytest.fixture(scope="module")
def fresh():
    from theory.checks.certificates import pep
    pep.require_pepit()
    cells = [("delay", 0.5, 4, 2), ("delay", 0.9, 8, 4), ("prediction", 0.5, 4, 2), ("prediction", 0.9, 4, 4)]
    return {c: TS.solve_cell(*c) for c in cells}


def test_stored_values_match_fresh_solves(fresh):
    for c, v in fresh.items():
        assert abs(TS.stored()[c] - v) < 1e-4, c


def test_no_derived_term_below_the_certificate_and_the_horizon_cap():
    vals = TS.stored()
    assert set(vals) == set(TS.grid())
    for (k, mu, t, tau), v in vals.items():
        assert TS.holds(v, TS.derived_t(k, mu, t, tau)), (k, mu, t, tau)
        if t <= tau:        # no update has landed: every gradient at y_0, worst case t L eta
            assert v == pytest.approx(t, abs=2e-4)
    # the delay's derived term is attained at mu = 0.9 once t > tau: lag + tau (closed form written here)
    for tau in (1, 2, 4):
        lag = 0.1 * (1 - 0.1 ** 8) / 0.9
        assert vals[("delay", 0.9, 8, tau)] == pytest.approx(lag + tau, abs=2e-4)


def test_a_planted_too_small_derived_term_is_caught():
    """The lemma with r <= eta for every tau (the one-step cap) is below the certificate at tau >= 2."""
    vals = TS.stored()
    assert not TS.holds(vals[("delay", 0.9, 8, 4)], TS.derived_t("delay", 0.9, 8, 1))


def test_growth_and_docs():
    g4 = TS.growth(TS.stored(), 4)
    assert g4[("delay", 0.9)] == pytest.approx((0.1 * (1 - 0.1 ** 8) / 0.9 + 4) / (0.1 * (1 - 0.1 ** 8) / 0.9 + 1), abs=1e-3)
    assert TS.markdown() in (ROOT / "docs" / "proof.md").read_text()

"""theory.checks.certificates: the PEP is posed on the wrappers' own point relations, no derived
drift is below its certificate, planted too-small drifts are caught, and the certificate is
attained by explicit instances (docs/proof.md, 'Certified worst cases (PEPit)').

PEPit and cvxpy come with the dev extra (make test installs them): without them these tests FAIL
with the install command, they never skip."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from theory.checks.certificates import relations as R
from theory.checks.certificates import table as T
from theory.records.bound import DELAYED, EF, SYNC, VARIANTS

ROOT = Path(__file__).resolve().parents[2]
#: the sub-grid solved here (27 PEPs, about 2 s)
CELLS = [(v, mu, t) for v in VARIANTS for mu in (0.1, 0.5, 1.0) for t in (1, 2, 4)]


def _pep():
    """theory.checks.certificates.pep with PEPit importable, or a test failure saying how to install it."""
    from theory.checks.certificates import pep
    try:
        pep.require_pepit()
    except ImportError as e:
        pytest.fail(f"PEPit is missing: {e}. Install the dev extra: pip install -e '.[dev]' (make test does)")
    return pep


@pytest.fixture(scope="module")
def rows():
    _pep()
    return T.compute(CELLS)


# ----------------------------------------------------------------------------- the relations, on the real wrappers
def _run(variant: str, mu: float, eta: float, steps: int, seed: int = 0):
    """A real run of normalized SGD with momentum (lmo.lmo_momentum, L2 geometry, m_0 = g_0) under the
    variant's wrapper (lmo.variants.Delay(...).wrap) on f(x) = x^T A x / 2 + b^T x, A symmetric indefinite, in R^3.
    Returns x_0..x_T, y_0..y_T (opt.virtual_iterate), g_0..g_T, m_0..m_T and d_t = -eta m_t/||m_t||,
    the last computed from the momentum, not from the wrapper's bookkeeping."""
    from lmo import L2, lmo_momentum
    from lmo import variants as V
    gen = torch.Generator().manual_seed(seed)
    A = torch.randn(3, 3, generator=gen, dtype=torch.float64)
    A, b = (A + A.T) / 2, torch.randn(3, generator=gen, dtype=torch.float64)
    opt = V.Delay({SYNC: V.SYNC, DELAYED: V.TWO_BW, EF: V.EF}[variant]).wrap(
        lmo_momentum(eta, L2(event_ndim=1), mu=mu, init_momentum="grad"))
    x = {"w": torch.randn(3, generator=gen, dtype=torch.float64)}
    state = opt.init(x)
    xs, ys, gs, ms, ds = [], [], [], [], []
    for _ in range(steps + 1):
        xs.append(x["w"].clone())
        ys.append(opt.virtual_iterate(x, state)["w"].clone())
        g = A @ x["w"] + b
        gs.append(g)
        upd, state = opt.update({"w": g}, state, x)
        m = (state.momentum if variant == SYNC else state.inner.momentum)["w"]
        ms.append(m.clone())
        ds.append(-eta * m / torch.linalg.vector_norm(m))
        x = {"w": x["w"] + upd["w"]}
    return [torch.stack(a).numpy() for a in (xs, ys, gs, ms, ds)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_relations_reproduce_a_real_run_of_the_wrapper(variant):
    mu, eta, steps = 0.3, 0.1, 6
    xs, ys, gs, ms, ds = _run(variant, mu, eta, steps)
    assert np.allclose(xs[0], ys[0])                               # y_0 = x_0: d_{-1} = d_{-2} = 0
    for t in range(steps + 1):
        X, target = R.points(variant, t)
        basis = np.vstack([ys[:1], ds[:t]])                        # (y_0, d_0, ..., d_{t-1})
        assert np.allclose(X @ basis, xs[:t + 1], atol=1e-12), (variant, t)
        assert np.allclose(target @ basis, xs[t] if variant == SYNC else ys[t], atol=1e-12), (variant, t)
        assert np.allclose(R.weights(mu, t) @ gs[:t + 1], ms[t], atol=1e-12), t   # m_t = sum_j w_{t,j} g_j


def test_weights_closed_form():
    for mu, t in [(0.3, 0), (0.3, 5), (1.0, 3), (0.05, 8)]:
        w = R.weights(mu, t)
        assert np.isclose(w.sum(), 1.0)
        assert np.isclose(w @ (t - np.arange(t + 1)), R.mean_lag(mu, t))


# ----------------------------------------------------------------------------- the certificate
def test_t0_is_exactly_zero():
    pep = _pep()
    for v in VARIANTS:                                             # m_0 = g_0 and y_0 = x_0
        assert pep.solve(v, 0.3, 0).value == pytest.approx(0.0, abs=1e-8)


def test_no_derived_term_below_the_certificate(rows):
    bad = [r for r in rows if not r.holds()]
    assert not bad, bad
    assert T.verdict(rows).startswith("holds")


def test_stored_values_match_fresh_solves(rows):
    """docs/proof.md's table is rendered from the stored values: they must be what PEPit says now."""
    from theory.checks.certificates.__main__ import STORED, stale, stored_text
    assert not stale(rows), "stale: run python -m theory.checks.certificates --write"
    assert STORED.read_text() == stored_text(T.stored_rows())    # the file is the tool's own output
    assert T.certificates_markdown() in (ROOT / "docs" / "proof.md").read_text(), \
        "docs/proof.md is stale: run python -m theory --all --markdown docs/proof.md"


def test_planted_too_small_drifts_are_caught(rows):
    by = {(r.variant, r.mu, r.t): r for r in rows}
    # 0.8 x the sync drift: the certificate reaches 0.9375 of it at mu = 0.5, t = 4
    assert not by[("sync", 0.5, 4)].holds(0.8 * by[("sync", 0.5, 4)].derived)
    # a wrong mu-dependence, L eta (1-mu)^2/mu (= the drift at mu -> 0, half of it at mu = 0.5)
    assert not by[("sync", 0.5, 4)].holds((1 - 0.5) ** 2 / 0.5)
    # the delayed lemma without its + L eta (the sync drift L eta (1-mu)/mu): 0 at mu = 1, certified L eta
    assert not by[("delayed", 1.0, 1)].holds(R.derived_uniform("sync", 1.0))
    # EF with r_t <= eta instead of 2 eta: drift + L eta = 1 at mu = 1, certified 2 L eta
    assert not by[("ef", 1.0, 2)].holds(R.derived_uniform("sync", 1.0) + 1.0)
    planted = [dataclasses.replace(r, derived=0.8 * r.derived) for r in rows]
    assert T.verdict(planted).startswith("VIOLATED")


def test_the_certificate_is_attained(rows):
    """Closed forms written here: sync L eta (1-mu)(1-(1-mu)^t)/mu, delayed that + L eta (1 - (1-mu)^t)
    (both attained by f = L x^2/2 with aligned steps), EF 2 L eta at mu = 1, t >= 2 (d_{t-1} = -d_{t-2})."""
    for r in rows:
        lag = (1 - r.mu) * (1 - (1 - r.mu) ** r.t) / r.mu
        if r.variant == "sync":
            assert r.certified == pytest.approx(lag, abs=2e-4)
        if r.variant == "delayed":
            assert r.certified == pytest.approx(lag + 1 - (1 - r.mu) ** r.t, abs=2e-4)
        if r.variant == "ef" and r.mu == 1.0:
            assert r.certified == pytest.approx(2.0 if r.t >= 2 else 1.0, abs=2e-4)
        if r.variant != "ef":
            assert r.certified == pytest.approx(r.aligned, abs=2e-4)


@pytest.mark.parametrize("variant", [SYNC, DELAYED])
def test_a_real_run_attains_the_certificate(variant):
    """sigma = 0, f = x^2/2 on the line far from the minimiser: every step is -eta, and the measured
    |m_t - f'(y_t)| of the wrapper's own run equals the certificate (L = 1, eta = 0.1: homogeneity)."""
    from lmo import L2, lmo_momentum
    from lmo import variants as V
    pep = _pep()
    mu, eta, t = 0.3, 0.1, 4
    opt = V.Delay({SYNC: V.SYNC, DELAYED: V.TWO_BW}[variant]).wrap(
        lmo_momentum(eta, L2(event_ndim=1), mu=mu, init_momentum="grad"))
    x = {"w": torch.tensor([100.0], dtype=torch.float64)}
    state = opt.init(x)
    for _ in range(t + 1):
        y = opt.virtual_iterate(x, state)["w"]
        upd, state = opt.update({"w": x["w"].clone()}, state, x)
        m = (state.momentum if variant == SYNC else state.inner.momentum)["w"]
        measured = float(abs(m - y).item())
        x = {"w": x["w"] + upd["w"]}
    assert measured == pytest.approx(eta * pep.solve(variant, mu, t).certified, rel=1e-6)


def test_worst_case_vectors_are_an_l_smooth_instance():
    """EF at mu = 0.3, t = 2, where the 1-D instance falls short (1.4 < 1.523): the worst case's Gram
    matrix turned back into points and gradients satisfies the steps' constraints, the L-smooth
    interpolation conditions and ||g_i - g_j|| <= L ||x_i - x_j||, and attains the certificate."""
    pep = _pep()
    wc = pep.solve("ef", 0.3, 2)
    chk = pep.recheck(wc, "ef", 0.3, 2)
    assert wc.certified > R.aligned_value("ef", 0.3, 2) + 0.1
    assert chk["step_ratio"] <= 1 + 1e-6 and chk["point_error"] < 1e-9
    assert chk["interpolation_gap"] >= -1e-6
    assert chk["value_from_points"] == pytest.approx(wc.certified, rel=1e-5)
    xs, gs = np.vstack([wc.xs, wc.target]), np.vstack([wc.grads, wc.target_grad])
    for i in range(len(xs)):
        for j in range(len(xs)):
            assert np.linalg.norm(gs[i] - gs[j]) <= np.linalg.norm(xs[i] - xs[j]) + 1e-5
    # a planted wrong datum breaks the interpolation check
    assert pep.interpolation_gap(xs, gs * 3.0, np.concatenate([wc.fvals, [wc.target_f]]), 1.0) < -1e-3


def test_homogeneity():
    pep = _pep()
    base = pep.solve("ef", 0.3, 2).certified
    for L, eta in [(3.0, 0.2), (0.5, 4.0)]:
        assert pep.solve("ef", 0.3, 2, L=L, eta=eta).certified == pytest.approx(L * eta * base, rel=1e-5)


def test_import_theory_needs_no_pepit():
    """With PEPit unimportable, theory and the table (from stored values) still import and render;
    solving says how to install PEPit."""
    code = ("import sys; sys.modules['PEPit'] = None; sys.modules['cvxpy'] = None\n"
            "import theory\n"
            "from theory.checks.certificates import table, pep\n"
            "assert 'Certified worst cases' in table.certificates_markdown()\n"
            "try:\n    pep.solve('sync', 0.5, 1)\nexcept ImportError as e:\n    assert \"'.[pep]'\" in str(e)\n"
            "else:\n    raise SystemExit('solved without PEPit')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr

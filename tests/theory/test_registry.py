"""Registry names, Bound fields and evaluate on numpy / torch against direct formulas."""
import math

import numpy as np
import pytest
import torch

from theory.records import registry
from theory.records.bound import QUANTITIES, Bound

NAMES = ["kovalev_sync_lemma", "kovalev_sync_theorem", "paper_delayed_noise_literal",
         "paper_delayed_noise_consistent", "derived_sync_lemma", "derived_sync_theorem",
         "derived_delayed_lemma", "derived_delayed_lemma_x", "derived_delayed_theorem",
         "derived_ef_lemma_trajectory", "derived_ef_lemma_worst",
         "derived_ef_theorem_trajectory", "derived_ef_theorem_worst"]


def test_interface_names_registered():
    got = registry.names()
    for n in NAMES:
        assert n in got
        b = registry.get(n)
        assert b.name == n and b.quantity in QUANTITIES
        assert set(b.assumptions) <= {"A1", "A2", "A3", "A4"}
    with pytest.raises(KeyError, match="no bound named"):
        registry.get("nope")


def direct(name, L, sigma, rho, eta, mu, Delta_0=1.0, K=10.0, t=0, r_w=0.0, r_avg=0.0):
    """Independent hand-typed formulas (math module, one point)."""
    s = math.sqrt
    noise = (1 - mu) ** t * rho * sigma + s(mu) * rho * sigma
    desc = Delta_0 / (eta * K) + 2 * rho * sigma / (mu * K) + 2 * s(mu) * rho * sigma + L * eta / 2
    return {
        "derived_delayed_lemma": noise + L * eta / mu,
        "derived_sync_theorem": desc + 2 * L * eta * (1 - mu) / mu,
        "kovalev_sync_theorem": Delta_0 / (eta * K) + 2 * rho * sigma / (mu * K)
        + 2 * s(mu) * rho * sigma + 1.5 * L * eta + 2 * L * eta / mu,
        "paper_delayed_noise_consistent": s(2 * mu * rho**2 * sigma**2 + 8 * L**2 * eta**2),
        "derived_ef_theorem_trajectory": desc + 2 * L * eta * (1 - mu) / mu + 2 * L * r_avg,
    }[name]


@pytest.mark.parametrize("name", ["derived_delayed_lemma", "derived_sync_theorem",
                                  "kovalev_sync_theorem", "paper_delayed_noise_consistent",
                                  "derived_ef_theorem_trajectory"])
def test_evaluate_numpy_and_torch_match_direct(name):
    rng = np.random.default_rng(0)
    n = 7
    c = dict(L=rng.uniform(0.1, 5, n), sigma=rng.uniform(0.1, 5, n), rho=rng.uniform(1, 4, n),
             eta=rng.uniform(1e-3, 1, n), mu=rng.uniform(0.01, 1, n), Delta_0=rng.uniform(0.1, 9, n),
             K=rng.integers(1, 1000, n).astype(float), t=rng.integers(0, 50, n).astype(float),
             r_w=rng.uniform(0, 1, n), r_avg=rng.uniform(0, 1, n))
    b = registry.get(name)
    want = np.array([direct(name, **{k: v[i] for k, v in c.items()}) for i in range(n)])
    got = b.evaluate(**c)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    tt = {k: torch.tensor(v, dtype=torch.float64) for k, v in c.items()}
    got_t = b.evaluate(**tt)
    assert isinstance(got_t, torch.Tensor) and got_t.dtype == torch.float64
    np.testing.assert_allclose(got_t.numpy(), want, rtol=1e-12)


def test_evaluate_broadcasts_scalars_and_requires_names():
    b = registry.get("derived_sync_lemma")
    out = b.evaluate(L=1.0, sigma=np.ones((2, 3)), rho=1.0, eta=0.1, mu=0.5, t=0)
    assert out.shape == (2, 3)
    assert isinstance(b.evaluate(L=1.0, sigma=1.0, rho=1.0, eta=0.1, mu=0.5, t=0), float)
    with pytest.raises(TypeError, match="missing constants"):
        b.evaluate(L=1.0)
    out_t = registry.get("kovalev_sync_lemma").evaluate(
        L=torch.ones(4, dtype=torch.float32), sigma=1.0, rho=1.0, eta=0.1, mu=0.5, t=2)
    assert out_t.shape == (4,) and out_t.dtype == torch.float32


def test_bound_rejects_bad_fields():
    b = registry.get("derived_sync_lemma")
    with pytest.raises(ValueError, match="variant"):
        Bound(**{**_fields(b), "variant": "async"})
    with pytest.raises(ValueError, match="quantity"):
        Bound(**{**_fields(b), "quantity": "loss"})


def _fields(b):
    return dict(name=b.name, expr=b.expr, quantity=b.quantity, variant=b.variant,
                assumptions=b.assumptions, source=b.source, status=b.status, valid=b.valid)

"""The LMO relay with gradient noise (theory.dynamics.lmo_oscillation.noisy_gaps,
predictions.relay_noise_ratios): noiseless it is the relay, very noisy it tends to the bound's
linear law, and docs/tau_law.md prints Muon's table as computed."""
import math
from pathlib import Path

import numpy as np

from theory.dynamics import lmo_oscillation as O
from theory.dynamics import predictions as P

ROOT = Path(__file__).resolve().parents[2]


def test_noise_free_is_the_relay_and_much_noise_tends_to_the_linear_law():
    r = P.relay_noise_ratios("muon")
    point = P.relay_ratios("muon")
    for q in ((8, 2), (4, 1)):
        assert math.isclose(r[0.0][q], point[q][0], rel_tol=0.15), (q, r[0.0][q], point[q][0])
        assert r[100.0][q] < r[0.0][q]
        assert 3.5 <= r[100.0][q] < 5.5   # towards hi / lo = 4, the bound's law
    assert (ROOT / "docs" / "tau_law.md").read_text().count(P.noise_table("muon")) == 1


def test_noisy_gaps_at_zero_noise_is_the_noiseless_model_and_exact_at_mu_1():
    g = O.noisy_gaps(1.0, False, 0.0, taus=(1, 4), steps=6000, burn=2000)
    for tau in (1, 4):
        assert math.isclose(g[tau], O.exact_gap(tau), rel_tol=0.02)
    x = O.sign_descent(2, 0.3, True, 1.0, 1.0, 200, np.array([0.4]), sigma=0.0)
    assert np.array_equal(x, O.sign_descent(2, 0.3, True, 1.0, 1.0, 200, np.array([0.4])))

"""Delayed Adam on a noisy quadratic settles at the delayed edge (issue 48, item 4: AdamW's law).

Added after theory.dynamics.predictions' first commit (9ded5e9), before any kept tau > 1 record
was read: the stall model there assumed Adam's preconditioned step self-stabilises at the
delayed edge k_c(tau); this module checks that premise and derives what it implies for the
sharp direction itself. The model, in the notation of docs/design.md §3-§4 (mu = 1 - beta_1)::

    f(x) = h x^2 / 2,  g_t = h x_t + sigma xi_t  (xi_t standard normal, independent)
    m_t = beta_1 m_{t-1} + (1 - beta_1) g_t,   v_t = beta_2 v_{t-1} + (1 - beta_2) g_t^2
    d_t = -eta m^_t / (sqrt(v^_t) + eps)       (bias-corrected, as lmo.adamw; no weight decay)
    x_{t+1} = x_t + d_{t-tau}

With v frozen this is the linear method of theory.dynamics.stability with k = eta h / sqrt(v).
Let K = eta h / sigma (the k the noise alone would give). If K < k_c(tau) the iterate sits in
the noise floor; if K > k_c(tau) the oscillation grows until v has grown enough that

    k_eff = eta h / sqrt(v) = k_c(tau)            (self-stabilisation; measured by ``simulate``)

and then, v being the mean of g^2 = h^2 x^2 + sigma^2 (+ a cross term of mean 0),
E h^2 x^2 = (eta h / k_c)^2 - sigma^2, i.e. the excess loss of the sharp direction is

    E h x^2 / 2 = h eta^2 / (2 k_c(tau)^2) - sigma^2 / (2 h)          (``edge_excess``)

independent of K: past its edge, a sharp direction costs Adam h eta^2 / (2 k_c^2), the LMO
relay's form with the edge in place of the cycle. Its growth in tau is (k_c(lo) / k_c(hi))^2.
"""
from __future__ import annotations

import numpy as np

from .stability import critical_step

__all__ = ["simulate", "edge_excess"]


def simulate(tau: int, K, mu: float = 0.1, beta2: float = 0.999, eta: float = 1e-2, h: float = 1.0,
             steps: int = 20000, seeds: int = 4, seed: int = 0, eps: float = 0.0, noise=None) -> dict:
    """Delayed Adam (module docstring) for each K in ``K`` (sigma = eta h / K) and ``seeds``
    independent noise sequences, vectorised. Returns {"x": x_0..x_steps (rows; columns
    K-major, seeds within), "k_eff": median over the second half of eta h / sqrt(v^_t) per K,
    "excess": mean over the second half of h x^2 / 2 / (h eta^2) per K}. ``noise``: xi as an
    array (steps, len(K) * seeds) instead of a seeded draw."""
    if isinstance(tau, bool) or int(tau) != tau or tau < 0:
        raise ValueError(f"tau must be an int >= 0, got {tau!r}")
    if not 0.0 < mu <= 1.0:
        raise ValueError(f"mu must be in (0, 1], got {mu!r}")
    K = np.repeat(np.atleast_1d(np.asarray(K, dtype=float)), seeds)
    sigma = eta * h / K
    xi = np.random.default_rng(seed).standard_normal((steps, K.size)) if noise is None else np.asarray(noise)
    b1 = 1.0 - mu
    x = np.empty((steps + 1, K.size))
    x[0] = 0.0
    m, v, queue = np.zeros(K.size), np.zeros(K.size), [np.zeros(K.size) for _ in range(int(tau))]
    k_eff = np.empty((steps, K.size))
    for t in range(1, steps + 1):
        g = h * x[t - 1] + sigma * xi[t - 1]
        m = b1 * m + (1 - b1) * g
        v = beta2 * v + (1 - beta2) * g * g
        vh = np.sqrt(v / (1 - beta2 ** t))
        queue.append(-eta * (m / (1 - b1 ** t)) / (vh + eps))
        x[t] = x[t - 1] + queue.pop(0)
        k_eff[t - 1] = eta * h / vh
    half = steps // 2
    per_k = lambda a: a.reshape(-1, seeds).mean(axis=1)
    return {"x": x, "k_eff": per_k(np.median(k_eff[half:], axis=0)),
            "excess": per_k(np.mean(x[half + 1:] ** 2, axis=0) / (2 * eta ** 2))}


def edge_excess(tau: int, mu: float = 0.1, K: float = np.inf) -> float:
    """(E h x^2 / 2) / (h eta^2) past the edge: 1 / (2 k_c(tau)^2) - 1 / (2 K^2) (sigma = eta h / K)."""
    kc = critical_step(tau, mu)
    if K <= kc:
        raise ValueError(f"K = {K} is below the edge k_c = {kc}: no self-stabilisation")
    return 0.5 / kc ** 2 - 0.5 / K ** 2

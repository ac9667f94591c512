"""Every registered bound with an example that runs (issue 49 item 7; PEPit's style: the algorithm,
its bound and a number in one place). One function per bound of theory.records.registry, named
as the bound: it runs the bound's own algorithm on an exact instance, evaluates the bound at that
run's constants and measures the quantity it bounds, and returns ``(bound, measured)``. Its
docstring's example prints both and whether the bound holds, so the check can fail: a bound that
is registered too low prints ``False`` and its doctest fails (tests/theory/test_bound_doctests.py runs
them; a registered bound without its function here fails that test too).

The algorithm (docs/design.md §4, theory.checks.witness_runs.simulate): LMO momentum with the sign
LMO, m_t = (1-mu) m_{t-1} + mu g_t (m_0 = g_0), d_t = eta lmo(m_t); sync x_{t+1} = x_t + d_t,
delayed x_{t+1} = x_t + d_{t-1}, EF x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}, on f(x) = sum_i a_i x_i^2 / 2
with a_i in [0.1, 1] (L = sum_i a_i in l_inf -> l_1, rho = sqrt(d), f* = 0) and g_t = grad f(x_t) + xi_t.
Two regimes (``REGIMES``): ``"far"``, no noise and far from the minimiser, where the momentum lags
a gradient that moves by L eta per step and the drift terms are attained (one run, d = 32, so
L > 8); ``"noisy"``, sigma = 1/2 near the minimiser, 64 seeds averaged. A lemma is read at its
last step t = T - 1, a theorem over t < K = T - 1 with Delta_0 = f(x_0).
"""
from __future__ import annotations

from ..checks.witness_runs import simulate
from ..checks.witnesses import measure
from ..records.registry import get

#: the two instances the examples run (module docstring)
REGIMES = {
    "far": dict(T=60, seeds=1, mu=0.2, eta=0.05, sigma=0.0, shape=(32,), x0_scale=100.0),
    "noisy": dict(T=60, seeds=64, mu=0.2, eta=0.05, sigma=0.5, shape=(6,), x0_scale=3.0),
}
#: the measured symbol of each quantity (theory.checks.witnesses.measure)
MEASURED = {"momentum_error_y": "E_t", "momentum_error_x": "E_x", "avg_grad_norm_y": "G", "avg_grad_norm_x": "G_x"}


def bound_and_measured(name: str, regime: str = "far", **changes) -> tuple[float, float]:
    """(the registered bound ``name`` at the run's constants, the quantity it bounds measured on the
    run): one run of the bound's own variant in ``REGIMES[regime]`` (``changes`` override its
    settings), averaged over its seeds; r_w and r_avg are the run's own (their seed means).

    >>> bound, measured = bound_and_measured("derived_delayed_lemma", "noisy")
    >>> print(f"bound {bound:.4f}, measured {measured:.4f}, holds: {bound >= measured}")
    bound 1.3030, measured 0.6047, holds: True
    """
    b = get(name)
    run = {**REGIMES[regime], **changes}
    v = measure(simulate(b.variant, seed=0, noise="gaussian", **run))
    t = run["T"] - 1
    q = v[MEASURED[b.quantity]]
    measured = float(q[:, t].mean()) if q.ndim == 2 else float(q.mean())
    constants = dict(L=v["L"], rho=v["rho"], sigma=run["sigma"], eta=run["eta"], mu=run["mu"], t=t, K=v["K"],
                     Delta_0=v["Delta_0"], r_w=float(v["r_w"][:, t].mean()), r_avg=float(v["r_avg"].mean()))
    return float(b.evaluate(**constants)), measured


def kovalev_sync_lemma(regime="far", **changes):
    """Sync LMO momentum, Kovalev's lemma as restated: E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma
    + sqrt(mu) rho sigma + L eta/mu (the package's own drift L eta (1-mu)/mu is sharper).

    >>> b, m = kovalev_sync_lemma()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 4.6493, measured 3.6966, holds: True
    """
    return bound_and_measured("kovalev_sync_lemma", regime, **changes)


def kovalev_sync_theorem(regime="noisy", **changes):
    """Sync LMO momentum, Kovalev's theorem as restated: (1/K) sum_{t<K} E||grad f(x_t)||_* <=
    Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + 3 L eta/2 + 2 L eta/mu.

    >>> b, m = kovalev_sync_theorem()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 6.1350, measured 3.1567, holds: True
    """
    return bound_and_measured("kovalev_sync_theorem", regime, **changes)


def paper_delayed_noise_literal(regime="far", **changes):
    """Delayed LMO momentum against the paper's noise term ALONE, literal parse:
    E||m_t - grad f(y_t)||_* <= sqrt(2 mu rho^2 sigma^2 + 8 L eta^2). Not a bound by itself (it leaves
    out the drift and the transient; registered valid=False): without noise the drift L eta/mu that a
    delayed run attains exceeds it.

    >>> b, m = paper_delayed_noise_literal()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 0.6099, measured 4.6273, holds: False
    """
    return bound_and_measured("paper_delayed_noise_literal", regime, **changes)


def paper_delayed_noise_consistent(regime="far", **changes):
    """Delayed LMO momentum against the paper's noise term ALONE, consistent parse:
    E||m_t - grad f(y_t)||_* <= sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2). Not a bound by itself
    (registered valid=False): the attained drift L eta/mu exceeds it.

    >>> b, m = paper_delayed_noise_consistent()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 2.6300, measured 4.6273, holds: False
    """
    return bound_and_measured("paper_delayed_noise_consistent", regime, **changes)


def paper_c1_y(regime="far", **changes):
    """Delayed LMO momentum, the paper's bound read as C1 at y_t = x_t + d_{t-1}:
    E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2) + L eta/mu.

    >>> b, m = paper_c1_y()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 7.2793, measured 4.6273, holds: True
    """
    return bound_and_measured("paper_c1_y", regime, **changes)


def paper_c2_y(regime="far", **changes):
    """Delayed LMO momentum, reading C2 at y_t: E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma
    + sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2) + L eta (1-mu)/mu.

    >>> b, m = paper_c2_y()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 6.3495, measured 4.6273, holds: True
    """
    return bound_and_measured("paper_c2_y", regime, **changes)


def paper_c1_x(regime="far", **changes):
    """Delayed LMO momentum, reading C1 at x_t (where the gradient is taken):
    E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma + sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2) + L eta/mu.

    >>> b, m = paper_c1_x()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 7.2793, measured 3.6974, holds: True
    """
    return bound_and_measured("paper_c1_x", regime, **changes)


def paper_c2_x(regime="far", **changes):
    """Delayed LMO momentum, reading C2 at x_t: E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma
    + sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2) + L eta (1-mu)/mu.

    >>> b, m = paper_c2_x()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 6.3495, measured 3.6974, holds: True
    """
    return bound_and_measured("paper_c2_x", regime, **changes)


def paper_c3_y(regime="far", **changes):
    """Delayed LMO momentum, reading C3 at y_t (C1 with the literal 8 L eta^2, not scale-invariant):
    E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(2 mu rho^2 sigma^2 + 8 L eta^2) + L eta/mu.

    >>> b, m = paper_c3_y()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 5.2592, measured 4.6273, holds: True
    """
    return bound_and_measured("paper_c3_y", regime, **changes)


def paper_c4_y(regime="far", **changes):
    """Delayed LMO momentum, reading C4 at y_t (C2 with the literal 8 L eta^2):
    E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(2 mu rho^2 sigma^2 + 8 L eta^2)
    + L eta (1-mu)/mu. Registered valid=False: false for L > 8, where a delayed run without noise
    attains L eta/mu above it (theory.results.implications.c4_ranges). Here L > 8:

    >>> simulate("delayed", **REGIMES["far"])["L"] > 8
    True
    >>> b, m = paper_c4_y()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 4.3293, measured 4.6273, holds: False
    """
    return bound_and_measured("paper_c4_y", regime, **changes)


def paper_c3_x(regime="far", **changes):
    """Delayed LMO momentum, reading C3 at x_t: E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma
    + sqrt(2 mu rho^2 sigma^2 + 8 L eta^2) + L eta/mu.

    >>> b, m = paper_c3_x()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 5.2592, measured 3.6974, holds: True
    """
    return bound_and_measured("paper_c3_x", regime, **changes)


def paper_c4_x(regime="far", **changes):
    """Delayed LMO momentum, reading C4 at x_t: E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma
    + sqrt(2 mu rho^2 sigma^2 + 8 L eta^2) + L eta (1-mu)/mu (implied at x_t in fixed units).

    >>> b, m = paper_c4_x()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 4.3293, measured 3.6974, holds: True
    """
    return bound_and_measured("paper_c4_x", regime, **changes)


def derived_sync_lemma(regime="far", **changes):
    """Sync LMO momentum: E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma
    + L eta (1-mu)/mu. Without noise, far from the minimiser, the drift is attained:

    >>> b, m = derived_sync_lemma()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 3.7194, measured 3.6966, holds: True
    """
    return bound_and_measured("derived_sync_lemma", regime, **changes)


def derived_sync_theorem(regime="noisy", **changes):
    """Sync LMO momentum: (1/K) sum_{t<K} E||grad f(x_t)||_* <= Delta_0/(eta K) + 2 rho sigma/(mu K)
    + 2 sqrt(mu) rho sigma + L eta/2 + 2 L eta (1-mu)/mu.

    >>> b, m = derived_sync_theorem()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 5.6819, measured 3.1567, holds: True
    """
    return bound_and_measured("derived_sync_theorem", regime, **changes)


def derived_delayed_lemma(regime="far", **changes):
    """Delayed LMO momentum (x_{t+1} = x_t + d_{t-1}) at y_t = x_t + d_{t-1}:
    E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma + L eta/mu; the drift
    L eta/mu is attained without noise far from the minimiser:

    >>> b, m = derived_delayed_lemma()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 4.6493, measured 4.6273, holds: True
    """
    return bound_and_measured("derived_delayed_lemma", regime, **changes)


def derived_delayed_lemma_x(regime="far", **changes):
    """Delayed LMO momentum at x_t: E||m_t - grad f(x_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma
    + L eta (1-mu)/mu (the x_t move by at most eta per step, as in sync).

    >>> b, m = derived_delayed_lemma_x()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 3.7194, measured 3.6974, holds: True
    """
    return bound_and_measured("derived_delayed_lemma_x", regime, **changes)


def derived_delayed_theorem(regime="noisy", **changes):
    """Delayed LMO momentum at y_t: (1/K) sum_{t<K} E||grad f(y_t)||_* <= Delta_0/(eta K)
    + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + L eta/2 + 2 L eta/mu.

    >>> b, m = derived_delayed_theorem()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 5.9840, measured 3.1813, holds: True
    """
    return bound_and_measured("derived_delayed_theorem", regime, **changes)


def derived_delayed_theorem_x(regime="noisy", **changes):
    """Delayed LMO momentum at x_t: (1/K) sum_{t<K} E||grad f(x_t)||_* <= Delta_0/(eta K)
    + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + L eta/2 + 2 L eta/mu + L eta.

    >>> b, m = derived_delayed_theorem_x()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 6.1350, measured 3.2648, holds: True
    """
    return bound_and_measured("derived_delayed_theorem_x", regime, **changes)


def derived_ef_lemma_trajectory(regime="far", **changes):
    """Error feedback (x_{t+1} = x_t + 2 d_{t-1} - d_{t-2}) at y_t = x_t + d_{t-1} - d_{t-2}, with the
    run's own r_w(t) = sum_j w_{t,j} E||x_j - y_j||: E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma
    + sqrt(mu) rho sigma + L eta (1-mu)/mu + L r_w(t).

    >>> b, m = derived_ef_lemma_trajectory()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 4.2233, measured 3.6981, holds: True
    """
    return bound_and_measured("derived_ef_lemma_trajectory", regime, **changes)


def derived_ef_lemma_worst(regime="far", **changes):
    """Error feedback at y_t, worst case r_t <= 2 eta: E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma
    + sqrt(mu) rho sigma + L eta (1-mu)/mu + 2 L eta.

    >>> b, m = derived_ef_lemma_worst()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 5.5791, measured 3.6981, holds: True
    """
    return bound_and_measured("derived_ef_lemma_worst", regime, **changes)


def derived_ef_theorem_trajectory(regime="noisy", **changes):
    """Error feedback at y_t with the run's own r_avg = (1/K) sum_{t<K} r_w(t):
    (1/K) sum_{t<K} E||grad f(y_t)||_* <= Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma
    + L eta/2 + 2 L eta (1-mu)/mu + 2 L r_avg.

    >>> b, m = derived_ef_theorem_trajectory()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 5.8494, measured 3.1559, holds: True
    """
    return bound_and_measured("derived_ef_theorem_trajectory", regime, **changes)


def derived_ef_theorem_worst(regime="noisy", **changes):
    """Error feedback at y_t, worst case r_avg <= 2 eta: (1/K) sum_{t<K} E||grad f(y_t)||_* <=
    Delta_0/(eta K) + 2 rho sigma/(mu K) + 2 sqrt(mu) rho sigma + L eta/2 + 2 L eta (1-mu)/mu + 4 L eta.

    >>> b, m = derived_ef_theorem_worst()
    >>> print(f"bound {b:.4f}, measured {m:.4f}, holds: {b >= m}")
    bound 6.2861, measured 3.1559, holds: True
    """
    return bound_and_measured("derived_ef_theorem_worst", regime, **changes)

"""The package's own derivations: the perturbed-gradient lemma and theorem, proved once, and
their sync / delayed / EF specialisations, Kovalev's restated bounds implied, and how the paper's
noise term arises (docs/design.md §5). Each is a `theory.proofs.derivation.Derivation`.

The perturbed-gradient lemma/theorem keep the perturbation r_t = ||x_t - y_t|| as r_w / r_avg;
sync has r = 0, delayed r_t <= eta, EF the trajectory r_w or the worst case r_t <= 2 eta.
"""
from __future__ import annotations

import sympy as sp

from ..records import package_bounds as B
from ..records import paper_readings as PR
from .derivation import (D_t, E_t, E_x, F_next, F_now, G, G_x, GNORM, INNER, MERR, N_t, S_K, W0, WK,
                         Derivation, _alg, _cite, _prem, a_, b_, k, trivial, v)
from ..records.symbols import Delta_0, K, L, eta, mu, r_avg, r_w, rho, sigma, t


def perturbed_lemma() -> Derivation:
    """E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma + L eta (1-mu)/mu + L r_w(t)."""
    sw2 = W0**2 + mu / (2 - mu) * (1 - W0**2)
    lag = (1 - mu) * (1 - W0) / mu
    steps = (
        _alg("weights sum to one", W0 + sp.Sum(WK, (k, 0, t - 1)), "==", 1,
             "unrolling m_t = (1-mu) m_{t-1} + mu g_t from m_0 = g_0 gives m_t = sum_j w_{t,j} g_j; geometric sum",
             chain=False),
        _prem("split noise and drift", E_t, N_t + D_t,
              "g_j = grad f(x_j) + xi_j and sum_j w_{t,j} = 1, then the triangle inequality"),
        _prem("noise: A4 + Jensen + martingale orthogonality + A3", N_t,
              rho * sigma * sp.sqrt(W0**2 + sp.Sum(WK**2, (k, 0, t - 1))),
              "||.||_* <= rho ||.||_2 (A4); E||Z||_2 <= sqrt(E||Z||_2^2) (Jensen); "
              "E<xi_i, xi_j> = 0 for i != j since xi_j has mean 0 given the past (A3); E||xi_j||_2^2 <= sigma^2"),
        _alg("sum of squared weights", W0**2 + sp.Sum(WK**2, (k, 0, t - 1)), "==", sw2,
             "geometric sum: sum_{j=1}^t mu^2 (1-mu)^{2(t-j)} = mu/(2-mu) (1 - (1-mu)^{2t})"),
        _alg("square root of a sum", rho * sigma * sp.sqrt(sw2), "<=",
             rho * sigma * (W0 + sp.sqrt(mu / (2 - mu))),
             "sqrt(A + B) <= sqrt(A) + sqrt(B) and 1 - (1-mu)^{2t} <= 1"),
        _alg("mu/(2-mu) <= mu", rho * sigma * (W0 + sp.sqrt(mu / (2 - mu))), "<=", B.noise(),
             "2 - mu >= 1 for mu <= 1"),
        _prem("drift: A2 + triangle inequality + y-steps <= eta", D_t,
              L * r_w + L * eta * (t * W0 + sp.Sum(WK * k, (k, 0, t - 1))),
              "||grad f(x_j) - grad f(y_t)||_* <= L r_j + L ||y_j - y_t|| (A2) and "
              "y_{k+1} = y_k + d_k with ||d_k|| <= eta, so ||y_j - y_t|| <= eta (t - j); "
              "sum_j w_{t,j} E r_j = r_w(t) by definition"),
        _alg("mean lag of the momentum", t * W0 + sp.Sum(WK * k, (k, 0, t - 1)), "==", lag,
             "arithmetico-geometric sum: sum_j w_{t,j} (t-j) = (1-mu)(1-(1-mu)^t)/mu"),
        _alg("lag bounded uniformly in t", lag, "<=", (1 - mu) / mu, "(1-mu)^t >= 0"),
    )
    return Derivation("perturbed_lemma", "derived_ef_lemma_trajectory",
                      "E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma"
                      " + L eta (1-mu)/mu + L r_w(t)", steps, start=E_t)


def perturbed_theorem() -> Derivation:
    """(1/K) sum_{t<K} E||grad f(y_t)||_* <= Delta_0/(eta K) + 2 rho sigma/(mu K)
    + 2 sqrt(mu) rho sigma + L eta/2 + 2 L eta (1-mu)/mu + 2 L r_avg.

    The lemma enters by citation (its average over t < K), not restated as a premise, so the
    chain runs through the lemma's own derivation (theory.checks.chain)."""
    S = S_K
    steps = (
        _prem("descent lemma at the virtual iterate",
              F_next, F_now + eta * INNER + L * eta**2 / 2,
              "A2 with y_{t+1} - y_t = d_t = eta lmo(m_t), ||lmo(m_t)|| <= 1 (docs/design.md §4: y follows the sync recursion)",
              chain=False),
        _prem("LMO inner product", INNER, -GNORM + 2 * MERR,
              "<m, lmo(m)> = -||m||_*, Hölder <g - m, lmo(m)> <= ||g - m||_*, and ||m||_* >= ||g||_* - ||g - m||_*",
              chain=False),
        _prem("telescope over t < K", G, Delta_0 / (eta * K) + 2 * S + L * eta / 2,
              "sum the descent inequality with the LMO inner product, f(y_0) = f(x_0) (d_{-1} = d_{-2} = 0),"
              " f(y_K) >= f* (A1), divide by eta K"),
        _cite(S, "derived_ef_lemma_trajectory", average=True),
        _alg("sum of the transient", sp.Sum((1 - mu) ** k, (k, 0, K - 1)), "==", (1 - (1 - mu) ** K) / mu,
             "geometric sum sum_{k<K} (1-mu)^k = (1 - (1-mu)^K)/mu"),
        _alg("transient bounded", (1 - (1 - mu) ** K) / mu, "<=", 1 / mu, "(1-mu)^K >= 0"),
    )
    return Derivation("perturbed_theorem", "derived_ef_theorem_trajectory",
                      "(1/K) sum_{t<K} E||grad f(y_t)||_* <= Delta_0/(eta K) + 2 rho sigma/(mu K)"
                      " + 2 sqrt(mu) rho sigma + L eta/2 + 2 L eta (1-mu)/mu + 2 L r_avg", steps, start=G)


def _special(name, bound, statement, general, premise, reason, sub, final, r_sym, start, cites):
    """Specialise a general bound (expr in r_sym) with r <= sub (or r = 0)."""
    steps = [_cite(start, cites), _prem(premise[0], r_sym, sub, premise[1])]
    if sub != 0:
        steps.append(_alg("monotone in the perturbation", general, "<=", general.subs(r_sym, sub),
                          reason, where=((r_sym, sub / (1 + v)),), chain=False))
    if not trivial(general.subs(r_sym, sub), final):
        steps.append(_alg("simplify", general.subs(r_sym, sub), "==", final, "algebra"))
    return Derivation(name, bound, statement, tuple(steps), start=start)


def package_derivations() -> list[Derivation]:
    """Every derivation of the package, general ones first."""
    lem, thm = B.DERIVED_EF_LEMMA_TRAJECTORY.expr, B.DERIVED_EF_THEOREM_TRAJECTORY.expr
    out = [perturbed_lemma(), perturbed_theorem()]
    out.append(_special("sync_lemma", "derived_sync_lemma", "sync: y_t = x_t, r = 0", lem,
                        ("sync has y_t = x_t", "r_t = 0 for every t"), "", 0,
                        B.DERIVED_SYNC_LEMMA.expr, r_w, E_t, "derived_ef_lemma_trajectory"))
    out.append(_special("sync_theorem", "derived_sync_theorem", "sync: r_avg = 0", thm,
                        ("sync has y_t = x_t", "r_avg = 0"), "", 0, B.DERIVED_SYNC_THEOREM.expr, r_avg,
                        G, "derived_ef_theorem_trajectory"))
    dprem = ("delayed: r_t = ||d_{t-1}|| <= eta",
             "y_t - x_t = d_{t-1} = eta lmo(m_{t-1}), ||lmo|| <= 1; weights sum to 1")
    out.append(_special("delayed_lemma", "derived_delayed_lemma", "delayed, at y_t", lem, dprem,
                        "L r_w increases in r_w; r_w <= eta", eta, B.DERIVED_DELAYED_LEMMA.expr, r_w,
                        E_t, "derived_ef_lemma_trajectory"))
    out.append(_special("delayed_theorem", "derived_delayed_theorem", "delayed, at y_t", thm, dprem,
                        "2 L r_avg increases in r_avg; r_avg <= eta", eta, B.DERIVED_DELAYED_THEOREM.expr, r_avg,
                        G, "derived_ef_theorem_trajectory"))
    eprem = ("EF: r_t = eta ||lmo(m_{t-1}) - lmo(m_{t-2})|| <= 2 eta",
             "y_t - x_t = d_{t-1} - d_{t-2}; triangle inequality, ||lmo|| <= 1")
    out.append(_special("ef_lemma_worst", "derived_ef_lemma_worst", "EF worst case", lem, eprem,
                        "r_w <= 2 eta", 2 * eta, B.DERIVED_EF_LEMMA_WORST.expr, r_w,
                        E_t, "derived_ef_lemma_trajectory"))
    out.append(_special("ef_theorem_worst", "derived_ef_theorem_worst", "EF worst case", thm, eprem,
                        "r_avg <= 2 eta", 2 * eta, B.DERIVED_EF_THEOREM_WORST.expr, r_avg,
                        G, "derived_ef_theorem_trajectory"))
    out.append(Derivation("delayed_lemma_x", "derived_delayed_lemma_x", "delayed, at x_t", (
        _prem("x-steps of delayed training are <= eta", sp.Symbol("||x_{t+1} - x_t||"), eta,
              "x_{t+1} - x_t = d_{t-1}; so perturbed_lemma applies with y := x", chain=False),
        _cite(E_x, "derived_ef_lemma_trajectory"),
        _prem("at y := x the perturbation is zero", r_w, 0, "r_t = ||x_t - x_t|| = 0")), start=E_x))
    out.append(Derivation("delayed_theorem_x", "derived_delayed_theorem_x", "delayed, at x_t", (
        _prem("gradient at x from gradient at y", G_x, G + L * eta,
              "A2 and r_t <= eta: ||grad f(x_t)||_* <= ||grad f(y_t)||_* + L r_t, averaged over t < K"),
        _cite(G, "derived_delayed_theorem")), start=G_x))
    out.append(Derivation("kovalev_lemma_implied", "kovalev_sync_lemma",
                          "Kovalev's restated lemma follows from the derived one", (
        _cite(E_x, "derived_sync_lemma"),
        _alg("derived <= restated", B.DERIVED_SYNC_LEMMA.expr, "<=", B.KOVALEV_SYNC_LEMMA.expr,
             "L eta (1-mu)/mu <= L eta/mu")), start=E_x))
    out.append(Derivation("kovalev_theorem_implied", "kovalev_sync_theorem",
                          "Kovalev's restated theorem follows from the derived one", (
        _cite(G_x, "derived_sync_theorem"),
        _alg("derived <= restated", B.DERIVED_SYNC_THEOREM.expr, "<=", B.KOVALEV_SYNC_THEOREM.expr,
             "the difference is exactly 3 L eta >= 0"),
        _alg("the gap is 3 L eta", B.KOVALEV_SYNC_THEOREM.expr - B.DERIVED_SYNC_THEOREM.expr, "==",
             3 * L * eta, "algebra", chain=False)), start=G_x))
    a, b = sp.sqrt(mu) * rho * sigma, 2 * L * eta
    out.append(Derivation("paper_noise_term_alone", "paper_delayed_noise_consistent",
                          "how sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2) arises, and what it leaves out"
                          " (an explanation, not a proof: the noise term alone is not a bound)", (
        _alg("a + b <= sqrt(2a^2 + 2b^2)", a_ + b_, "<=", sp.sqrt(2 * a_**2 + 2 * b_**2),
             "(a - b)^2 >= 0"),
        _alg("with a = sqrt(mu) rho sigma, b = 2 L eta", sp.sqrt(2 * a_**2 + 2 * b_**2), "==",
             PR.PAPER_DELAYED_NOISE_CONSISTENT.expr, "substitute a and b", where=((a_, a), (b_, b))),
        _alg("the derived stationary error is sqrt(mu) rho sigma + 2 L eta + the omitted lag term",
             sp.sqrt(mu) * rho * sigma + L * eta / mu, "==",
             a + b + L * eta * (1 - 2 * mu) / mu,
             "L eta/mu = 2 L eta + L eta (1 - 2 mu)/mu: the noise term's 2 L eta covers the"
             " perturbation L r_t <= L eta plus one more L eta, not the lag L eta (1-mu)/mu"),
    ), proves=False))
    return out

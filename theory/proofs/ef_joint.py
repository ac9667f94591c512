"""The sharper EF lemma (theory.records.ef_joint), derived as a checked chain.

The noise half is perturbed_lemma's own steps (reused, not restated). The drift half keeps the
lag and the EF perturbation together. With q = 1 - mu, U_k = sum_{j<=k} w_{t,j} u_j (u_j unit
vectors), n_k = ||U_k|| <= q^{t-k}:

1. A2 and the triangle inequality, one point pair per j:
   D_t <= L J_t, J_t = sum_j w_{t,j} ||y_t - x_j||, y_t - x_j = d_{j-1} + ... + d_{t-1} - d_{j-2}.
2. Duality, then the parallelogram law (A5): writing ||v_j|| = <u_j, v_j> and collecting the
   coefficient of each step d_s (it is U_{s+1} - w_{t,s+2} u_{s+2} for s <= t-2, U_t for s = t-1),
   J_t <= eta Phi_t, Phi_t = max_u [ sum_{k=1}^{t-1} ||U_k - w_{t,k+1} u_{k+1}|| + ||U_t|| ], and
   ||U_k - w u_{k+1}||^2 = 2 n_k^2 + 2 w^2 - n_{k+1}^2 since U_{k+1} = U_k + w u_{k+1}.
3. sqrt(z) <= (z/c_k + c_k)/2 with c_k = c q^{t-k-1}: the n_k^2 terms telescope to
   (2q - 1) q^{t-k} n_k^2/(2c) (k >= 2; at most (1-2mu)_+ q^{t-k}/(2c) over 0 <= n_k <= q^{t-k}),
   q^t/c for n_1 (n_1 <= q^{t-1}), and n_t - n_t^2/(2c) <= c/2; so Phi_t <= A/c + c B with A, B the
   sums below, and c = sqrt(A/B) gives Phi_t <= 2 sqrt(A B). Valid for t >= 2 (t = 0, 1: D_0 = 0,
   D_1 <= L eta, below C(mu) >= 1).
4. Geometric sums give A_t, B_t (theory.records.ef_joint); A_t, B_t increase in t, so C(mu, t) <= C(mu).

The Euclidean star maximum J_t / eta equals the PEP certificate on every cell of the grid (the
first two steps lose nothing there); the tangent step costs at most 5 % at t = 8
(theory.checks.certificates.ef_joint).
"""
from __future__ import annotations

import sympy as sp

from ..records import ef_joint as J
from ..records.symbols import L, eta, mu, t
from .derivation import D_t, E_t, Derivation, _alg, _prem, k
from .package_derivations import perturbed_lemma

#: the abstract quantities of the drift half (premises; witnessed in theory.checks.ef_joint_witness)
J_t = sp.Symbol("J_t")        # sum_j w_{t,j} ||y_t - x_j||
PHI_t = sp.Symbol("Phi_t")    # max over unit u_j of sum_{k=1}^{t-1} ||U_k - w_{t,k+1} u_{k+1}|| + ||U_t||

#: t >= 2 encoded as t = k + 2 in the algebra steps (k >= 0 an integer)
T2 = ((t, k + 2),)

q = 1 - mu
s_ = sp.Symbol("s", integer=True, nonnegative=True)
A_SUM = (mu**2 * sp.Sum(q**s_, (s_, 0, t - 2)) + J.POS / 2 * sp.Sum(q**s_, (s_, 1, t - 2)) + q**t)
B_SUM = (sp.Sum(q**s_, (s_, 0, t - 2)) + 1) / 2


def ef_lemma_joint() -> Derivation:
    """E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + sqrt(mu) rho sigma + L eta C(mu)."""
    noise_half = perturbed_lemma().steps[:6]   # weights, split, noise premise and its three algebra steps
    steps = noise_half + (
        _prem("drift: A2 + triangle inequality, lag and perturbation together", D_t, L * J_t,
              "||grad f(x_j) - grad f(y_t)||_* <= L ||y_t - x_j|| (A2) for each j, with"
              " y_t - x_j = d_{j-1} + ... + d_{t-1} - d_{j-2} kept as one vector (not split into"
              " ||y_t - y_j|| + r_j); weights sum to 1"),
        _prem("duality and the parallelogram law (A5)", J_t, eta * PHI_t,
              "||v_j|| = <u_j, v_j> for a unit u_j; collect each d_s's coefficient U_{s+1} - w_{t,s+2} u_{s+2}"
              " (U_t for s = t-1), Cauchy-Schwarz with ||d_s|| <= eta; ||U - w u||^2 = 2||U||^2 + 2w^2 - ||U + w u||^2"
              " (Euclidean norm, A5)"),
        _prem("tangent bound, optimal c (t >= 2)", PHI_t, 2 * sp.sqrt(A_SUM * B_SUM),
              "sqrt(z) <= (z/c_k + c_k)/2, c_k = c (1-mu)^{t-k-1}; the n_k^2 terms telescope to (2q-1) q^{t-k} n_k^2/(2c),"
              " at most (1-2mu)_+ q^{t-k}/(2c) over 0 <= n_k <= q^{t-k}; n_1 <= q^{t-1}; n_t - n_t^2/(2c) <= c/2;"
              " then c = sqrt(A/B)"),
        _alg("geometric sums", 2 * sp.sqrt(A_SUM * B_SUM), "==", J.c_step_expr(),
             "sum_{s=0}^{t-2} q^s = (1 - q^{t-1})/mu and sum_{s=1}^{t-2} q^s = q (1 - q^{t-2})/mu; t >= 2 as t = k + 2",
             where=T2),
        _alg("uniform in t", J.c_step_expr(), "<=", J.c_uniform_expr(),
             "A_t and B_t increase in t (q^{t-1} (q - mu - (1-2mu)_+/(2mu)) <= 0), with limits"
             " mu + (1-2mu)_+ q/(2mu) and (1+mu)/(2mu); t >= 2 as t = k + 2", where=T2),
    )
    return Derivation("ef_lemma_joint", J.DERIVED_EF_LEMMA_JOINT.name,
                      "EF worst case, lag and perturbation jointly (Euclidean norm, A5): E||m_t - grad f(y_t)||_*"
                      " <= (1-mu)^t rho sigma + sqrt(mu) rho sigma + L eta C(mu)", steps, start=E_t)


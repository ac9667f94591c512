"""The paper's delayed bound, one `Bound` per reading of the summary's words (docs/design.md §5).

The summary says: "in the delayed setting the noise bound is sqrt(2 mu rho^2 sigma^2 + 8 L eta^2)",
and that this noise bound "has one more term than the synchronous one". It is the term that
replaces the synchronous noise term sqrt(mu) rho sigma inside the delayed lemma. With

    a = sqrt(mu) rho sigma,   b = 2 L eta,   P = sqrt(2 a^2 + 2 b^2) = sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2)

the readings are

* C1  E||m_t - grad f(y_t)||_* <= (1-mu)^t rho sigma + P + L eta/mu
* C2  the same with the drift L eta (1-mu)/mu
* C1_x, C2_x: the same at x_t (E||m_t - grad f(x_t)||_*)
* C3, C4: C1, C2 with the literal 8 L eta^2 under the root (not invariant under f -> c f:
  8 L eta^2 has units [F], 2 mu rho^2 sigma^2 has units [F/X]^2)
* the noise term alone, P (and its literal form): NOT a bound by itself; it leaves out the
  drift and the transient. Kept only as a labelled comparison, never as the paper's claim.

``valid`` records what theory.results.implications proves: True when the package's derived delayed
lemma (at the same point y_t or x_t) implies the reading for every mu in (0, 1] and all
positive constants; False otherwise. The implication table for every variant is in
theory.results.implications.
"""
from __future__ import annotations

import sympy as sp

from .bound import DELAYED, SOURCES, Bound
from .package_bounds import A234, drift
from .symbols import L, eta, mu, rho, sigma, t

A = sp.sqrt(mu) * rho * sigma          # a: the synchronous noise term
B2 = 2 * L * eta                       # b: the perturbation term (r_t <= 2 eta)
P = sp.sqrt(2 * mu * rho**2 * sigma**2 + 8 * L**2 * eta**2)   # sqrt(2 a^2 + 2 b^2)
P_LITERAL = sp.sqrt(2 * mu * rho**2 * sigma**2 + 8 * L * eta**2)
TRANSIENT = (1 - mu) ** t * rho * sigma

READINGS = {
    "C1": "full delayed lemma, noise term sqrt(2 mu rho^2 sigma^2 + 8 (L eta)^2), drift L eta/mu",
    "C2": "full delayed lemma, noise term sqrt(2 mu rho^2 sigma^2 + 8 (L eta)^2), drift L eta (1-mu)/mu",
    "C3": "C1 with the literal 8 L eta^2 (not scale-invariant: cannot be a bound)",
    "C4": "C2 with the literal 8 L eta^2 (not scale-invariant: cannot be a bound)",
    "noise alone": "the noise term by itself: not a bound by itself (it leaves out the drift and the transient)",
}


def _paper(name, expr, quantity, reading, valid, note):
    return Bound(name=name, expr=expr, quantity=quantity, variant=DELAYED, assumptions=A234,
                 source=SOURCES["paper"], status="transmitted", valid=valid, note=note,
                 reading=f"{reading}: {READINGS[reading]}")


_AT = {"y": ("momentum_error_y", "at the virtual iterate y_t"),
       "x": ("momentum_error_x", "at the iterate x_t where the gradient is taken")}


def _full(reading, at, noise_term, drift_term, valid, why):
    q, where = _AT[at]
    return _paper(f"paper_{reading.lower()}_{at}", TRANSIENT + noise_term + drift_term, q, reading, valid,
                  f"{reading} {where}. {why}")


PAPER_C1_Y = _full("C1", "y", P, L * eta / mu, True,
                   "Implied by derived_delayed_lemma: difference P - a >= 0 (theory.results.implications).")
PAPER_C2_Y = _full("C2", "y", P, drift(), True,
                   "Implied by derived_delayed_lemma (P - a - L eta >= 0) and by derived_ef_lemma_worst"
                   " (P - (a + b) >= 0, QM-AM); derived as a chain in theory.proofs.paper_derivations (paper_c2).")
PAPER_C1_X = _full("C1", "x", P, L * eta / mu, True, "Implied by derived_delayed_lemma_x.")
PAPER_C2_X = _full("C2", "x", P, drift(), True, "Implied by derived_delayed_lemma_x (P - a >= 0).")
PAPER_C3_Y = _full("C3", "y", P_LITERAL, L * eta / mu, True,
                   "Not scale-invariant, so not a bound in the paper's sense; yet in any fixed units it"
                   " is implied by derived_delayed_lemma, since sqrt(2 a^2 + 8 L eta^2) >= a.")
PAPER_C4_Y = _full("C4", "y", P_LITERAL, drift(), False,
                   "Not scale-invariant. In fixed units of f and x: not implied by derived_delayed_lemma"
                   " exactly when L > 4; false when L > 8, where it is below the value L eta/mu that a"
                   " delayed run attains at sigma = 0; for 4 < L <= 8 whether it fails is not settled"
                   " (theory.results.implications.c4_ranges).")
PAPER_C3_X = _full("C3", "x", P_LITERAL, L * eta / mu, True,
                   "Not scale-invariant; in fixed units implied by derived_delayed_lemma_x.")
PAPER_C4_X = _full("C4", "x", P_LITERAL, drift(), True,
                   "Not scale-invariant; in fixed units implied by derived_delayed_lemma_x"
                   " (sqrt(2 a^2 + 8 L eta^2) >= a).")

PAPER_DELAYED_NOISE_LITERAL = _paper(
    "paper_delayed_noise_literal", P_LITERAL, "momentum_error_y", "noise alone", False,
    "The noise term alone, literal parse sqrt(2 mu rho^2 sigma^2 + 8 L eta^2): not a bound by itself"
    " (it leaves out the drift and the transient), and not invariant under f -> c f. A labelled"
    " comparison, not the paper's claim.")

PAPER_DELAYED_NOISE_CONSISTENT = _paper(
    "paper_delayed_noise_consistent", P, "momentum_error_y", "noise alone", False,
    "The noise term alone, sqrt(2a^2 + 2b^2) with a = sqrt(mu) rho sigma, b = 2 L eta: not a bound"
    " by itself. Tested alone against E||m_t - grad f(y_t)||_* it fails through the drift"
    " L eta (1-mu)/mu and the transient (1-mu)^t rho sigma, which the paper keeps outside it"
    " (C1, C2). A labelled comparison, not the paper's claim.")

ALL = (PAPER_DELAYED_NOISE_LITERAL, PAPER_DELAYED_NOISE_CONSISTENT,
       PAPER_C1_Y, PAPER_C2_Y, PAPER_C1_X, PAPER_C2_X,
       PAPER_C3_Y, PAPER_C4_Y, PAPER_C3_X, PAPER_C4_X)

"""The paper's delayed lemma (readings C1, C2 of theory.records.paper_readings) derived as checked chains.

Where the 2 and the 8 come from (docs/design.md §5): take the perturbed-gradient lemma with a
perturbation r_t <= 2 eta (two steps of norm <= eta, e.g. ||x_{t+1} - x_{t-1}|| <= 2 eta; delayed
training has r_t <= eta, error feedback r_t <= 2 eta), so its perturbation term is
L r_w <= 2 L eta = b; then bound the sum of the noise term a = sqrt(mu) rho sigma and b by
||A + B|| <= sqrt(2||A||^2 + 2||B||^2), i.e. a + b <= sqrt(2 a^2 + 2 b^2) = sqrt(2 mu rho^2 sigma^2
+ 8 L^2 eta^2) (QM-AM, since (a - b)^2 >= 0). That is C2; C1 follows from L eta (1-mu)/mu <= L eta/mu.
At x_t, the derived delayed lemma at x_t with a <= sqrt(2 a^2 + 2 b^2) gives C2_x and then C1_x.
"""
from __future__ import annotations


from ..records import package_bounds as B
from ..records import paper_readings as PR
from .derivation import E_t, E_x, Derivation, _alg, _cite, _prem
from ..records.symbols import eta, r_w

A, Bb, P, TR = PR.A, PR.B2, PR.P, PR.TRANSIENT


def paper_c2() -> Derivation:
    """C2 at y_t from the perturbed lemma with r_t <= 2 eta and QM-AM."""
    steps = (
        _cite(E_t, "derived_ef_lemma_trajectory"),
        _prem("a perturbation of two steps", r_w, 2 * eta,
              "r_t <= 2 eta, e.g. ||x_{t+1} - x_{t-1}|| <= 2 eta (two steps of norm <= eta);"
              " delayed training has r_t <= eta, error feedback r_t <= 2 eta"),
        _alg("QM-AM: a + b <= sqrt(2 a^2 + 2 b^2)", TR + A + Bb + B.drift(), "<=", TR + P + B.drift(),
             "the perturbation term is L r_w <= 2 L eta = b; with the noise term a = sqrt(mu) rho sigma,"
             " ||A + B|| <= sqrt(2||A||^2 + 2||B||^2), here (a - b)^2 >= 0; 2 b^2 = 8 L^2 eta^2"),
    )
    return Derivation("paper_c2", "paper_c2_y", "reading C2 at y_t: (1-mu)^t rho sigma"
                      " + sqrt(2 mu rho^2 sigma^2 + 8 L^2 eta^2) + L eta (1-mu)/mu", steps, start=E_t)


def _c1_from_c2(name: str, record: str, what: str, c2_record: str, c2_expr, c1_expr, start) -> Derivation:
    """Reading C1 from reading C2 at the same point: the drift L eta (1-mu)/mu <= L eta/mu."""
    return Derivation(name, record, what, (
        _cite(start, c2_record),
        _alg("drift (1-mu)/mu <= 1/mu", c2_expr, "<=", c1_expr, "L eta/mu - L eta (1-mu)/mu = L eta >= 0")),
        start=start)


def paper_c1() -> Derivation:
    """C1 at y_t from C2 (the drift L eta (1-mu)/mu <= L eta/mu)."""
    return _c1_from_c2("paper_c1", "paper_c1_y", "reading C1 at y_t: C2 with the drift L eta/mu", "paper_c2_y",
                       PR.PAPER_C2_Y.expr, PR.PAPER_C1_Y.expr, E_t)


def paper_c2_x() -> Derivation:
    """C2 at x_t from the derived delayed lemma at x_t (a <= sqrt(2a^2 + 2b^2))."""
    return Derivation("paper_c2_x", "paper_c2_x", "reading C2 at x_t", (
        _cite(E_x, "derived_delayed_lemma_x"),
        _alg("a <= sqrt(2 a^2 + 2 b^2)", B.DERIVED_DELAYED_LEMMA_X.expr, "<=", PR.PAPER_C2_X.expr,
             "2 a^2 + 8 L^2 eta^2 >= a^2")), start=E_x)


def paper_c1_x() -> Derivation:
    """C1 at x_t from C2 at x_t."""
    return _c1_from_c2("paper_c1_x", "paper_c1_x", "reading C1 at x_t", "paper_c2_x",
                       PR.PAPER_C2_X.expr, PR.PAPER_C1_X.expr, E_x)


def paper_derivations() -> list[Derivation]:
    return [paper_c2(), paper_c1(), paper_c2_x(), paper_c1_x()]



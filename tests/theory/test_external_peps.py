"""Three of PEPit's published worst cases, solved through the package's certificate path
(theory.checks.certificates.external, pep.solve_problem), match their published closed forms, written
here from the literature, not taken from the code under test."""
import pytest

from theory.checks.certificates import external as X


@pytest.mark.parametrize("n", [2, 5])
def test_gradient_descent_nonconvex_is_4L_over_3n(n):
    for L in (1.0, 3.0):
        assert X.gd_nonconvex(L, n) == pytest.approx(4 * L / (3 * n), rel=1e-4)


@pytest.mark.parametrize("n", [1, 4])
def test_gradient_descent_convex_is_L_over_4n_plus_2(n):
    for L in (1.0, 2.0):
        assert X.gd_convex(L, n) == pytest.approx(L / (4 * n + 2), rel=1e-4)


@pytest.mark.parametrize("gamma", [0.5, 1.0, 1.5])
def test_gradient_descent_strongly_convex_contracts_at_the_published_rate(gamma):
    L, m, n = 1.0, 0.1, 3
    rate = max(abs(1 - gamma * m), abs(1 - gamma * L)) ** (2 * n)
    assert X.gd_strongly_convex(L, m, gamma, n) == pytest.approx(rate, rel=1e-4)


def test_a_wrong_published_value_would_be_caught():
    assert X.gd_nonconvex(1.0, 5) != pytest.approx(4 / (3 * 6), rel=1e-3)   # an index slip n -> n + 1

"""Polynomials, the polynomial problem's presets, its exact optimum and its config branch."""
import math

import numpy as np
import pytest
from scipy.optimize import minimize

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems import ProblemConfig, load_agent_data, validate_problem_config
from mpi_privopt.problems.consensus.polynomial import Polynomial, basis_size, monomial_basis
from mpi_privopt.problems.consensus.polynomial_presets import preset_polynomial
from mpi_privopt.problems.consensus.polynomial_problem import PolynomialObjective, PolynomialSum, \
    minimize_separable


@pytest.mark.parametrize("dim,degree", [(1, 4), (3, 2), (4, 3), (31, 2)])
@pytest.mark.parametrize("mixed", [True, False])
def test_basis_has_every_monomial_once(dim, degree, mixed):
    E = monomial_basis(dim, degree, mixed)
    assert len(E) == basis_size(dim, degree, mixed)
    assert len({tuple(r) for r in E}) == len(E)
    assert E.sum(axis=1).min() == 1 and E.sum(axis=1).max() == degree
    if not mixed:
        assert np.all(np.count_nonzero(E, axis=1) == 1)
    elif dim > 1 and degree > 1:
        assert np.any(np.count_nonzero(E, axis=1) > 1)


def test_value_and_gradient_of_a_known_polynomial():
    # p(x) = 2 + 3 x0^2 x1 - x2^4 + 0.5 x1
    E = np.array([[2, 1, 0], [0, 0, 4], [0, 1, 0]])
    p = Polynomial(E, [3.0, -1.0, 0.5], constant=2.0)
    x = np.array([-1.5, 0.0, 2.0])
    assert p.value(x) == pytest.approx(2 + 0 - 16 + 0)
    expected = [6 * x[0] * x[1], 3 * x[0] ** 2 + 0.5, -4 * x[2] ** 3]
    np.testing.assert_allclose(p.gradient(x), expected, rtol=1e-14, atol=1e-14)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    E = monomial_basis(4, 4, mixed=True)
    p = Polynomial(E, rng.standard_normal(len(E)))
    for x in (rng.standard_normal(4), np.array([0.0, 1.0, 0.0, -2.0])):
        h = 1e-6
        numeric = [(p.value(x + h * e) - p.value(x - h * e)) / (2 * h) for e in np.eye(4)]
        np.testing.assert_allclose(p.gradient(x), numeric, rtol=1e-6, atol=1e-6)


def test_arithmetic_is_coefficient_wise_and_needs_one_basis():
    E = monomial_basis(2, 2)
    a, b = Polynomial(E, np.arange(5.0), 1.0), Polynomial(E, np.ones(5), 2.0)
    np.testing.assert_array_equal((a - b).coefficients, np.arange(5.0) - 1)
    assert (a + b).constant == 3.0
    x = np.array([0.3, -0.7])
    assert (a + b).value(x) == pytest.approx(a.value(x) + b.value(x), rel=1e-14)
    with pytest.raises(ValueError, match="different monomial bases"):
        a + Polynomial(monomial_basis(2, 2, mixed=False), np.ones(4))


def test_gade2017_preset_is_the_papers_five_functions():
    fs = [preset_polynomial("gade2017", 0, k, 99) for k in range(5)]
    x = np.array([1.7])
    paper = [x ** 2, x ** 4, x ** 2 + x ** 4, x ** 2 + 0.5 * x ** 4, 0.5 * x ** 2 + x ** 4]
    for f, value in zip(fs, paper):
        assert f.value(x) == pytest.approx(float(value[0]), rel=1e-14)
    total = PolynomialSum([PolynomialObjective(f) for f in fs])
    # the sum is 3.5 (x^2 + x^4) (the paper prints 2.5)
    assert total.value(x) == pytest.approx(3.5 * (1.7 ** 2 + 1.7 ** 4), rel=1e-14)
    assert minimize_separable(total.polynomial) == pytest.approx([0.0], abs=1e-15)
    # other K repeat the list
    np.testing.assert_array_equal(preset_polynomial("gade2017", 0, 7, 1).coefficients,
                                  fs[2].coefficients)


def test_random_preset_is_convex_reproducible_and_per_agent():
    f = preset_polynomial("random", 4, 2, 3)
    np.testing.assert_array_equal(f.coefficients, preset_polynomial("random", 4, 2, 3).coefficients)
    assert not np.array_equal(f.coefficients, preset_polynomial("random", 4, 3, 3).coefficients)
    assert not np.array_equal(f.coefficients, preset_polynomial("random", 5, 2, 3).coefficients)
    # a (x - c)^2 + b (x - c)^4 >= 0 with minimum 0 at c: the expansion is right
    w = minimize_separable(f)
    assert f.value(w) == pytest.approx(0.0, abs=1e-12)
    grid = np.linspace(-4, 4, 41)
    for d in range(3):
        values = [f.value(np.where(np.arange(3) == d, t, w)) for t in grid]
        assert np.all(np.diff(values, 2) >= -1e-9)  # convex along each coordinate


def test_exact_reference_agrees_with_a_numerical_solver():
    fs = [PolynomialObjective(preset_polynomial("random", 11, k, 4)) for k in range(6)]
    total = PolynomialSum(fs)
    w = minimize_separable(total.polynomial)
    assert np.max(np.abs(total.polynomial.gradient(w))) < 1e-10
    numeric = minimize(total.value, np.zeros(4), jac=total.polynomial.gradient,
                       method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(w, numeric.x, atol=1e-6)
    assert total.value(w) <= numeric.fun + 1e-12
    W = np.tile(w, (6, 1))
    assert total.value_at(W) == pytest.approx(total.value(w), rel=1e-13)


def test_exact_reference_refuses_what_it_cannot_solve():
    with pytest.raises(ConfigError, match="mixed monomials"):
        minimize_separable(Polynomial(monomial_basis(2, 2), np.ones(5)))
    with pytest.raises(ConfigError, match="unbounded below"):
        minimize_separable(Polynomial(monomial_basis(1, 3, mixed=False), [0.0, 1.0, 1.0]))
    with pytest.raises(ConfigError, match="unbounded below"):
        minimize_separable(Polynomial(monomial_basis(1, 2, mixed=False), [0.0, -1.0]))


def test_polynomial_problem_config_branch():
    validate_problem_config(ProblemConfig(name="polynomial"))
    validate_problem_config(ProblemConfig(name="polynomial", preset="random", features=3))
    with pytest.raises(ConfigError, match="unknown \\[problem\\] preset"):
        validate_problem_config(ProblemConfig(name="polynomial", preset="gade2018"))
    with pytest.raises(ConfigError, match="does not apply to the polynomial problem"):
        validate_problem_config(ProblemConfig(name="polynomial", loss="squared"))
    with pytest.raises(ConfigError, match="has no presets"):
        validate_problem_config(ProblemConfig(name="ridge", preset="random"))
    X, y = load_agent_data(ProblemConfig(name="polynomial", preset="random", features=3), 1, 4, 0)
    assert X.shape == (0, 3) and y.shape == (0,)
    X, _ = load_agent_data(ProblemConfig(name="polynomial"), 0, 5, 0)
    assert X.shape == (0, 1)
    assert math.isfinite(preset_polynomial("gade2017", 0, 0, 1).value(np.array([30.0])))

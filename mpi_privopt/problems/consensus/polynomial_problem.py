"""Polynomial objectives without data: each agent's f_k, their sum, the exact optimum.

This is the problem of Gade & Vaidya's Figure 1: the private information of an agent is
its objective function itself, not a data set. The objects here offer the interface the
engine and the monitor use for data problems (``n_features``, ``value``,
``subgradient``; ``value_at`` for the sum).
"""
from __future__ import annotations

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.config import ProblemConfig
from mpi_privopt.problems.consensus.global_problem import sum_of_local_values
from mpi_privopt.problems.metrics import LOCAL, REFERENCE, AgentMetrics, ConsensusToReference, Evaluator, Metric
from mpi_privopt.problems.consensus.polynomial import Polynomial
from mpi_privopt.problems.consensus.polynomial_presets import preset_polynomial
from mpi_privopt.problems.reference.solution import ReferenceSolution

__all__ = ["PolynomialObjective", "PolynomialSum", "minimize_separable",
           "polynomial_objective", "polynomial_reference"]


class PolynomialObjective:
    """One agent's private objective ``f_k``, a polynomial.

    Parameters
    ----------
    polynomial : Polynomial
    """

    def __init__(self, polynomial: Polynomial) -> None:
        self.polynomial = polynomial
        self.n_features = polynomial.n_features

    def value(self, w: np.ndarray) -> float:
        """``f_k(w)``."""
        return self.polynomial.value(w)

    def subgradient(self, w: np.ndarray, *, clipped: bool = True) -> np.ndarray:
        """``grad f_k(w)`` (smooth; ``clipped`` is accepted for interface compatibility)."""
        return self.polynomial.gradient(w)

    def evaluator(self, mode: str, reference=None) -> Evaluator | None:
        """``reference``: error, objective gap, consensus gap; ``local``: the objective
        sum_k f_k(w_k); ``none``: None."""
        if mode == REFERENCE:
            return ConsensusToReference(self.value, reference.w, reference.value)
        if mode == LOCAL:
            return AgentMetrics([Metric("objective", "sum")], lambda w, _: (self.value(w),))
        return None

    def __repr__(self) -> str:
        return f"PolynomialObjective({self.polynomial!r})"


class PolynomialSum:
    """``F = sum_k f_k`` over all agents (evaluation and reference only).

    Parameters
    ----------
    locals : list of PolynomialObjective
        One per agent, on the same monomial basis.
    """

    def __init__(self, locals: list[PolynomialObjective]) -> None:
        self.locals = list(locals)
        self.n_agents = len(self.locals)
        self.n_features = self.locals[0].n_features
        total = self.locals[0].polynomial
        for lp in self.locals[1:]:
            total = total + lp.polynomial
        self.polynomial = total

    def value(self, w: np.ndarray) -> float:
        """``F(w)``."""
        return self.polynomial.value(w)

    def value_at(self, W: np.ndarray) -> float:
        """``sum_k f_k(W[k])``."""
        return sum_of_local_values(self.locals, self.n_features, W)


def minimize_separable(polynomial: Polynomial) -> np.ndarray:
    """Exact global minimiser of a separable polynomial (every monomial is ``x_d^p``).

    Each coordinate is minimised on its own: the real roots of the derivative are the
    candidates, and the one of least value wins.

    Raises
    ------
    ConfigError
        If the polynomial is not separable or is unbounded below in some coordinate.
    """
    E, c = polynomial.exponents, polynomial.coefficients
    if np.any(np.count_nonzero(E, axis=1) != 1):
        raise ConfigError("the polynomial objective has mixed monomials",
                          "the exact reference solver handles separable polynomials only")
    w = np.zeros(polynomial.n_features)
    for d in range(polynomial.n_features):
        rows = np.flatnonzero(E[:, d])
        coeffs = np.zeros(int(E[rows, d].max(initial=0)) + 1)
        np.add.at(coeffs, E[rows, d], c[rows])  # coeffs[p] multiplies x_d^p
        w[d] = _minimize_univariate(coeffs, d)
    return w


def _minimize_univariate(coeffs: np.ndarray, d: int) -> float:
    nonzero = np.flatnonzero(coeffs[1:]) + 1
    if nonzero.size == 0:
        return 0.0
    top = int(nonzero.max())
    if top % 2 == 1 or coeffs[top] < 0:
        raise ConfigError(f"the sum of the objectives is unbounded below in coordinate {d}",
                          "use objectives whose sum is convex (even leading degree, positive)")
    derivative = np.array([p * coeffs[p] for p in range(top, 0, -1)])  # highest power first
    roots = np.roots(derivative)
    scale = max(1.0, float(np.max(np.abs(roots)))) if roots.size else 1.0
    real = roots.real[np.abs(roots.imag) <= 1e-7 * scale]
    values = [np.polyval(coeffs[top::-1], r) for r in real]
    best = float(real[int(np.argmin(values))])
    # one Newton step from the root finder's answer polishes it to rounding level
    second = np.polyder(derivative)
    curvature = np.polyval(second, best)
    if curvature > 0:
        best -= np.polyval(derivative, best) / curvature
    return best


def polynomial_objective(cfg: ProblemConfig, seed: int, agent: int) -> PolynomialObjective:
    """Agent ``agent``'s own objective f_k, from the preset."""
    return PolynomialObjective(preset_polynomial(cfg.preset, seed, agent, cfg.features))


def polynomial_reference(own: PolynomialObjective,
                         shares: list[tuple[np.ndarray, float]]) -> tuple[PolynomialSum,
                                                                          ReferenceSolution]:
    """The sum F of every agent's polynomial and its exact minimiser (reference mode only).

    ``shares[k]`` is agent k's ``(coefficients, constant)`` on the monomial basis of
    ``own`` (every agent of a preset shares the basis).
    """
    exponents = own.polynomial.exponents
    locals_ = [PolynomialObjective(Polynomial(exponents, coeffs, constant))
               for coeffs, constant in shares]
    total = PolynomialSum(locals_)
    w = minimize_separable(total.polynomial)
    gradient = total.polynomial.gradient(w)
    reference = ReferenceSolution(w, total.value(w), "exact (roots of the derivative)",
                                  True, float(np.max(np.abs(gradient), initial=0.0)))
    return total, reference

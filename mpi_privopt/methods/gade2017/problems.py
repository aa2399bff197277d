"""Gade & Vaidya's polynomial objectives (``problem.name = "polynomial"``,
``problem.preset = "gade2017"``, the default preset).

The five scalar objectives of Sec. VII, Figure 1:
f_1 = x^2, f_2 = x^4, f_3 = x^2 + x^4, f_4 = x^2 + 0.5 x^4, f_5 = 0.5 x^2 + x^4
(D = 1). Agent k (0-based) holds f_{(k mod 5) + 1}, so K = 5 is the paper's setting and
other K repeat the list. The sum over five agents is 3.5 (x^2 + x^4) (the paper prints
2.5, an arithmetic slip); x* = 0, f* = 0 (docs/methods/gade2017.md).
"""
from __future__ import annotations

from mpi_privopt.problems.consensus.polynomial import Polynomial, monomial_basis

__all__ = ["GADE2017_FIG1", "figure1_polynomial"]

# Coefficients of x, x^2, x^3, x^4 for the paper's f_1..f_5.
GADE2017_FIG1 = (
    (0.0, 1.0, 0.0, 0.0),
    (0.0, 0.0, 0.0, 1.0),
    (0.0, 1.0, 0.0, 1.0),
    (0.0, 1.0, 0.0, 0.5),
    (0.0, 0.5, 0.0, 1.0),
)


def figure1_polynomial(seed: int, agent: int, features: int) -> Polynomial:
    """Agent ``agent``'s objective of Figure 1 (``seed`` and ``features`` unused: D = 1)."""
    return Polynomial(monomial_basis(1, 4, mixed=False), GADE2017_FIG1[agent % 5])

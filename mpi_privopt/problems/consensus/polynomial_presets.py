"""Named polynomial objectives (``problem.name = "polynomial"``, ``problem.preset``).

``gade2017``
    The five scalar objectives of Gade & Vaidya (2017), Sec. VII, Figure 1:
    f_1 = x^2, f_2 = x^4, f_3 = x^2 + x^4, f_4 = x^2 + 0.5 x^4, f_5 = 0.5 x^2 + x^4
    (D = 1). Agent k (0-based) holds f_{(k mod 5) + 1}, so K = 5 is the paper's setting
    and other K repeat the list. The sum over five agents is 3.5 (x^2 + x^4) (the paper
    prints 2.5, an arithmetic slip); x* = 0, f* = 0.
``random``
    Agent k holds ``sum_d a_kd (x_d - c_kd)^2 + b_kd (x_d - c_kd)^4`` in D =
    ``problem.features`` variables with a ~ U[0.5, 1.5], b ~ U[0, 0.5], c ~ N(0, 1) drawn
    from ``SeedSequence([seed, 0x6ADE, agent])``: convex, with an optimum of the sum away
    from 0, for any K.

Both are separable polynomials of degree 4 on the basis ``x_d^p`` (p = 1..4).
"""
from __future__ import annotations

import numpy as np

from mpi_privopt.problems.consensus.polynomial import Polynomial, monomial_basis
from mpi_privopt.problems.registry import POLYNOMIAL

__all__ = ["PRESETS", "DEFAULT_PRESET", "preset_dimension", "preset_polynomial"]

PRESETS = ("gade2017", "random")
DEFAULT_PRESET = "gade2017"
DEGREE = 4

# Coefficients of x, x^2, x^3, x^4 for the paper's f_1..f_5.
GADE2017_FIG1 = (
    (0.0, 1.0, 0.0, 0.0),
    (0.0, 0.0, 0.0, 1.0),
    (0.0, 1.0, 0.0, 1.0),
    (0.0, 1.0, 0.0, 0.5),
    (0.0, 0.5, 0.0, 1.0),
)
_TAG = 0x6ADE


def preset_dimension(preset: str, features: int) -> int:
    """D for a preset: 1 for ``gade2017``, ``features`` for ``random``."""
    return 1 if (preset or DEFAULT_PRESET) == "gade2017" else int(features)


def preset_polynomial(preset: str, seed: int, agent: int, features: int) -> Polynomial:
    """Agent ``agent``'s objective under ``preset`` (see the module docstring)."""
    preset = preset or DEFAULT_PRESET
    if preset == "gade2017":
        return Polynomial(monomial_basis(1, DEGREE, mixed=False), GADE2017_FIG1[agent % 5])
    if preset == "random":
        return _random_convex(seed, agent, int(features))
    raise ValueError(f"unknown polynomial preset {preset!r}; valid: {', '.join(PRESETS)}")


def _random_convex(seed: int, agent: int, dim: int) -> Polynomial:
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TAG, agent]))
    a = rng.uniform(0.5, 1.5, dim)
    b = rng.uniform(0.0, 0.5, dim)
    c = rng.standard_normal(dim)
    # a (x - c)^2 + b (x - c)^4 expanded in powers of x; row p-1 holds the x^p coefficients
    by_power = np.array([
        -2 * a * c - 4 * b * c ** 3,
        a + 6 * b * c ** 2,
        -4 * b * c,
        b,
    ])
    constant = float(np.sum(a * c ** 2 + b * c ** 4))
    # monomial_basis(dim, 4, mixed=False) lists x_0..x_{D-1} for p = 1, then p = 2, ...
    return Polynomial(monomial_basis(dim, DEGREE, mixed=False), by_power.ravel(), constant)

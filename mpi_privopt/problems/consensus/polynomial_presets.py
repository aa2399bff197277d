"""Named polynomial objectives (``problem.name = "polynomial"``, ``problem.preset``).

A preset is a function ``preset(seed, agent, features) -> Polynomial``, agent ``agent``'s
objective. :data:`PRESETS` holds the core's own and those of the method families (each
family's ``POLYNOMIAL_PRESETS`` table, :mod:`mpi_privopt.families`):

``gade2017`` (the default, :mod:`mpi_privopt.methods.gade2017.problems`)
    The five scalar objectives of Gade & Vaidya (2017), Sec. VII, Figure 1 (D = 1).
``random``
    Agent k holds ``sum_d a_kd (x_d - c_kd)^2 + b_kd (x_d - c_kd)^4`` in D =
    ``problem.features`` variables with a ~ U[0.5, 1.5], b ~ U[0, 0.5], c ~ N(0, 1) drawn
    from ``SeedSequence([seed, 0x6ADE, agent])``: convex, with an optimum of the sum away
    from 0, for any K.

Both are separable polynomials of degree 4 on the basis ``x_d^p`` (p = 1..4).
"""
from __future__ import annotations

import numpy as np

from mpi_privopt.families import family_table
from mpi_privopt.lazy_table import LazyTable
from mpi_privopt.problems.consensus.polynomial import Polynomial, monomial_basis

__all__ = ["PRESETS", "DEFAULT_PRESET", "preset_dimension", "preset_polynomial"]

#: ``problem.preset -> preset function``; the families' tables are read at first use
PRESETS: LazyTable = LazyTable(
    {"random": f"{__name__}:random_convex"},
    fill=lambda: family_table("POLYNOMIAL_PRESETS"))
#: the preset of ``problem.preset = ""``: the paper's instance
DEFAULT_PRESET = "gade2017"
DEGREE = 4
_TAG = 0x6ADE


def preset_dimension(preset: str, features: int) -> int:
    """D for a preset (agent 0's number of variables: 1 for ``gade2017``, ``features``
    for ``random``)."""
    return preset_polynomial(preset, 0, 0, features).n_features


def preset_polynomial(preset: str, seed: int, agent: int, features: int) -> Polynomial:
    """Agent ``agent``'s objective under ``preset`` (see the module docstring)."""
    preset = preset or DEFAULT_PRESET
    if preset not in PRESETS:
        raise ValueError(f"unknown polynomial preset {preset!r}; valid: {', '.join(PRESETS)}")
    return PRESETS[preset](seed, agent, int(features))


def random_convex(seed: int, agent: int, dim: int) -> Polynomial:
    """Agent ``agent``'s objective of the ``random`` preset (see the module docstring)."""
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

"""Multivariate polynomials on a fixed monomial basis: values, gradients, arithmetic.

A polynomial in D variables is a coefficient vector over a basis of monomials
``x^e = prod_d x_d^e_d`` given by an exponent matrix ``E`` (one row per monomial), plus a
constant. Two polynomials on the same basis add and subtract coefficient-wise, which is
all Function Sharing needs (Gade & Vaidya 2017, eqs. 6-9): the sum of the shared noise
functions is zero *as a polynomial*, not just at the points where it is evaluated.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

__all__ = ["monomial_basis", "basis_size", "Polynomial"]


def monomial_basis(dimension: int, degree: int, mixed: bool = True) -> np.ndarray:
    """Exponents of the monomials of total degree 1..``degree`` in ``dimension`` variables.

    Parameters
    ----------
    dimension : int
        D, the number of variables.
    degree : int
        The largest total degree.
    mixed : bool, default True
        Include products of different variables (``x_1 x_2``). False gives the separable
        basis ``x_d^p`` (d = 1..D, p = 1..degree) only.

    Returns
    -------
    numpy.ndarray
        int64 array of shape (M, D), ordered by total degree, then lexicographically.
    """
    if dimension < 1 or degree < 1:
        raise ValueError(f"need dimension >= 1 and degree >= 1, got {dimension}, {degree}")
    rows = []
    for total in range(1, degree + 1):
        if mixed:
            for combo in itertools.combinations_with_replacement(range(dimension), total):
                row = np.zeros(dimension, dtype=np.int64)
                np.add.at(row, list(combo), 1)
                rows.append(row)
        else:
            for d in range(dimension):
                row = np.zeros(dimension, dtype=np.int64)
                row[d] = total
                rows.append(row)
    return np.array(rows, dtype=np.int64)


def basis_size(dimension: int, degree: int, mixed: bool = True) -> int:
    """Number of monomials :func:`monomial_basis` returns, without building it."""
    if not mixed:
        return dimension * degree
    # monomials of total degree 0..degree, minus the constant
    return math.comb(dimension + degree, degree) - 1


class Polynomial:
    """``p(x) = constant + sum_m c_m x^(E_m)``.

    Parameters
    ----------
    exponents : numpy.ndarray
        (M, D) non-negative integer exponents, e.g. from :func:`monomial_basis`.
    coefficients : numpy.ndarray
        (M,) coefficients c_m.
    constant : float, default 0
        The constant term (it never changes a gradient).
    """

    __slots__ = ("exponents", "coefficients", "constant", "_lower", "_top", "_cols",
                 "_separable")

    def __init__(self, exponents: np.ndarray, coefficients: np.ndarray, constant: float = 0.0):
        self.exponents = np.asarray(exponents, dtype=np.int64)
        self.coefficients = np.asarray(coefficients, dtype=np.float64).copy()
        if self.exponents.ndim != 2 or self.coefficients.shape != (len(self.exponents),):
            raise ValueError(f"exponents must be (M, D) and coefficients (M,), got "
                             f"{self.exponents.shape} and {self.coefficients.shape}")
        self.constant = float(constant)
        self._lower = np.maximum(self.exponents - 1, 0)
        self._top = int(self.exponents.max(initial=0))
        self._cols = np.arange(self.exponents.shape[1])
        # every monomial in at most one variable: the other variables' factors are all 1
        self._separable = bool((np.count_nonzero(self.exponents, axis=1) <= 1).all())

    @property
    def n_features(self) -> int:
        return self.exponents.shape[1]

    @property
    def degree(self) -> int:
        return int(self.exponents.sum(axis=1).max(initial=0))

    def _powers(self, x: np.ndarray) -> np.ndarray:
        # P[d, e] = x_d^e for e = 0..top, by repeated multiplication (exact for integers)
        x = np.asarray(x, dtype=np.float64)
        powers = np.ones((x.size, self._top + 1))
        for e in range(1, self._top + 1):
            powers[:, e] = powers[:, e - 1] * x
        return powers

    def monomials(self, x: np.ndarray) -> np.ndarray:
        """The basis values ``x^(E_m)``, shape (M,)."""
        return np.prod(self._powers(x)[self._cols, self.exponents], axis=1)

    def basis_gradients(self, x: np.ndarray) -> np.ndarray:
        """``d x^(E_m) / d x_d``, shape (M, D): the gradient is ``coefficients @ this``."""
        powers = self._powers(x)
        cols = self._cols
        derivatives = self.exponents * powers[cols, self._lower]
        if self._separable:
            return derivatives
        terms = powers[cols, self.exponents]
        # product over the other variables, without dividing by x_d (which may be 0)
        ones = np.ones((len(terms), 1))
        before = np.cumprod(np.hstack([ones, terms[:, :-1]]), axis=1)
        after = np.cumprod(np.hstack([ones, terms[:, :0:-1]]), axis=1)[:, ::-1]
        return derivatives * before * after

    def value(self, x: np.ndarray) -> float:
        """``p(x)``."""
        return self.constant + float(self.coefficients @ self.monomials(x))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """``grad p(x)``, shape (D,)."""
        return self.coefficients @ self.basis_gradients(x)

    def same_basis(self, other: "Polynomial") -> bool:
        return bool(np.array_equal(self.exponents, other.exponents))

    def _check(self, other: "Polynomial") -> None:
        if not self.same_basis(other):
            raise ValueError("polynomials on different monomial bases cannot be combined")

    def __add__(self, other: "Polynomial") -> "Polynomial":
        self._check(other)
        return Polynomial(self.exponents, self.coefficients + other.coefficients,
                          self.constant + other.constant)

    def __sub__(self, other: "Polynomial") -> "Polynomial":
        self._check(other)
        return Polynomial(self.exponents, self.coefficients - other.coefficients,
                          self.constant - other.constant)

    def __repr__(self) -> str:
        return f"Polynomial(D={self.n_features}, monomials={len(self.coefficients)}, degree={self.degree})"

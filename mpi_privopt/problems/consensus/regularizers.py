"""The elastic-net regulariser ``R(w) = l1 ||w||_1 + l2 ||w||_2^2`` (no factor 1/2)."""
from __future__ import annotations

import numpy as np

__all__ = ["penalty_value", "penalty_subgradient"]


def penalty_value(w: np.ndarray, l1: float, l2: float) -> float:
    """``R(w) = l1 ||w||_1 + l2 ||w||_2^2``."""
    value = 0.0
    if l1:
        value += l1 * float(np.abs(w).sum())
    if l2:
        value += l2 * float(w @ w)
    return value


def penalty_subgradient(w: np.ndarray, l1: float, l2: float) -> np.ndarray:
    """A subgradient of R: ``l1 sign(w) + 2 l2 w`` with sign(0) = 0.

    sign(0) = 0 is the minimum-norm element of the l1 subdifferential at 0, so a
    coordinate that sits exactly at zero is not pushed away by the regulariser.
    """
    # The definition (tests check the gradient against it); LocalProblem.subgradient adds
    # the same terms in place with the 1/K shares folded.
    if l2:
        g = (2.0 * l2) * w
        if l1:
            g += l1 * np.sign(w)
        return g
    if l1:
        return l1 * np.sign(w)
    return np.zeros_like(w, dtype=float)

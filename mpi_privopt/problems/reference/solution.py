"""What a centralised reference solver returns: :class:`ReferenceSolution`.

A leaf module (numpy only): the problems that compute their own reference in closed form
(the aggregative quadratic, the polynomial sum) return one without importing the solvers
of :mod:`mpi_privopt.problems.reference.solver`, and so without the consensus problem they solve.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ReferenceSolution"]


@dataclass(frozen=True)
class ReferenceSolution:
    """The centralised optimum.

    Attributes
    ----------
    w : ndarray, shape (P,)
    value : float
        ``F(w)``.
    method : str
        Which solver produced it (see the module table).
    converged : bool
        Whether optimality was certified to the requested tolerance.
    residual : float
        Optimality residual: inf-norm of the minimum-norm subgradient (smooth losses)
        or of the KKT stationarity of the certificate (piecewise linear; nan if none).
    """

    w: np.ndarray
    value: float
    method: str
    converged: bool
    residual: float = math.nan

"""The white-box sensitivity check's one formula: how far a replace-one canary moved a
release, in units of the sensitivity the ledger booked for it.

Every audit harness (:class:`~.harness.TrialStatistics`, the token trials of
``methods/chan2023/audit.py``, the shadow trajectories of ``methods/chen2025/audit.py`` in
the l1 norm) and the contract's sensitivity check
(``tests/mpi/test_sensitivity.py``) reads the shift through :func:`shift_ratio`, so "moved
by at most the booked sensitivity" means the same thing everywhere: a ratio at most 1.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["shift_ratio"]


def shift_ratio(plus: np.ndarray, minus: np.ndarray, booked: float, order: int = 2) -> float:
    """``||plus - minus|| / booked``: the canary's realised shift of one release over its
    booked sensitivity.

    Parameters
    ----------
    plus, minus : numpy.ndarray
        The clean value the release would have had in each of the two neighbouring worlds.
    booked : float
        The sensitivity the release was booked with (the event's ``sensitivity``).
    order : int
        The norm the sensitivity is stated in: 2 for Gaussian releases, 1 for Laplace ones.

    Returns
    -------
    float
        The ratio; ``inf`` when the canary moved a release booked with sensitivity 0, and 0
        when nothing moved and nothing was booked.
    """
    shift = float(np.linalg.norm(np.ravel(np.asarray(plus) - np.asarray(minus)), ord=order))
    if booked > 0:
        return shift / booked
    return math.inf if shift > 0 else 0.0

"""``check``'s look at a run's noise before it starts: warn when the calibrated noise is absurd.

A budget spread over too many iterations calibrates noise that drowns every release: the
default experiment with ``run.iterations = 50000`` calibrates sigma = 2.1e108 at n = 1. The
divergence guard (:mod:`mpi_privopt.divergence`) stops such a run once its iterate blows
up; this warns before launch. A method states its calibrated schedule through
``Algorithm.noise_schedule(cfg)`` (None: nothing to look at), and the schedule is
evaluated at every release n = 1..T (at most :data:`MAX_POINTS` of them, the first
thousand and a geometric grid beyond).

The yardstick is the divergence guard's factor (1e6):

* a *relative* schedule (sigma = multiplier(n) x the release's sensitivity) is absurd when
  the multiplier exceeds 1e6 somewhere: each release then carries a million times more
  noise than one record can change it by, so it says nothing; the released iterate is of
  the data's scale, so its noise is then of the order of 1e6 x (sensitivity / data
  scale) x the data scale;
* an *absolute* schedule (sigma in the data's own units) is absurd when sigma exceeds 1e6
  x the data scale (the largest absolute value of any agent's features and labels).
"""
from __future__ import annotations

import numpy as np

from ..divergence import DIVERGENCE_FACTOR

__all__ = ["NOISE_WARNING_FACTOR", "noise_warning", "release_points"]

#: how far beyond the yardstick (see the module docstring) the noise may go unwarned
NOISE_WARNING_FACTOR = DIVERGENCE_FACTOR
#: the most releases whose scale is evaluated
MAX_POINTS = 20_000


def release_points(T: int) -> np.ndarray:
    """The releases n whose noise is looked at: all of 1..T, or the first thousand and a
    geometric grid up to T when T is large (the schedules are monotone beyond)."""
    if T <= MAX_POINTS:
        return np.arange(1, T + 1)
    grid = np.geomspace(1000, T, MAX_POINTS - 1000).astype(np.int64)
    return np.unique(np.concatenate([np.arange(1, 1001), grid, [T]]))


def noise_warning(cfg, data_scale: float) -> str | None:
    """The warning for ``cfg``'s calibrated noise, or None when it is sane (or absent).

    Parameters
    ----------
    cfg : Config
        The validated configuration.
    data_scale : float
        The largest absolute value in any agent's data (features and labels).
    """
    from ..algorithms import ALGORITHMS
    schedule = ALGORITHMS[cfg.algorithm.name].noise_schedule(cfg)
    if schedule is None:
        return None
    T = cfg.run.iterations
    points = release_points(T)
    with np.errstate(over="ignore"):
        scales = np.array([schedule.scale(int(n), 1.0) for n in points], dtype=float)
    worst = int(np.argmax(np.where(np.isnan(scales), np.inf, scales)))
    n, scale = int(points[worst]), float(scales[worst])
    if schedule.relative:
        if scale <= NOISE_WARNING_FACTOR:
            return None
        size = (f"its standard deviation is {scale:.3g} times the release's sensitivity at "
                f"n = {n}, more than {NOISE_WARNING_FACTOR:.0e}")
    else:
        if scale <= NOISE_WARNING_FACTOR * data_scale:
            return None
        size = (f"its scale is {scale:.3g} at n = {n}, more than {NOISE_WARNING_FACTOR:.0e} "
                f"times the data's scale {data_scale:.3g}")
    return (f"the noise {cfg.algorithm.name} calibrates for privacy.epsilon = "
            f"{cfg.privacy.epsilon:g} over {T} iterations drowns its releases: {size}; they "
            "carry no usable signal and the run is likely to diverge (the divergence guard "
            "then stops it). Raise privacy.epsilon or lower run.iterations (or "
            "algorithm.horizon)")

"""Random perturbations of structured randomization (Gade & Vaidya 2017, Sec. III).

Pure functions of a numpy Generator: the algorithms call them with the agent's own
stream, so a run is reproducible whatever the process placement.

* :func:`network_balanced_shares`: RSS-NB's s_k^{j,i}, one vector per out-link, with
  ``||s|| <= bound``. Their network sum cancels by construction (each share enters the
  sender's d with - and the receiver's with +), whatever the distribution.
* :func:`locally_balanced_noise`: RSS-LB's d_k^{j,i} with ``sum_i B[i,j] d^{j,i} = 0``
  and ``||d^{j,i}|| <= delta`` (centre by the weighted mean, then rescale;
  docs/methods/gade2017.md, "RSS-LB noise construction").
"""
from __future__ import annotations

import numpy as np

__all__ = ["NB_DISTRIBUTIONS", "LB_DISTRIBUTIONS", "LB_SCALES", "uniform_ball",
           "network_balanced_shares", "locally_balanced_noise"]

#: ``ball``: uniform in the L2 ball; ``cube``: uniform per coordinate in a cube inside it;
#: ``biased``: non-zero mean (sign set by sender < receiver), to exercise Theorem 1's
#: "deterministic, whatever the noise" claim.
NB_DISTRIBUTIONS = ("ball", "cube", "biased")
#: the raw vectors before centring: uniform in the unit ball, or standard normal
LB_DISTRIBUTIONS = ("ball", "gaussian")
#: ``random``: largest ||d^{j,i}|| is delta * U(0, 1]; ``max``: it is delta
LB_SCALES = ("random", "max")


def uniform_ball(rng: np.random.Generator, count: int, dim: int, radius: float) -> np.ndarray:
    """``count`` points uniform in the D-dimensional L2 ball of ``radius``, shape (count, D)."""
    direction = rng.standard_normal((count, dim))
    norms = np.linalg.norm(direction, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    r = radius * rng.random((count, 1)) ** (1.0 / dim)
    return direction / norms * r


def network_balanced_shares(rng: np.random.Generator, sender: int, receivers: list[int],
                            dim: int, bound: float, distribution: str = "ball") -> np.ndarray:
    """RSS-NB shares s^{sender,i} for each receiver i, shape (len(receivers), D).

    Every share has norm at most ``bound`` (the paper's Delta / (2n)).
    """
    count = len(receivers)
    if distribution == "ball":
        return uniform_ball(rng, count, dim, bound)
    if distribution == "cube":
        half = bound / np.sqrt(dim)
        return rng.uniform(-half, half, (count, dim))
    if distribution == "biased":
        signs = np.array([1.0 if sender < i else -1.0 for i in receivers])[:, None]
        magnitude = 1.0 - rng.random((count, 1))  # in (0, 1]
        return signs * magnitude * (bound / np.sqrt(dim)) * np.ones((count, dim))
    raise ValueError(f"unknown RSS-NB distribution {distribution!r}; valid: {NB_DISTRIBUTIONS}")


def locally_balanced_noise(rng: np.random.Generator, column_weights: np.ndarray, dim: int,
                           delta: float, distribution: str = "ball",
                           scale: str = "random") -> np.ndarray:
    """RSS-LB noise d^{j,i} for each out-neighbour i, shape (len(column_weights), D).

    Parameters
    ----------
    column_weights : numpy.ndarray
        ``B[i, j]`` for each out-neighbour i: the weight neighbour i puts on j's message.
    delta : float
        Bound on each ``||d^{j,i}||``.

    Returns
    -------
    numpy.ndarray
        Rows with ``column_weights @ d = 0`` (eq. 4). With a single neighbour that forces
        d = 0: such an agent is not perturbed at all.
    """
    weights = np.asarray(column_weights, dtype=np.float64)
    count = len(weights)
    if count < 2 or delta == 0:
        return np.zeros((count, dim))
    if distribution == "ball":
        raw = uniform_ball(rng, count, dim, 1.0)
    elif distribution == "gaussian":
        raw = rng.standard_normal((count, dim))
    else:
        raise ValueError(f"unknown RSS-LB distribution {distribution!r}; valid: {LB_DISTRIBUTIONS}")
    centred = raw - (weights @ raw) / weights.sum()
    largest = float(np.max(np.linalg.norm(centred, axis=1)))
    if largest == 0.0:
        return np.zeros((count, dim))
    if scale == "random":
        factor = 1.0 - rng.random()  # in (0, 1]
    elif scale == "max":
        factor = 1.0
    else:
        raise ValueError(f"unknown RSS-LB scale {scale!r}; valid: {LB_SCALES}")
    # a common factor keeps eq. 4; it only sets the size
    return centred * (delta * factor / largest)

"""Mechanisms: turn (value, sensitivity, noise parameter) into a release with its cost.

A mechanism draws its noise from a :mod:`~mpi_privopt.privacy.noise` source (``fast``:
seeded numpy streams; ``secure``: OS entropy and an exact discrete sampler) and returns a
:class:`~mpi_privopt.privacy.release.Release` whose event the per-link ledger books on
every link the release travels.
"""
from __future__ import annotations

import numpy as np

from .accountants import GaussianEvent, LaplaceEvent
from .release import PRIVATE, Release


class GaussianMechanism:
    """``value + N(0, sigma^2 I)``: rho-zCDP with rho = D^2 / (2 sigma^2) for l2 sensitivity D.

    Parameters
    ----------
    noise : NoiseSource
        Where the Gaussian draws come from.
    """

    def __init__(self, noise) -> None:
        self.noise = noise

    def release(self, value: np.ndarray, sensitivity: float, sigma: float,
                out: np.ndarray | None = None) -> Release:
        """Perturb ``value`` and return it with its :class:`GaussianEvent`.

        The value is first rounded to the noise source's lattice (a no-op in fast mode), and
        the event books the sensitivity that rounding can add, so the secure sampler's
        guarantee holds as accounted. ``out``: where to write the noisy value (a channel's
        send buffer); a new array by default.
        """
        value = self.noise.round_to_grid(value)
        booked = self.noise.effective_sensitivity(float(sensitivity), value.size, "l2")
        event = GaussianEvent(sensitivity=booked, sigma=float(sigma))
        noisy = np.add(value, self.noise.gaussian(event.sigma, value.shape), out=out)
        return Release(noisy, PRIVATE, event)


class LaplaceMechanism:
    """``value + Laplace(0, b)`` per coordinate: pure epsilon = D / b for l1 sensitivity D."""

    def __init__(self, noise) -> None:
        self.noise = noise

    def release(self, value: np.ndarray, sensitivity: float, scale: float,
                out: np.ndarray | None = None) -> Release:
        """Perturb ``value`` and return it with its :class:`LaplaceEvent` (as above)."""
        value = self.noise.round_to_grid(value)
        booked = self.noise.effective_sensitivity(float(sensitivity), value.size, "l1")
        event = LaplaceEvent(sensitivity=booked, scale=float(scale))
        noisy = np.add(value, self.noise.laplace(event.scale, value.shape), out=out)
        return Release(noisy, PRIVATE, event)

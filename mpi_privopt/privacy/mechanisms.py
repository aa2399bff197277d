"""Mechanisms: turn (value, sensitivity, noise parameter) into a release with its cost.

A mechanism draws its noise from a :mod:`~mpi_privopt.privacy.noise` source (``fast``:
seeded numpy streams; ``secure``: OS entropy and an exact discrete sampler) and returns a
:class:`~mpi_privopt.privacy.release.Release` whose event the per-link ledger books on
every link the release travels.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from .accountants import GaussianEvent, LaplaceEvent
from .release import PRIVATE, Release


class AdditiveNoiseMechanism:
    """``value + noise`` with the privacy event of the noise law (a subclass names it).

    Parameters
    ----------
    noise : NoiseSource
        Where the draws come from.
    """

    #: the norm of the sensitivity the law is calibrated in ("l2" or "l1")
    norm: ClassVar[str]

    def __init__(self, noise) -> None:
        self.noise = noise

    def release(self, value: np.ndarray, sensitivity: float, scale: float,
                out: np.ndarray | None = None) -> Release:
        """Perturb ``value`` and return it with its privacy event.

        ``scale`` is the law's parameter (sigma for Gaussian noise, b for Laplace noise).
        The value is first rounded to the noise source's lattice (a no-op in fast mode), and
        the event books the sensitivity that rounding can add, so the secure sampler's
        guarantee holds as accounted. ``out``: where to write the noisy value (a channel's
        send buffer); a new array by default.
        """
        value = self.noise.round_to_grid(value)
        booked = self.noise.effective_sensitivity(float(sensitivity), value.size, self.norm)
        event = self.event(booked, float(scale))
        noisy = np.add(value, self.draw(event, value.shape), out=out)
        return Release(noisy, PRIVATE, event)

    def event(self, sensitivity: float, scale: float):
        """The privacy event of one release."""
        raise NotImplementedError

    def draw(self, event, shape: tuple[int, ...]) -> np.ndarray:
        """The noise of one release."""
        raise NotImplementedError


class GaussianMechanism(AdditiveNoiseMechanism):
    """``value + N(0, sigma^2 I)``: rho-zCDP with rho = D^2 / (2 sigma^2) for l2 sensitivity D."""

    norm = "l2"

    def event(self, sensitivity: float, scale: float) -> GaussianEvent:
        return GaussianEvent(sensitivity=sensitivity, sigma=scale)

    def draw(self, event: GaussianEvent, shape: tuple[int, ...]) -> np.ndarray:
        return self.noise.gaussian(event.sigma, shape)


class LaplaceMechanism(AdditiveNoiseMechanism):
    """``value + Laplace(0, b)`` per coordinate: pure epsilon = D / b for l1 sensitivity D."""

    norm = "l1"

    def event(self, sensitivity: float, scale: float) -> LaplaceEvent:
        return LaplaceEvent(sensitivity=sensitivity, scale=scale)

    def draw(self, event: LaplaceEvent, shape: tuple[int, ...]) -> np.ndarray:
        return self.noise.laplace(event.scale, shape)

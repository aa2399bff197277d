"""Mechanisms: turn (value, sensitivity, noise parameter) into a release with its cost.

A mechanism draws its noise from a :mod:`~mpi_privopt.privacy.noise` source (``fast``:
seeded numpy streams; ``secure``: OS entropy and an exact discrete sampler) and returns a
:class:`~mpi_privopt.privacy.release.Release` whose event the per-link ledger books on
every link the release travels.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from .events import GaussianEvent, LaplaceEvent
from .release import Release


class AdditiveNoiseMechanism:
    """``value + noise`` with the privacy event of the noise law (a subclass names it).

    Parameters
    ----------
    noise : NoiseSource
        Where the draws come from.
    owner : int, optional
        Whose data the released values depend on (None: the agent whose ledger books them).
    unit : {"record", "dataset"}, optional
        What the sensitivity is for: one record of the owner replaced, or its whole dataset.
    """

    #: the norm of the sensitivity the law is calibrated in ("l2" or "l1")
    norm: ClassVar[str]

    def __init__(self, noise, owner: int | None = None, unit: str = "record") -> None:
        self.noise = noise
        self.owner = owner
        self.unit = unit

    def release(self, value: np.ndarray, sensitivity: float, scale: float,
                out: np.ndarray | None = None, record: int | None = None) -> Release:
        """Perturb ``value`` and return it with its privacy event.

        ``scale`` is the law's parameter (sigma for Gaussian noise, b for Laplace noise).
        The value is first rounded to the noise source's lattice (a no-op in fast mode), and
        the event books the sensitivity that rounding can add, so the secure sampler's
        guarantee holds as accounted. ``out``: where to write the noisy value (a channel's
        send buffer); a new array by default. ``record``: the one record of the owner the
        value depends on, if only one (None: any record).
        """
        value = self.noise.round_to_grid(value)
        event = self.booked_event(sensitivity, scale, value.size, record)
        noisy = np.add(value, self.draw(event, value.shape), out=out)
        return Release(noisy, event)

    def booked_event(self, sensitivity: float, scale: float, size: int,
                     record: int | None = None):
        """The event :meth:`release` books for a value of ``size`` coordinates: the
        sensitivity grown by what the noise source's rounding can add. Without drawing
        anything, so a method can plan its releases (``Algorithm.planned_events``)."""
        booked = self.noise.effective_sensitivity(float(sensitivity), size, self.norm)
        return self.event(booked, float(scale), record)

    def event(self, sensitivity: float, scale: float, record: int | None = None):
        """The privacy event of one release."""
        raise NotImplementedError

    def draw(self, event, shape: tuple[int, ...]) -> np.ndarray:
        """The noise of one release."""
        raise NotImplementedError


class GaussianMechanism(AdditiveNoiseMechanism):
    """``value + N(0, sigma^2 I)``: rho-zCDP with rho = D^2 / (2 sigma^2) for l2 sensitivity D."""

    norm = "l2"

    def event(self, sensitivity: float, scale: float, record: int | None = None) -> GaussianEvent:
        return GaussianEvent(sensitivity=sensitivity, sigma=scale, owner=self.owner,
                             unit=self.unit, record=record)

    def draw(self, event: GaussianEvent, shape: tuple[int, ...]) -> np.ndarray:
        return self.noise.gaussian(event.sigma, shape)


class LaplaceMechanism(AdditiveNoiseMechanism):
    """``value + Laplace(0, b)`` per coordinate: pure epsilon = D / b for l1 sensitivity D."""

    norm = "l1"

    def event(self, sensitivity: float, scale: float, record: int | None = None) -> LaplaceEvent:
        return LaplaceEvent(sensitivity=sensitivity, scale=scale, owner=self.owner,
                            unit=self.unit, record=record)

    def draw(self, event: LaplaceEvent, shape: tuple[int, ...]) -> np.ndarray:
        return self.noise.laplace(event.scale, shape)

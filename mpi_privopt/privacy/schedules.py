"""Noise schedules: the noise scale of each release, as a value handed to an algorithm.

A schedule answers one question, :meth:`NoiseSchedule.scale`: the parameter of the noise
law (sigma of a Gaussian, b of a Laplace) for release ``n = 1, 2, ...``. A *relative*
schedule is calibrated to the release's sensitivity and scales with it (zCDP-NFL:
``sigma = Delta / sqrt(2 phi^(n))``); an *absolute* one fixes the scale itself (Chen &
Wang's decaying Laplace noise, Chan, Xie & Zhao's constant sigma) and ignores the
sensitivity it is given (the mechanism still books that sensitivity with the scale).

Schedules only evaluate their closed form; turning a budget into a schedule is
calibration (:mod:`mpi_privopt.privacy.calibration`). :meth:`NoiseSchedule.describe`
gives the line a run's report prints.
"""
from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from .. import display

__all__ = ["NoiseSchedule", "GeometricZCDPSchedule", "BasicCompositionSchedule",
           "DecayingLaplaceSchedule", "ConstantSchedule"]


class NoiseSchedule(ABC):
    """Release ``n`` -> the scale of its noise."""

    #: whether :meth:`scale` is proportional to the sensitivity (False: it ignores it)
    relative: ClassVar[bool]

    @abstractmethod
    def scale(self, n: int, sensitivity: float = 1.0) -> float:
        """The noise law's parameter for release ``n`` (n = 1, 2, ...).

        Parameters
        ----------
        n : int
            Which release (the algorithm's iteration, from 1).
        sensitivity : float, optional
            The release's sensitivity (l2 for Gaussian noise). A relative schedule returns
            ``sensitivity * multiplier(n)``; the default 1 gives the multiplier itself.
        """

    @abstractmethod
    def describe(self) -> str:
        """One short line for a run's report."""


@dataclasses.dataclass(frozen=True)
class GeometricZCDPSchedule(NoiseSchedule):
    """zCDP-NFL's dynamic Gaussian noise (Gauthier et al. 2024, Theorem I, Corollary)::

        sigma(n) = Delta(n) / sqrt(2 phi^(n)),   phi^(n) = phi1 tau^-(n-1)

    so release n is ``phi^(n)``-zCDP whatever its sensitivity. ``conversion`` and
    ``horizon`` only say how phi1 was calibrated (for :meth:`describe`); releases past the
    horizon keep the geometric rule.
    """

    phi1: float
    tau: float
    conversion: str = "standard"
    horizon: int = 0

    relative: ClassVar[bool] = True

    def budget(self, n: int) -> float:
        """phi^(n), the zCDP cost of release ``n``."""
        return self.phi1 * self.tau ** (-(n - 1))

    def scale(self, n: int, sensitivity: float = 1.0) -> float:
        phi_n = self.phi1 * self.tau ** (-(n - 1))
        return sensitivity / math.sqrt(2.0 * phi_n)

    def describe(self) -> str:
        # phi^(1) is a privacy loss: shown rounded up
        return (f"{display.loss(self.phi1)} (tau {self.tau}, {self.conversion} conversion, "
                f"T = {self.horizon})")


@dataclasses.dataclass(frozen=True, eq=False)
class BasicCompositionSchedule(NoiseSchedule):
    """One Gaussian mechanism per release for its own (eps_n, delta_n), basic composition::

        sigma(n) = Delta(n) * multipliers[n - 1]

    (the (epsilon, delta)DP-NFL baseline; the multipliers, eps_n and delta_n come from
    :func:`~mpi_privopt.privacy.classical_calibration.basic_composition_gaussian_schedule`). There is
    no budget past the horizon: release ``horizon + 1`` has no scale.
    """

    multipliers: np.ndarray
    eps_n: np.ndarray
    delta_n: np.ndarray
    mechanism: str = "classical"

    relative: ClassVar[bool] = True

    @property
    def horizon(self) -> int:
        return len(self.multipliers)

    def scale(self, n: int, sensitivity: float = 1.0) -> float:
        return sensitivity * float(self.multipliers[n - 1])

    def describe(self) -> str:
        return (f"{self.mechanism} Gaussian, basic composition over T = {self.horizon}: "
                f"eps_n {display.loss(self.eps_n[0])} -> {display.loss(self.eps_n[-1])}, "
                f"delta_n {display.loss(self.delta_n[0])}, "
                f"sigma/Delta {self.multipliers[0]:.4g} -> "
                f"{self.multipliers[-1]:.4g}")


@dataclasses.dataclass(frozen=True)
class DecayingLaplaceSchedule(NoiseSchedule):
    """Laplace noise whose standard deviation decays polynomially (Chen & Wang, Assumption 4)::

        b(n) = std n^-decay / sqrt(2)      (standard deviation std n^-decay)

    Absolute: the scale does not depend on the sensitivity. Release n is the paper's
    message of counter t = n - 1, whose noise is Lap(sig (t+1)^-vs / sqrt(2)) per
    coordinate; each agent has its own ``std`` (sig_i) and ``decay`` (vs_i).
    """

    std: float
    decay: float

    relative: ClassVar[bool] = False

    def scale(self, n: int, sensitivity: float = 1.0) -> float:
        return self.std * n ** (-self.decay) / math.sqrt(2.0)

    def describe(self) -> str:
        return f"Laplace, std {self.std:.4g} n^-{self.decay:g} (b = std / sqrt 2)"


@dataclasses.dataclass(frozen=True)
class ConstantSchedule(NoiseSchedule):
    """The same absolute scale for every release (Chan, Xie & Zhao's Gaussian sigma)."""

    value: float
    parameter: str = "sigma"

    relative: ClassVar[bool] = False

    def scale(self, n: int, sensitivity: float = 1.0) -> float:
        return self.value

    def describe(self) -> str:
        return f"constant {self.parameter} {self.value:.4g}"

"""What the private methods of Gauthier et al. 2024 share: their noise keys and checks, and
the release of a perturbed iterate (composed into each method, not inherited).

A method holds an :class:`IterateRelease` made from a mechanism and a noise schedule (a
value from :mod:`mpi_privopt.privacy.calibration`), or none for ``noiseless = true``, and
calls it with the clean iterate, the iteration, the sensitivity and the channel buffer to
write into.
"""
from __future__ import annotations

from collections.abc import Callable

import dataclasses
import math
import types

import numpy as np

from ..errors import ConfigError
from ..privacy.calibration import ZCDP_CONVERSIONS, zcdp_nfl_schedule
from ..privacy.mechanisms import GaussianMechanism
from ..privacy.release import Release
from ..privacy.schedules import GeometricZCDPSchedule, NoiseSchedule
from .contract import Algorithm


@dataclasses.dataclass
class NoiseParams:
    """``[algorithm]`` keys every private method of the paper has."""

    tau: float = 0.99
    noiseless: bool = False
    horizon: int = 0  # T the noise is calibrated over; 0: run.iterations


@dataclasses.dataclass
class ZCDPParams(NoiseParams):
    """``NoiseParams`` plus the zCDP -> (epsilon, delta) conversion used to calibrate."""

    conversion: str = "standard"


def validate_noise_params(name: str, params: NoiseParams) -> None:
    """Raise ConfigError for a tau or horizon no schedule can use."""
    if not 0 < params.tau <= 1:
        raise ConfigError(f"algorithm.tau = {params.tau} must be in (0, 1]",
                          "the paper's variance decrease rate; e.g. 0.99, or 1 for constant")
    if params.horizon < 0:
        raise ConfigError(f"algorithm.horizon = {params.horizon} must be >= 0",
                          "give the T to calibrate over, or 0 for run.iterations")


def validate_budget(name: str, cfg) -> None:
    """Raise ConfigError unless the run can calibrate noise to a budget (or is noiseless)."""
    if cfg.algorithm.params.noiseless:
        if math.isfinite(cfg.privacy.epsilon):
            raise ConfigError("algorithm.noiseless = true sends clear values but "
                              f"privacy.epsilon = {cfg.privacy.epsilon} is set",
                              "set privacy.epsilon = inf for a noiseless run")
        return
    if not math.isfinite(cfg.privacy.epsilon):
        raise ConfigError(f"{name} calibrates its noise to a budget, but "
                          "privacy.epsilon is inf",
                          "set privacy.epsilon (e.g. 10), or algorithm.noiseless = true")
    if not cfg.problem.clip or cfg.problem.clip <= 0:
        raise ConfigError(f"{name} needs a per-sample gradient bound c1, but "
                          "problem.clip is off",
                          "set problem.clip to c1 > 0 (per-sample gradients are clipped "
                          "to it; the sensitivity uses it)")


#: the option keys of the zCDP-calibrated methods
ZCDP_CHOICES = {**Algorithm.choices, "conversion": ZCDP_CONVERSIONS}


def planned_iterate_events(method, first: int, last: int) -> list | None:
    """:meth:`Algorithm.planned_events` of a method that sends one perturbed iterate per
    iteration through its ``release`` (an :class:`IterateRelease`), the sensitivity of
    release n being ``method.release_sensitivity(n)``."""
    return method.release.planned(first, last, method.release_sensitivity)


def noise_horizon(agent, params: NoiseParams) -> int:
    """T the noise is calibrated over: ``horizon``, or the run's iterations."""
    return params.horizon or agent.iterations


def zcdp_schedule(agent, params: ZCDPParams) -> GeometricZCDPSchedule | None:
    """zCDP-NFL's schedule for the agent's budget, or None when ``noiseless``."""
    if params.noiseless:
        return None
    privacy = agent.privacy
    horizon = noise_horizon(agent, params)
    # the same calibration on every agent: one computes it (agent.once, collective; a
    # stand-in agent outside a run computes it itself)
    once = getattr(agent, "once", None) or (lambda step: step())
    return once(lambda: zcdp_nfl_schedule(privacy.epsilon, privacy.delta, horizon,
                                          params.tau, params.conversion))


def run_budget(cfg) -> types.SimpleNamespace:
    """What a schedule reads of an agent (its budget and T), from the config alone."""
    return types.SimpleNamespace(privacy=cfg.privacy, iterations=cfg.run.iterations)


def config_zcdp_schedule(cls, cfg) -> GeometricZCDPSchedule | None:
    """:func:`zcdp_schedule` of a run of ``cfg``, before any agent exists (a method's
    ``noise_schedule = classmethod(config_zcdp_schedule)``)."""
    return zcdp_schedule(run_budget(cfg), cfg.algorithm.params)


class IterateRelease:
    """Send an iterate as ``w + N(0, sigma(n)^2 I)`` with sigma from a schedule, or in the
    clear when there is no schedule (noiseless: non-private, unbounded loss).

    Parameters
    ----------
    noise : NoiseSource
        The agent's noise (``agent.noise``).
    schedule : NoiseSchedule or None
        sigma of release n for a sensitivity; None sends the iterate as it is.
    """

    def __init__(self, noise, schedule: NoiseSchedule | None) -> None:
        self.mechanism = GaussianMechanism(noise)
        self.schedule = schedule
        #: sigma and sensitivity of every release so far (for the report and the tests)
        self.sigmas: list[float] = []
        self.sensitivities: list[float] = []
        #: coordinates of a release (its noise source's rounding grows the booked
        #: sensitivity with them); None before the first release
        self.size: int | None = None

    def __call__(self, w: np.ndarray, n: int, sensitivity: float, out: np.ndarray) -> Release:
        """Release ``n`` of ``w`` with l2 ``sensitivity``, written into ``out``."""
        schedule = self.schedule
        if schedule is None:
            np.copyto(out, w)
            return Release.nonprivate(out)
        sigma = schedule.scale(n, sensitivity)
        self.sigmas.append(sigma)
        self.sensitivities.append(sensitivity)
        self.size = w.size
        return self.mechanism.release(w, sensitivity, sigma, out=out)

    def planned(self, first: int, last: int,
                sensitivity_of: Callable[[int], float] | None = None) -> list | None:
        """The events of releases ``first`` .. ``last`` (one per iteration); None when
        they cannot be known before they happen. Noiseless: nothing private, an empty list.

        After a release (as on a resume) and given ``sensitivity_of(n)``, the sensitivity
        of release n from public quantities, they are the events :meth:`__call__` will
        book, event for event, as the mechanism books them: with the noise source's
        rounding slack (``secure`` mode), which does not scale with the sensitivity.
        Otherwise, under a relative schedule (a release's cost does not depend on its
        sensitivity, the slack aside), the events per unit sensitivity."""
        schedule = self.schedule
        if schedule is None:
            return []
        if sensitivity_of is not None and self.size is not None:
            return [self._booked(sensitivity_of(n), n) for n in range(first, last + 1)]
        if not schedule.relative:
            return None
        return [self.mechanism.event(1.0, schedule.scale(n, 1.0))
                for n in range(first, last + 1)]

    def _booked(self, sensitivity: float, n: int):
        """The event release ``n`` at ``sensitivity`` books."""
        return self.mechanism.booked_event(sensitivity, self.schedule.scale(n, sensitivity),
                                           self.size)

    def report(self, name: str, agent_id: int, schedule_label: str) -> dict:
        """A method's noise lines: first and last sigma and sensitivity, and the
        schedule's :meth:`~mpi_privopt.privacy.schedules.NoiseSchedule.describe` under
        ``f"{name} {schedule_label}"``."""
        if self.schedule is None:
            return {name: "noiseless (non-private check of the updates)"}
        if not self.sigmas:
            return {f"{name} noise agent {agent_id}": "no release yet",
                    f"{name} {schedule_label}": self.schedule.describe()}
        return {f"{name} noise agent {agent_id}":
                f"sigma {self.sigmas[0]:.4g} at n=1, {self.sigmas[-1]:.4g} at "
                f"n={len(self.sigmas)} (sensitivity {self.sensitivities[0]:.4g} -> "
                f"{self.sensitivities[-1]:.4g})",
                f"{name} {schedule_label}": self.schedule.describe()}

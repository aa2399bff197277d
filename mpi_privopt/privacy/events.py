"""Privacy events: what one release was, never how to count it.

An event names the mechanism and its parameters (sensitivity, noise scale), whose data it
depends on (``owner``: an agent id; None means the agent whose ledger books it) and the unit
of data it protects (``unit``: ``"record"``, one record of the owner replaced, or
``"dataset"``, the owner's whole dataset, as in local DP). ``record`` says which of the
owner's records a release depends on: None for every record (a gradient over the whole local
dataset), an index for one record (an incremental method that touches one record per
iteration); events on disjoint records compose in parallel.

Every event of the project is defined here, as data: frozen dataclasses that validate their
fields and carry no arithmetic. What a release costs, and how releases compose, is the
accountants' job (:mod:`~mpi_privopt.privacy.accountants`), one walk over these types; the
split follows Google's dp-accounting (``dp_event.py`` apart from its accountants). Two
events wrap others: :class:`PackedLaplaceEvent` (one message made of several Laplace
releases) and :class:`AmplifiedGaussianEvent` (a release seen after later noisy
iterations, worth less by amplification by iteration).

No MPI here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv
from mpi_privopt.privacy.amplification import AmplificationConstants

__all__ = [
    "UNITS",
    "AmplifiedGaussianEvent",
    "PackedLaplaceEvent",
    "GaussianEvent",
    "LaplaceEvent",
    "NonPrivateEvent",
    "PrivacyEvent",
    "PublicEvent",
    "PureDPEvent",
    "ZCDPEvent",
]

#: what an event protects: one record of its owner, or the owner's whole dataset
UNITS = ("record", "dataset")


def _positive(value: Any, name: str, fix: str, allow_inf: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r} is not a number", fix) from None
    if math.isnan(v) or v <= 0.0 or (math.isinf(v) and not allow_inf):
        raise ConfigError(f"{name} = {value!r} must be {'> 0' if allow_inf else 'a finite number > 0'}", fix)
    return v




# ---------------------------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyEvent:
    """Base class of everything an accountant can be told about: one release.

    Attributes (keyword-only, on every event)
    -----------------------------------------
    owner : int or None
        The agent whose data the release depends on; None: the agent whose ledger books it.
    unit : {"record", "dataset"}
        What neighbouring datasets differ in: one record of the owner, or its whole dataset.
    record : int or None
        The one record the release depends on; None: it may depend on every record.
    """

    owner: int | None = field(default=None, kw_only=True)
    unit: str = field(default="record", kw_only=True)
    record: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.unit != "record" and self.unit not in UNITS:
            raise ConfigError(f"event unit {self.unit!r} is not one of {UNITS}",
                              "say whether the release protects one record or a whole dataset")


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """Release of ``f(D) + N(0, sigma^2 I)`` where ``f`` has l2 sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        l2 sensitivity ``D >= 0``, finite.
    sigma : float
        Noise standard deviation ``> 0`` (``inf`` allowed: releases nothing).
    """

    sensitivity: float
    sigma: float

    def __post_init__(self) -> None:
        super().__post_init__()
        d = conv._check_nonneg(self.sensitivity, "sensitivity", "give the l2 sensitivity of the released quantity",
                                      allow_inf=False)
        s = _positive(
            self.sigma, "sigma", "use a noise standard deviation > 0; for a release without noise use NonPrivateEvent()",
            allow_inf=True,
        )
        object.__setattr__(self, "sensitivity", d)
        object.__setattr__(self, "sigma", s)


@dataclass(frozen=True)
class PureDPEvent(PrivacyEvent):
    """A release known only to be ``epsilon``-DP (pure).

    Parameters
    ----------
    epsilon : float
        Pure-DP parameter, finite and ``>= 0``.
    """

    epsilon: float

    def __post_init__(self) -> None:
        super().__post_init__()
        e = conv._check_nonneg(self.epsilon, "epsilon", "give a finite pure-DP epsilon >= 0; for no protection use NonPrivateEvent()",
                                      allow_inf=False)
        object.__setattr__(self, "epsilon", e)


@dataclass(frozen=True)
class LaplaceEvent(PrivacyEvent):
    """Release of ``f(D) + Laplace(scale)`` noise per coordinate, ``f`` of l1 sensitivity ``sensitivity``.

    Parameters
    ----------
    sensitivity : float
        l1 sensitivity ``D >= 0``, finite.
    scale : float
        Laplace scale ``b > 0``, finite.
    """

    sensitivity: float
    scale: float

    def __post_init__(self) -> None:
        super().__post_init__()
        d = conv._check_nonneg(self.sensitivity, "sensitivity", "give the l1 sensitivity of the released quantity",
                                      allow_inf=False)
        b = _positive(self.scale, "scale", "use a Laplace scale b > 0; for a release without noise use NonPrivateEvent()")
        object.__setattr__(self, "sensitivity", d)
        object.__setattr__(self, "scale", b)


@dataclass(frozen=True)
class ZCDPEvent(PrivacyEvent):
    """A release known to be ``rho``-zCDP.

    Parameters
    ----------
    rho : float
        zCDP parameter, finite and ``>= 0``.
    """

    rho: float

    def __post_init__(self) -> None:
        super().__post_init__()
        r = conv._check_nonneg(self.rho, "rho", "give a finite zCDP rho >= 0; for no protection use NonPrivateEvent()",
                                      allow_inf=False)
        object.__setattr__(self, "rho", r)


@dataclass(frozen=True)
class NonPrivateEvent(PrivacyEvent):
    """A message that depends on private data and is sent without noise: unbounded loss.

    Parameters
    ----------
    note : str, optional
        What was sent, for reports.
    """

    note: str = ""


@dataclass(frozen=True)
class PublicEvent(PrivacyEvent):
    """A message that does not depend on private data (e.g. a step size): costs nothing.

    Parameters
    ----------
    note : str, optional
        What was sent, for reports.
    """

    note: str = ""


# ---------------------------------------------------------------------------------------------
# Events that wrap others: the accountants resolve them (one walk, no registry)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PackedLaplaceEvent(PrivacyEvent):
    """One packed message of the LDP aggregative method: a Laplace release per block, booked
    as one (pure DP, the sum of its blocks' epsilons; Lemma 1).

    Parameters
    ----------
    parts : tuple of LaplaceEvent
        The blocks' releases (l1 sensitivity and scale each).
    """

    parts: tuple[LaplaceEvent, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        if not all(isinstance(part, LaplaceEvent) for part in self.parts):
            raise ConfigError(f"parts = {self.parts!r} are not all LaplaceEvent",
                              "pack the blocks' Laplace events")
        object.__setattr__(self, "parts", tuple(self.parts))


@dataclass(frozen=True)
class AmplifiedGaussianEvent(PrivacyEvent):
    """A record's noisy iteration (``base``), seen ``iterations_after`` noisy iterations later.

    ``base`` is the Gaussian event of the iteration that used the record: sensitivity
    ``eta * Delta / (1 + eta * beta)`` (token-admm), noise ``sigma``, with the record's ``owner`` and ``record``; the wrapper
    carries the same owner, unit and record. What it is worth (amplification by iteration,
    Chan, Xie & Zhao 2023) is :mod:`~mpi_privopt.privacy.amplification`'s to say.

    Parameters
    ----------
    base : GaussianEvent
        The iteration that used the record.
    iterations_after : int
        Noisy iterations between that use and the sighting, ``>= 0``.
    constants : AmplificationConstants
        The run's public constants and the requested bound.
    """

    base: GaussianEvent
    iterations_after: int
    constants: AmplificationConstants

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.base, GaussianEvent):
            raise ConfigError(f"base = {self.base!r} is not a GaussianEvent",
                              "wrap the Gaussian event of the iteration that used the record")
        k = self.iterations_after
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ConfigError(f"iterations_after = {k!r} must be an integer >= 0",
                              "count the noisy iterations between the record's use and the sighting")
        object.__setattr__(self, "iterations_after", int(k))
        if not isinstance(self.constants, AmplificationConstants):
            raise ConfigError(f"constants = {self.constants!r} is not an AmplificationConstants",
                              "give the run's public constants")

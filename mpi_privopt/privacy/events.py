"""Privacy events: what one release was, never how to count it.

An event names the mechanism and its parameters (sensitivity, noise scale), whose data it
depends on (``owner``: an agent id; None means the agent whose ledger books it) and the unit
of data it protects (``unit``: ``"record"``, one record of the owner replaced, or
``"dataset"``, the owner's whole dataset, as in local DP). ``record`` says which of the
owner's records a release depends on: None for every record (a gradient over the whole local
dataset), an index for one record (an incremental method that touches one record per
iteration); events on disjoint records compose in parallel.

Accountants (:mod:`~mpi_privopt.privacy.accountants`) say how events compose; transforms
(:mod:`~mpi_privopt.privacy.transforms`) turn a wrapped event (for example one amplified by
the iterations after it) into a base event. The split follows Google's dp-accounting.

No MPI here: plain frozen dataclasses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv

__all__ = [
    "UNITS",
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


def _orders_array(orders: ArrayLike) -> np.ndarray:
    a = np.asarray(orders, dtype=float)
    if a.ndim > 1 or np.any(np.isnan(a)) or np.any(a < 1.0):
        raise ConfigError(f"Renyi orders {orders!r} must be numbers >= 1", "use orders such as 2, 4, 8, 16, 32")
    return a



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

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter ``D / sigma``."""
        return self.sensitivity / self.sigma

    @property
    def rho(self) -> float:
        """zCDP parameter ``D^2 / (2 sigma^2)``."""
        return 0.5 * self.mu**2



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

    @property
    def rho(self) -> float:
        """zCDP implied by pure DP, ``eps^2 / 2`` (Bun & Steinke 2016, Prop. 1.4)."""
        return 0.5 * self.epsilon**2

    def rdp(self, orders: ArrayLike) -> np.ndarray:
        """Renyi DP of randomized response, the worst eps-DP mechanism (Bun & Steinke Prop. 3.3).

        ``D_a <= (1/(a-1)) ln((e^{a eps} + e^{(1-a) eps}) / (1 + e^eps))``; the order-1 limit is
        ``eps tanh(eps/2)``.
        """
        a = _orders_array(orders)
        e = self.epsilon
        out = np.empty_like(a)
        one = a == 1.0
        out[one] = e * math.tanh(e / 2.0)
        am = a[~one]
        with np.errstate(over="ignore", invalid="ignore"):  # a = inf is set just below
            out[~one] = (np.logaddexp(am * e, (1.0 - am) * e) - np.logaddexp(0.0, e)) / (am - 1.0)
        out[np.isinf(a)] = e
        return np.minimum(np.maximum(out, 0.0), e)


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

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter ``D / b``."""
        return conv.laplace_eps(self.sensitivity, self.scale)

    @property
    def rho(self) -> float:
        """zCDP implied by pure DP, ``eps^2 / 2``."""
        return 0.5 * self.epsilon**2



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

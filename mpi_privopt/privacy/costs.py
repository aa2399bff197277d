"""What one release costs: the only place events meet arithmetic.

Events (:mod:`~mpi_privopt.privacy.events`) are data. This module resolves the events that
wrap others, in one walk over the event types (:func:`resolve`), and gives a release's cost
in each privacy notion: zCDP (:func:`zcdp_rho`), pure DP (:func:`pure_epsilon`), Gaussian DP
(:func:`gdp_mu`) and the Renyi curve of a release known only to be pure DP
(:func:`pure_dp_rdp`, which dp-accounting lacks). The accountants compose these costs.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.amplification import amplification_ratio
from mpi_privopt.privacy.events import (AmplifiedGaussianEvent, GaussianEvent, LaplaceEvent,
                                        PackedLaplaceEvent, PrivacyEvent, PureDPEvent,
                                        ZCDPEvent)

__all__ = ["UnsupportedEventError", "gdp_mu", "pure_dp_rdp", "pure_epsilon", "resolve",
           "zcdp_rho"]


class UnsupportedEventError(ConfigError):
    """An accountant was asked to compose an event it cannot count."""


#: the event classes :func:`resolve` replaces (every other event is counted as itself)
WRAPPERS = (PackedLaplaceEvent, AmplifiedGaussianEvent)


def resolve(event: PrivacyEvent) -> PrivacyEvent:
    """The event an accountant counts for ``event``: itself, unless it wraps others.

    A :class:`PackedLaplaceEvent` is pure DP, the sum of its blocks' ``D / b``; an
    :class:`AmplifiedGaussianEvent` is zCDP, its base's ``D^2 / (2 sigma^2)`` times
    :func:`~mpi_privopt.privacy.amplification.amplification_ratio` (``<= 1``: the local
    cost when nothing amplifies). Both keep the wrapper's owner, unit and record.
    """
    cls = event.__class__
    if cls is PackedLaplaceEvent:
        epsilon = math.fsum(part.sensitivity / part.scale for part in event.parts)  # type: ignore[attr-defined]
        return PureDPEvent(epsilon, owner=event.owner, unit=event.unit, record=event.record)
    if cls is AmplifiedGaussianEvent:
        ratio = amplification_ratio(event.iterations_after, event.constants)  # type: ignore[attr-defined]
        return ZCDPEvent(zcdp_rho(event.base) * ratio,  # type: ignore[attr-defined]
                         owner=event.owner, unit=event.unit, record=event.record)
    return event


def zcdp_rho(event: PrivacyEvent) -> float:
    """zCDP of one private release: ``D^2 / (2 sigma^2)`` for a Gaussian, ``eps^2 / 2`` for
    a pure-DP or Laplace one (``eps = D / b``; Bun & Steinke 2016, Prop. 1.4)."""
    event = resolve(event)
    if isinstance(event, GaussianEvent):
        return 0.5 * (event.sensitivity / event.sigma) ** 2
    if isinstance(event, ZCDPEvent):
        return event.rho
    epsilon = pure_epsilon(event)
    if epsilon is None:
        raise UnsupportedEventError(f"{event!r} has no zCDP cost",
                                    "give a Gaussian, Laplace, pure-DP or zCDP event")
    return 0.5 * epsilon * epsilon  # inf, not OverflowError, past eps ~ 1e154


def pure_epsilon(event: PrivacyEvent) -> float | None:
    """Pure-DP epsilon of a Laplace (``D / b``) or pure-DP release; None for other kinds."""
    event = resolve(event)
    if isinstance(event, LaplaceEvent):
        return event.sensitivity / event.scale
    if isinstance(event, PureDPEvent):
        return event.epsilon
    return None


def gdp_mu(event: PrivacyEvent) -> float | None:
    """Gaussian-DP ``mu = D / sigma`` of a Gaussian release; None for other kinds."""
    return event.sensitivity / event.sigma if isinstance(event, GaussianEvent) else None


def _orders_array(orders: ArrayLike) -> np.ndarray:
    a = np.asarray(orders, dtype=float)
    if a.ndim > 1 or np.any(np.isnan(a)) or np.any(a < 1.0):
        raise ConfigError(f"Renyi orders {orders!r} must be numbers >= 1", "use orders such as 2, 4, 8, 16, 32")
    return a


def pure_dp_rdp(epsilon: float, orders: ArrayLike) -> np.ndarray:
    """Renyi DP of randomized response, the worst eps-DP mechanism (Bun & Steinke Prop. 3.3).

    ``D_a <= (1/(a-1)) ln((e^{a eps} + e^{(1-a) eps}) / (1 + e^eps))``; the order-1 limit is
    ``eps tanh(eps/2)``. dp-accounting has no curve for a release known only to be pure DP.
    """
    a = _orders_array(orders)
    e = float(epsilon)
    out = np.empty_like(a)
    one = a == 1.0
    out[one] = e * math.tanh(e / 2.0)
    am = a[~one]
    with np.errstate(over="ignore", invalid="ignore"):  # a = inf is set just below
        out[~one] = (np.logaddexp(am * e, (1.0 - am) * e) - np.logaddexp(0.0, e)) / (am - 1.0)
    out[np.isinf(a)] = e
    return np.minimum(np.maximum(out, 0.0), e)

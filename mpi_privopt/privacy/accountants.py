"""Privacy events (what was released) and accountants (how to count them).

The split follows Google's dp-accounting: an *event* only describes a release (a Gaussian
mechanism with sensitivity D and noise s, a message sent in the clear, ...), and an
*accountant* decides how a sequence of events composes. Every accountant obeys one contract:

* ``supports(event)`` says whether it can count the event;
* ``compose(event, count=1)`` validates first (type, support, count) and only then changes
  state, so a rejected event leaves the accountant untouched;
* ``get_epsilon(delta)`` gives the (epsilon, delta)-DP guarantee of everything composed so far;
* ``report(delta)`` gives a JSON-ready dict with epsilon and the accountant's own state.

A :class:`NonPrivateEvent` (a message that depends on private data and carries no noise) makes
every accountant report ``inf``: its privacy loss is unbounded, never 0. A
:class:`PublicEvent` (data-independent) costs nothing.

No MPI here: these are plain objects, one per agent in the distributed code.
"""
from __future__ import annotations

import abc
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "GaussianEvent",
    "GaussianExactAccountant",
    "LaplaceEvent",
    "NonPrivateEvent",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PublicEvent",
    "PureDPAccountant",
    "PureDPEvent",
    "RDPAccountant",
    "UnsupportedEventError",
    "ZCDPAccountant",
    "ZCDPEvent",
    "epsilon_all",
]

#: dp-accounting's default grid, so :class:`RDPAccountant` reproduces its numbers.
DEFAULT_RDP_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)] + [128.0, 256.0, 512.0, 1024.0]
)


class UnsupportedEventError(ConfigError):
    """An accountant was asked to compose an event it cannot count."""


def _finite_nonneg(value: Any, name: str, fix: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r} is not a number", fix) from None
    if not math.isfinite(v) or v < 0.0:
        raise ConfigError(f"{name} = {value!r} must be a finite number >= 0", fix)
    return v


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
    """Base class of everything an accountant can be told about: one release."""


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
        d = _finite_nonneg(self.sensitivity, "sensitivity", "give the l2 sensitivity of the released quantity")
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

    def rdp(self, orders: ArrayLike) -> np.ndarray:
        """Renyi DP ``a D^2 / (2 sigma^2)`` at each order (exact for the Gaussian mechanism)."""
        return _orders_array(orders) * self.rho


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
        e = _finite_nonneg(self.epsilon, "epsilon", "give a finite pure-DP epsilon >= 0; for no protection use NonPrivateEvent()")
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
        d = _finite_nonneg(self.sensitivity, "sensitivity", "give the l1 sensitivity of the released quantity")
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

    def rdp(self, orders: ArrayLike) -> np.ndarray:
        """Renyi DP of the Laplace mechanism (Mironov 2017, Prop. 6), as in dp-accounting.

        ``eps + ln(1 + (a-1)(e^{(1-2a) eps} - 1)/(2a-1)) / (a-1)``, with the KL limit
        ``eps + e^-eps - 1`` at order 1. It is exact for one coordinate; for vectors with l1
        sensitivity D it is still the worst case, because the per-coordinate divergence is
        convex in the shift and 0 at 0, hence superadditive: putting the whole shift on one
        coordinate maximises the sum.
        """
        a = _orders_array(orders)
        e = self.epsilon
        out = np.empty_like(a)
        one = a == 1.0
        out[one] = e + math.expm1(-e)
        am = a[~one]
        with np.errstate(over="ignore", invalid="ignore"):
            inner = np.log1p((am - 1.0) * np.expm1((1.0 - 2.0 * am) * e) / (2.0 * am - 1.0))
            out[~one] = e + inner / (am - 1.0)
        out[np.isinf(a)] = e
        return np.minimum(np.maximum(out, 0.0), e)


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
        r = _finite_nonneg(self.rho, "rho", "give a finite zCDP rho >= 0; for no protection use NonPrivateEvent()")
        object.__setattr__(self, "rho", r)

    def rdp(self, orders: ArrayLike) -> np.ndarray:
        """Renyi DP ``a rho`` at each order (the definition of zCDP)."""
        return _orders_array(orders) * self.rho


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
# Accountants
# ---------------------------------------------------------------------------------------------
class PrivacyAccountant(abc.ABC):
    """Common contract of all accountants (see the module docstring).

    Subclasses list the private event types they count in ``_supported`` and implement
    ``_compose`` (called only with a validated, supported, private event) and ``_epsilon``.
    """

    name: ClassVar[str] = "abstract"
    _supported: ClassVar[tuple[type[PrivacyEvent], ...]] = ()
    #: Smallest delta that get_epsilon accepts; pure DP also accepts 0.
    _allow_zero_delta: ClassVar[bool] = False

    def __init__(self) -> None:
        self._n_events = 0
        self._non_private = False

    # -- contract -------------------------------------------------------------------------
    def supports(self, event: PrivacyEvent) -> bool:
        """Whether :meth:`compose` accepts ``event``."""
        return isinstance(event, (NonPrivateEvent, PublicEvent, *self._supported))

    def compose(self, event: PrivacyEvent, count: int = 1) -> PrivacyAccountant:
        """Add ``count`` repetitions of ``event``; validate everything before changing state.

        Parameters
        ----------
        event : PrivacyEvent
            The release.
        count : int, optional
            Number of repetitions, ``>= 0``.

        Returns
        -------
        PrivacyAccountant
            ``self``, so that calls chain.

        Raises
        ------
        UnsupportedEventError
            If this accountant cannot count ``event``.
        ConfigError
            If ``event`` is not an event or ``count`` is not an integer ``>= 0``.
        """
        if not isinstance(event, PrivacyEvent):
            raise ConfigError(
                f"{event!r} is not a privacy event",
                "pass a GaussianEvent, LaplaceEvent, PureDPEvent, ZCDPEvent, NonPrivateEvent or PublicEvent",
            )
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ConfigError(f"count = {count!r} must be an integer >= 0", "give how many times the event was repeated")
        if not self.supports(event):
            names = ", ".join(t.__name__ for t in (*self._supported, NonPrivateEvent, PublicEvent))
            raise UnsupportedEventError(
                f"{type(self).__name__} cannot count {type(event).__name__} ({event!r})",
                f"use an accountant that supports it (this one supports {names}); "
                "ZCDPAccountant and RDPAccountant count every event type",
            )
        count = int(count)
        if count == 0:
            return self
        if isinstance(event, NonPrivateEvent):
            self._non_private = True
        elif not isinstance(event, PublicEvent):
            self._compose(event, count)
        self._n_events += count
        return self

    def get_epsilon(self, delta: float) -> float:
        """epsilon of everything composed so far at ``delta`` (``inf`` after a non-private event).

        Parameters
        ----------
        delta : float
            Target delta in (0, 1) (pure DP also takes 0).

        Returns
        -------
        float
            epsilon ``>= 0``.
        """
        delta = self._check_delta(delta)
        if self._non_private:
            return math.inf
        return self._epsilon(delta)

    def report(self, delta: float) -> dict[str, Any]:
        """JSON-ready summary: accountant name, delta, epsilon, and the accountant's state."""
        delta = self._check_delta(delta)
        out: dict[str, Any] = {
            "accountant": self.name,
            "delta": delta,
            "epsilon": self.get_epsilon(delta),
            "events": self._n_events,
            "non_private": self._non_private,
        }
        out.update(self._state(delta))
        return out

    @property
    def n_events(self) -> int:
        """Number of events composed (repetitions counted, public and non-private included)."""
        return self._n_events

    @property
    def non_private(self) -> bool:
        """Whether a non-private event was composed."""
        return self._non_private

    # -- for subclasses -------------------------------------------------------------------
    @abc.abstractmethod
    def _compose(self, event: PrivacyEvent, count: int) -> None:
        """Add a supported private event; arguments are already validated."""

    @abc.abstractmethod
    def _epsilon(self, delta: float) -> float:
        """epsilon when no non-private event was composed."""

    def _state(self, delta: float) -> dict[str, Any]:
        return {}

    def _check_delta(self, delta: float) -> float:
        if self._allow_zero_delta:
            try:
                if float(delta) == 0.0:
                    return 0.0
            except (TypeError, ValueError):
                pass
        return conv._check_delta(delta)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(events={self._n_events}, non_private={self._non_private})"


class ZCDPAccountant(PrivacyAccountant):
    """zCDP: rho adds up under (adaptive) composition.

    Parameters
    ----------
    conversion : {"tight", "standard"}
        Conversion used by :meth:`get_epsilon`: Canonne-Kamath-Steinke (default) or
        Bun-Steinke Prop. 1.3 (what the zCDP-NFL paper reports). :meth:`report` gives both.
    """

    name = "zcdp"
    _supported = (GaussianEvent, LaplaceEvent, PureDPEvent, ZCDPEvent)

    def __init__(self, conversion: str = "tight") -> None:
        super().__init__()
        if conversion not in ("tight", "standard"):
            raise ConfigError(f"conversion = {conversion!r} is not known", 'use "tight" or "standard"')
        self.conversion = conversion
        self._rho = 0.0

    @property
    def rho(self) -> float:
        """Total zCDP (``inf`` after a non-private event)."""
        return math.inf if self._non_private else self._rho

    def _compose(self, event: PrivacyEvent, count: int) -> None:
        self._rho += count * event.rho  # type: ignore[attr-defined]

    def _epsilon(self, delta: float) -> float:
        return self.epsilon_tight(delta) if self.conversion == "tight" else self.epsilon_standard(delta)

    def epsilon_standard(self, delta: float) -> float:
        """Bun-Steinke Prop. 1.3 epsilon of the total rho."""
        return conv.zcdp_to_eps_standard(self.rho, delta)

    def epsilon_tight(self, delta: float) -> float:
        """Canonne-Kamath-Steinke epsilon of the total rho (continuous order)."""
        return conv.zcdp_to_eps_tight(self.rho, delta)

    def _state(self, delta: float) -> dict[str, Any]:
        return {
            "conversion": self.conversion,
            "rho": self.rho,
            "epsilon_standard": self.epsilon_standard(delta),
            "epsilon_tight": self.epsilon_tight(delta),
        }


class PureDPAccountant(PrivacyAccountant):
    """Pure DP: epsilon adds up (basic composition). Counts Laplace and pure-DP events only."""

    name = "pure"
    _supported = (LaplaceEvent, PureDPEvent)
    _allow_zero_delta = True

    def __init__(self) -> None:
        super().__init__()
        self._eps = 0.0

    @property
    def epsilon(self) -> float:
        """Total pure epsilon (``inf`` after a non-private event)."""
        return math.inf if self._non_private else self._eps

    def _compose(self, event: PrivacyEvent, count: int) -> None:
        self._eps += count * event.epsilon  # type: ignore[attr-defined]

    def _epsilon(self, delta: float) -> float:
        return self._eps


class RDPAccountant(PrivacyAccountant):
    """Renyi DP on a fixed grid of orders: curves add up, converted with CKS over the grid.

    Parameters
    ----------
    orders : sequence of float, optional
        Renyi orders (each ``>= 1``, at least one ``> 1``). Defaults to dp-accounting's grid,
        so results match its ``RdpAccountant``.
    """

    name = "rdp"
    _supported = (GaussianEvent, LaplaceEvent, PureDPEvent, ZCDPEvent)

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        super().__init__()
        o = _orders_array(DEFAULT_RDP_ORDERS if orders is None else orders).ravel()
        if o.size == 0 or not np.any(o > 1.0) or np.any(np.isinf(o)):
            raise ConfigError(f"orders = {orders!r} has no finite order > 1", "give finite orders such as 1.5, 2, 4, 8, 16, 32, 64")
        self._orders = o
        self._rdp = np.zeros_like(o)

    @property
    def orders(self) -> np.ndarray:
        """The Renyi orders (a copy)."""
        return self._orders.copy()

    @property
    def rdp(self) -> np.ndarray:
        """Total RDP at each order (``inf`` after a non-private event)."""
        return np.full_like(self._rdp, math.inf) if self._non_private else self._rdp.copy()

    def _compose(self, event: PrivacyEvent, count: int) -> None:
        self._rdp = self._rdp + count * event.rdp(self._orders)  # type: ignore[attr-defined]

    def _epsilon(self, delta: float) -> float:
        return conv.rdp_to_eps_orders(self._orders, self._rdp, delta)

    def _state(self, delta: float) -> dict[str, Any]:
        if self._non_private:
            return {"optimal_order": None}
        _, a = conv.rdp_to_eps_orders(self._orders, self._rdp, delta, return_order=True)
        return {"optimal_order": a}


class GaussianExactAccountant(PrivacyAccountant):
    """Exact composition of Gaussian mechanisms via Gaussian DP: ``mu^2`` adds up.

    Valid when each release's ratio ``sensitivity / sigma`` is fixed before the run (its input
    may depend on earlier outputs). Counts Gaussian events only: a zCDP or pure-DP guarantee
    does not pin down a Gaussian trade-off curve.
    """

    name = "gaussian_exact"
    _supported = (GaussianEvent,)

    def __init__(self) -> None:
        super().__init__()
        self._mu2 = 0.0

    @property
    def mu(self) -> float:
        """Total Gaussian-DP parameter (``inf`` after a non-private event)."""
        return math.inf if self._non_private else math.sqrt(self._mu2)

    def _compose(self, event: PrivacyEvent, count: int) -> None:
        self._mu2 += count * event.mu**2  # type: ignore[attr-defined]

    def _epsilon(self, delta: float) -> float:
        return conv.gaussian_exact_eps(math.sqrt(self._mu2), delta)

    def _state(self, delta: float) -> dict[str, Any]:
        return {"mu": self.mu}


# ---------------------------------------------------------------------------------------------
# All conversions at once
# ---------------------------------------------------------------------------------------------
def _expand(events: Iterable[PrivacyEvent | tuple[PrivacyEvent, int]]) -> list[tuple[PrivacyEvent, int]]:
    out = []
    for item in events:
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ConfigError(f"{item!r} is not an (event, count) pair", "give events or (event, count) pairs")
            out.append((item[0], item[1]))
        else:
            out.append((item, 1))
    return out


def epsilon_all(
    events: Iterable[PrivacyEvent | tuple[PrivacyEvent, int]], delta: float
) -> dict[str, float | None]:
    """epsilon of a sequence of releases under every applicable accounting, for reports.

    Parameters
    ----------
    events : iterable of PrivacyEvent or (PrivacyEvent, count)
        The releases of one agent.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    dict
        ``"exact"`` (Gaussian DP; ``None`` when some event is not Gaussian, public or
        non-private), ``"tight"`` (CKS on the total zCDP), ``"standard"`` (Bun-Steinke on the
        total zCDP), ``"rdp"`` (CKS on dp-accounting's order grid), ``"rho"`` (total zCDP),
        ``"delta"``, and ``"pure"`` (sum of pure epsilons) when every event is Laplace, pure-DP,
        public or non-private. Any non-private event makes every epsilon ``inf``. For
        Gaussian-only events ``exact <= tight <= standard``.
    """
    items = _expand(events)
    delta = conv._check_delta(delta)
    zc = ZCDPAccountant()
    rdp = RDPAccountant()
    exact: GaussianExactAccountant | None = GaussianExactAccountant()
    pure: PureDPAccountant | None = PureDPAccountant()
    for event, count in items:
        zc.compose(event, count)  # validates event and count; supports every type
        rdp.compose(event, count)
        if exact is not None:
            exact = exact.compose(event, count) if exact.supports(event) else None
        if pure is not None:
            pure = pure.compose(event, count) if pure.supports(event) else None
    out: dict[str, float | None] = {
        "exact": None if exact is None else exact.get_epsilon(delta),
        "tight": zc.epsilon_tight(delta),
        "standard": zc.epsilon_standard(delta),
        "rdp": rdp.get_epsilon(delta),
        "rho": zc.rho,
        "delta": delta,
    }
    if pure is not None:
        out["pure"] = pure.get_epsilon(delta)
    return out

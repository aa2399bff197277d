"""Accountants: how releases compose (the events, what was released, are in ``events``).

The split follows Google's dp-accounting: an *event* only describes a release (a Gaussian
mechanism with sensitivity D and noise s, a message sent in the clear, ...), and an
*accountant* decides how a sequence of events composes. This module is the only place
privacy arithmetic lives: the per-link ledger stores events and asks
:class:`HeadlineAccountant` for totals. Every accountant obeys one contract:

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv
from mpi_privopt.privacy.conversions import DEFAULT_RDP_ORDERS
from mpi_privopt.privacy.amplification import amplification_ratio
from mpi_privopt.privacy.events import (AmplifiedGaussianEvent, GaussianEvent, LaplaceEvent,
                                        NonPrivateEvent, PackedLaplaceEvent, PrivacyEvent,
                                        PublicEvent, PureDPEvent, ZCDPEvent)

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "GaussianEvent",
    "Budget",
    "GaussianExactAccountant",
    "HeadlineAccountant",
    "PLDAccountant",
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
    "epsilons",
    "gdp_mu",
    "pure_dp_rdp",
    "pure_epsilon",
    "resolve",
    "zcdp_rho",
]



class UnsupportedEventError(ConfigError):
    """An accountant was asked to compose an event it cannot count."""


# ---------------------------------------------------------------------------------------------
# What one event costs: the only place events meet arithmetic
# ---------------------------------------------------------------------------------------------
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
    return 0.5 * epsilon ** 2


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
        event = resolve(event)
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

    def merge(self, other: "PrivacyAccountant") -> "PrivacyAccountant":
        """Add everything ``other`` (an accountant of the same type) composed: the
        composition of both sequences of events. Returns ``self``."""
        if type(other) is not type(self):
            raise TypeError(f"cannot merge a {type(other).__name__} into a {type(self).__name__}")
        self._merge(other)
        self._n_events += other._n_events
        self._non_private |= other._non_private
        return self

    def _merge(self, other: "PrivacyAccountant") -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot merge")

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
        self._rho += count * zcdp_rho(event)

    def _epsilon(self, delta: float) -> float:
        return self.epsilon_tight(delta) if self.conversion == "tight" else self.epsilon_standard(delta)

    def _merge(self, other: "ZCDPAccountant") -> None:
        self._rho += other._rho

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
        self._eps += count * pure_epsilon(event)  # type: ignore[operator]

    def _epsilon(self, delta: float) -> float:
        return self._eps

    def _merge(self, other: "PureDPAccountant") -> None:
        self._eps += other._eps


class RDPAccountant(PrivacyAccountant):
    """Renyi DP on a fixed grid of orders: curves add up, converted with CKS over the grid.

    The curves of Gaussian, Laplace and zCDP releases are dp-accounting's (its
    ``RdpAccountant``); dp-accounting has none for a release known only to be pure
    eps-DP, whose curve (randomized response, the worst case) is
    :func:`pure_dp_rdp`.

    Parameters
    ----------
    orders : sequence of float, optional
        Renyi orders (each ``>= 1``, at least one ``> 1``). Defaults to dp-accounting's grid.
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
        curve = (pure_dp_rdp(event.epsilon, self._orders) if isinstance(event, PureDPEvent)
                 else _dp_accounting_rdp(event, self._orders))
        self._rdp = self._rdp + count * curve

    def _merge(self, other: "RDPAccountant") -> None:
        if not np.array_equal(self._orders, other._orders):
            raise ValueError("RDP accountants on different orders cannot be merged")
        self._rdp = self._rdp + other._rdp

    def _epsilon(self, delta: float) -> float:
        return conv.rdp_to_eps_orders(self._orders, self._rdp, delta)

    def _state(self, delta: float) -> dict[str, Any]:
        if self._non_private:
            return {"optimal_order": None}
        _, a = conv.rdp_to_eps_orders(self._orders, self._rdp, delta, return_order=True)
        return {"optimal_order": a}


def _dp_accounting_rdp(event: PrivacyEvent, orders: np.ndarray) -> np.ndarray:
    """The RDP curve of one Gaussian, Laplace or zCDP release, by dp-accounting."""
    from dp_accounting import dp_event  # noqa: PLC0415 (only reports need RDP)
    from dp_accounting.rdp import RdpAccountant  # noqa: PLC0415

    if isinstance(event, ZCDPEvent):
        dp = dp_event.ZCDpEvent(event.rho)
    elif event.sensitivity == 0.0 or math.isinf(getattr(event, "sigma", 0.0)):  # type: ignore[attr-defined]
        return np.zeros_like(orders)  # nothing can differ between neighbours
    elif isinstance(event, GaussianEvent):
        dp = dp_event.GaussianDpEvent(event.sigma / event.sensitivity)
    else:
        dp = dp_event.LaplaceDpEvent(event.scale / event.sensitivity)  # type: ignore[attr-defined]
    accountant = RdpAccountant(list(orders))
    accountant.compose(dp)
    return np.asarray(accountant.rdp, dtype=float)


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
        self._mu2 += count * gdp_mu(event)**2  # type: ignore[operator]

    def _epsilon(self, delta: float) -> float:
        return conv.gaussian_exact_eps(math.sqrt(self._mu2), delta)

    def _merge(self, other: "GaussianExactAccountant") -> None:
        self._mu2 += other._mu2

    def _state(self, delta: float) -> dict[str, Any]:
        return {"mu": self.mu}


class PLDAccountant(PrivacyAccountant):
    """Privacy loss distributions (dp-accounting's ``PLDAccountant``): near-exact composition.

    Counts Gaussian and Laplace releases; it is what gives Laplace releases a tight
    epsilon (the zCDP and RDP bounds of a Laplace mechanism are loose, and its pure epsilon
    adds up linearly). A release of sensitivity D and scale b is the dominating pair of one
    shift by D, i.e. dp-accounting's event with noise multiplier b / D under its
    add-or-remove relation. dp-accounting's estimate is pessimistic (an upper bound).

    Composition runs once, at :meth:`get_epsilon`, and takes seconds for a few hundred
    distinct releases (identical consecutive releases are self-composed, which is fast):
    use it at the end of a run, never before every release.

    Parameters
    ----------
    value_discretization_interval : float, optional
        dp-accounting's discretization of the privacy loss (its default, 1e-4).
    """

    name = "pld"
    _supported = (GaussianEvent, LaplaceEvent)

    def __init__(self, value_discretization_interval: float = 1e-4) -> None:
        super().__init__()
        self.value_discretization_interval = value_discretization_interval
        self._runs: list[list] = []  # [event, count] for consecutive equal events

    def _compose(self, event: PrivacyEvent, count: int) -> None:
        if event.sensitivity == 0.0:  # type: ignore[attr-defined]
            return  # a release that cannot differ between neighbours costs nothing
        if self._runs and self._runs[-1][0] == event:
            self._runs[-1][1] += count
        else:
            self._runs.append([event, count])

    def _merge(self, other: "PLDAccountant") -> None:
        self._runs.extend([event, count] for event, count in other._runs)

    def _epsilon(self, delta: float) -> float:
        if not self._runs:
            return 0.0
        # imported here: only this accountant needs dp-accounting, and only at the end
        from dp_accounting import dp_event, pld  # noqa: PLC0415

        accountant = pld.PLDAccountant(
            value_discretization_interval=self.value_discretization_interval)
        for event, count in self._runs:
            if isinstance(event, GaussianEvent):
                dp = dp_event.GaussianDpEvent(event.sigma / event.sensitivity)
            else:
                dp = dp_event.LaplaceDpEvent(event.scale / event.sensitivity)
            accountant.compose(dp, count)
        return max(0.0, float(accountant.get_epsilon(delta)))


#: the private events :class:`HeadlineAccountant` counts
_COUNTED = (GaussianEvent, LaplaceEvent, PureDPEvent, ZCDPEvent)
#: the order in which conversions are preferred when they give the same epsilon
_PREFERENCE = ("exact", "pure", "pld", "tight")


class HeadlineAccountant:
    """Every accounting that applies to a sequence of releases, and the smallest epsilon.

    zCDP always (converted by Canonne-Kamath-Steinke, ``tight``, and by Bun-Steinke,
    ``standard``); exact Gaussian composition while every release is Gaussian (``exact``);
    pure DP while every release is Laplace or pure (``pure``); and, when a privacy loss
    distribution was computed at the end of a run (:meth:`set_pld`), ``pld``. The headline
    (``best``) is the smallest valid one. This is what the per-link ledger asks for totals;
    it composes incrementally (the budget guard asks before every release) and merges (a
    coalition of observers, a whole run) by adding states.

    A release without a differential-privacy guarantee (:class:`NonPrivateEvent`) makes
    every epsilon infinite (``unbounded``), never 0; a public one costs nothing.
    """

    __slots__ = ("releases", "public", "nonprivate", "notes", "zcdp", "exact", "pure",
                 "pld", "pld_delta")

    def __init__(self) -> None:
        #: data-dependent releases composed (private and non-private)
        self.releases = 0
        #: data-independent releases (free)
        self.public = 0
        #: releases without a DP guarantee
        self.nonprivate = 0
        #: what the non-private releases say of themselves
        self.notes: list[str] = []
        self.zcdp = ZCDPAccountant()
        self.exact: GaussianExactAccountant | None = GaussianExactAccountant()
        self.pure: PureDPAccountant | None = PureDPAccountant()
        #: epsilon of a privacy loss distribution at ``pld_delta`` (end of run), or None
        self.pld: float | None = None
        self.pld_delta: float | None = None

    # -- composing ------------------------------------------------------------------------
    def add(self, event: PrivacyEvent, count: int = 1) -> None:
        """Compose ``count`` releases of ``event`` (validated when it was made; a wrapped
        event is counted as what :func:`resolve` makes of it)."""
        event = resolve(event)
        cls = event.__class__
        if cls is PublicEvent:
            self.public += count
            return
        self.releases += count
        if cls is NonPrivateEvent:
            self.nonprivate += count
            if event.note and event.note not in self.notes:  # type: ignore[attr-defined]
                self.notes.append(event.note)  # type: ignore[attr-defined]
            return
        if cls not in _COUNTED and not isinstance(event, _COUNTED):
            raise UnsupportedEventError(f"the accountant cannot count {event!r}",
                                        "book one of the events of mpi_privopt.privacy.events")
        # Sub-accountants are fed directly: the event is valid and supported by each.
        self.zcdp._compose(event, count)
        if self.exact is not None:
            if cls is GaussianEvent:
                self.exact._compose(event, count)
            else:
                self.exact = None
        if self.pure is not None:
            if cls is LaplaceEvent or cls is PureDPEvent:
                self.pure._compose(event, count)
            else:
                self.pure = None
        if self.pld is not None:
            self.pld = self.pld_delta = None  # no longer covers every release

    def merge(self, other: "HeadlineAccountant") -> None:
        """Add every release ``other`` composed."""
        self.releases += other.releases
        self.public += other.public
        self.nonprivate += other.nonprivate
        self.notes += [n for n in other.notes if n not in self.notes]
        self.zcdp._merge(other.zcdp)
        self.exact = (None if self.exact is None or other.exact is None
                      else self.exact.merge(other.exact))
        self.pure = (None if self.pure is None or other.pure is None
                     else self.pure.merge(other.pure))
        self.pld = self.pld_delta = None

    def copy(self) -> "HeadlineAccountant":
        """An independent accountant with the same releases."""
        out = HeadlineAccountant()
        out.merge(self)
        return out

    def set_pld(self, epsilon: float, delta: float) -> None:
        """Record the privacy-loss-distribution epsilon of exactly these releases."""
        self.pld, self.pld_delta = epsilon, delta

    # -- questions ------------------------------------------------------------------------
    @property
    def unbounded(self) -> bool:
        return self.nonprivate > 0

    @property
    def rho(self) -> float:
        """Total zCDP of the private releases."""
        return self.zcdp._rho

    @property
    def mu2(self) -> float:
        """Squared Gaussian-DP parameter while every release is Gaussian (else 0)."""
        return self.exact._mu2 if self.exact is not None else 0.0

    @property
    def gaussian_only(self) -> bool:
        return self.exact is not None

    @property
    def pure_only(self) -> bool:
        return self.pure is not None

    def epsilon(self, delta: float, exact: float | None = None) -> dict[str, float | str | None]:
        """epsilon at ``delta`` by each conversion that applies (inf when unbounded).

        ``tight`` and ``standard`` convert the total zCDP; ``exact`` applies while every
        release was Gaussian, ``pure`` while every release was pure, ``pld`` when a privacy
        loss distribution was computed at this delta. ``best`` is the smallest valid one,
        the headline, and ``conversion`` its name. Every mechanism here fixes its
        sensitivity and noise scale independently of the data, which is what the exact
        composition needs. ``exact``: the exact Gaussian epsilon when the caller already
        converted it (:func:`epsilons` does, for many accountants in one vectorised call).
        """
        if self.unbounded:
            return {"tight": math.inf, "standard": math.inf, "exact": math.inf,
                    "pure": math.inf, "pld": math.inf, "best": math.inf,
                    "conversion": "unbounded"}
        mu2 = self.mu2
        result: dict[str, float | str | None] = {
            "tight": self.zcdp.epsilon_tight(delta),
            "standard": self.zcdp.epsilon_standard(delta),
            "exact": (exact if exact is not None else self.exact.get_epsilon(delta) if mu2 > 0
                      else 0.0) if self.exact is not None else None,
            "pure": self.pure.epsilon if self.pure is not None else None,
            "pld": self.pld if self.pld_delta == delta else None,
        }
        name = min((k for k in _PREFERENCE if result[k] is not None), key=lambda k: result[k])
        result["best"] = result[name]
        result["conversion"] = name
        return result

    def within(self, budget: "Budget") -> bool:
        """Whether the headline epsilon is at most ``budget`` (cheap checks first)."""
        if self.unbounded:
            return False
        if (self.zcdp._rho <= budget.rho or (self.exact is not None and self.exact._mu2 <= budget.mu2)
                or (self.pure is not None and self.pure._eps <= budget.epsilon)):
            return True
        return self.epsilon(budget.delta)["best"] <= budget.epsilon

    # -- storage --------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready state (privacy.json's per-link and per-group entries)."""
        return {"releases": self.releases, "public": self.public, "rho": self.zcdp._rho,
                "mu2": self.mu2, "pure": self.pure._eps if self.pure is not None else 0.0,
                "gaussian_only": self.gaussian_only, "pure_only": self.pure_only,
                "nonprivate": self.nonprivate, "notes": list(self.notes),
                "pld": self.pld, "pld_delta": self.pld_delta}

    @classmethod
    def from_dict(cls, data: dict) -> "HeadlineAccountant":
        out = cls()
        out.releases, out.public = data["releases"], data["public"]
        out.nonprivate, out.notes = data["nonprivate"], list(data["notes"])
        out.zcdp._rho = data["rho"]
        if data["gaussian_only"]:
            out.exact._mu2 = data["mu2"]  # type: ignore[union-attr]
        else:
            out.exact = None
        if data["pure_only"]:
            out.pure._eps = data["pure"]  # type: ignore[union-attr]
        else:
            out.pure = None
        out.pld, out.pld_delta = data.get("pld"), data.get("pld_delta")
        return out

    # -- the numbers epsilon depends on (a run's evaluation sends them, not epsilon) ---------
    #: the layout of :meth:`exposure`; ``flags`` = unbounded + 2 gaussian_only + 4 pure_only
    EXPOSURE = ("flags", "rho", "mu2", "pure")

    def exposure(self) -> tuple[float, float, float, float]:
        """The state :meth:`epsilon` depends on, as four floats (layout :data:`EXPOSURE`).

        Only for an accountant without a privacy-loss-distribution figure (during a run:
        :meth:`set_pld` is called at its end), which :meth:`from_exposure` could not keep.
        """
        if self.pld is not None:
            raise ValueError("an accountant with a PLD figure has no exposure vector")
        flags = int(self.unbounded) + 2 * int(self.gaussian_only) + 4 * int(self.pure_only)
        return (float(flags), self.zcdp._rho, self.mu2,
                self.pure._eps if self.pure is not None else 0.0)

    @classmethod
    def from_exposure(cls, exposure) -> "HeadlineAccountant":
        """An accountant whose :meth:`epsilon` equals that of the one that gave ``exposure``."""
        flags, rho, mu2, pure = (float(x) for x in exposure)
        unbounded, gaussian_only, pure_only = (int(flags) >> bit & 1 for bit in range(3))
        out = cls()
        out.nonprivate = int(unbounded)
        out.zcdp._rho = rho
        if gaussian_only:
            out.exact._mu2 = mu2  # type: ignore[union-attr]
        else:
            out.exact = None
        if pure_only:
            out.pure._eps = pure  # type: ignore[union-attr]
        else:
            out.pure = None
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HeadlineAccountant) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"HeadlineAccountant(releases={self.releases}, rho={self.rho:.6g}, "
                f"unbounded={self.unbounded})")


def epsilons(accountants: Sequence[HeadlineAccountant], delta: float) -> list[dict]:
    """:meth:`HeadlineAccountant.epsilon` of each accountant, the exact Gaussian conversions
    of all of them in one vectorised call (the end of a run converts every link)."""
    mu = np.sqrt([acc.mu2 if acc.exact is not None and not acc.unbounded else 0.0
                  for acc in accountants])
    exact = conv.gaussian_exact_eps(mu, delta) if len(mu) else mu
    return [acc.epsilon(delta, exact=float(e)) for acc, e in zip(accountants, exact)]


def dominance(exposures: np.ndarray) -> np.ndarray:
    """``D[i, j]``: accountant i's epsilon is at least j's at every delta, without converting.

    ``exposures`` holds one :meth:`HeadlineAccountant.exposure` per row. Every conversion
    grows with its own total (rho, mu^2, pure epsilon) and ``best`` is the smallest over
    the conversions that apply; so i's best is at least j's when i is unbounded, or when
    neither is and each conversion that applies to i also applies to j with a total at
    most i's.
    """
    flags, rho, mu2, pure = np.asarray(exposures, dtype=float).T[:, :, None]
    unbounded, gaussian, pure_only = (flags.astype(int) >> bit & 1 for bit in range(3))
    T = lambda column: column.T  # noqa: E731  (j's values along the second axis)
    return (unbounded > 0) | (
        (T(unbounded) == 0) & (rho >= T(rho))
        & ((gaussian == 0) | ((T(gaussian) > 0) & (mu2 >= T(mu2))))
        & ((pure_only == 0) | ((T(pure_only) > 0) & (pure >= T(pure)))))


def most_exposed(exposures: np.ndarray, delta: float,
                 convert: Callable[[HeadlineAccountant], float] | None = None) -> int | None:
    """The row of ``exposures`` (:meth:`HeadlineAccountant.exposure`) with the largest
    headline epsilon at ``delta``; None when there is no row.

    Only the rows no other row strictly dominates (:func:`dominance`) are converted: after
    a broadcast every link of an agent carries the same releases (one row, nothing
    converted), and totals that differ only by rounding leave a small front. ``convert``:
    ``accountant -> best epsilon`` (``accountant.epsilon(delta)["best"]`` by default).
    """
    exposures = np.asarray(exposures, dtype=float).reshape(-1, len(HeadlineAccountant.EXPOSURE))
    if not len(exposures):
        return None
    if (exposures == exposures[0]).all():
        return 0  # one total (a broadcast's links): nothing to compare
    D = dominance(exposures)
    # the rows no other row strictly dominates, the first of rows that dominate each other
    earlier = np.triu(D & D.T, k=1)
    front = np.flatnonzero(~((D & ~D.T) | earlier).any(axis=0))
    if len(front) == 1:
        return int(front[0])
    convert = convert or (lambda acc: acc.epsilon(delta)["best"])
    eps = [convert(HeadlineAccountant.from_exposure(exposures[i])) for i in front]
    return int(front[int(np.argmax(eps))])


@dataclass(frozen=True)
class Budget:
    """An epsilon budget at a delta, with the equivalent totals of each accounting.

    The zCDP total and the Gaussian-DP mu^2 that meet the budget are monotone in epsilon,
    so comparing a running total against them decides most releases without a conversion.
    """

    epsilon: float
    delta: float
    rho: float
    mu2: float

    @classmethod
    def of(cls, epsilon: float, delta: float) -> "Budget":
        if math.isinf(epsilon):
            return cls(epsilon, delta, math.inf, math.inf)
        from .calibration import calibrate_gdp_mu, calibrate_zcdp_total  # noqa: PLC0415 (cycle)
        return cls(epsilon, delta, calibrate_zcdp_total(epsilon, delta, "tight"),
                   calibrate_gdp_mu(epsilon, delta) ** 2)


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
        ``"delta"``, ``"pure"`` (sum of pure epsilons) when every event is Laplace, pure-DP,
        public or non-private, and ``"pld"`` (privacy loss distributions, dp-accounting) when
        some event is Laplace and every one is Gaussian or Laplace. Any non-private event
        makes every epsilon ``inf``. For Gaussian-only events ``exact <= tight <= standard``.
    """
    items = _expand(events)
    delta = conv._check_delta(delta)
    head = HeadlineAccountant()
    rdp = RDPAccountant()
    for event, count in items:
        rdp.compose(event, count)  # validates event and count; supports every type
        head.add(event, count)
    if head.unbounded:
        return {"exact": None if head.exact is None else math.inf, "tight": math.inf,
                "standard": math.inf, "rdp": math.inf, "rho": math.inf, "delta": delta,
                **({"pure": math.inf} if head.pure is not None else {})}
    eps = head.epsilon(delta)
    out: dict[str, float | None] = {
        "exact": eps["exact"],
        "tight": eps["tight"],
        "standard": eps["standard"],
        "rdp": rdp.get_epsilon(delta),
        "rho": head.rho,
        "delta": delta,
    }
    if head.pure is not None:
        out["pure"] = eps["pure"]
    kinds = {event.__class__ for event, _ in items}
    if LaplaceEvent in kinds and kinds <= {GaussianEvent, LaplaceEvent, PublicEvent}:
        pld = PLDAccountant()
        for event, count in items:
            if event.__class__ is not PublicEvent:
                pld.compose(event, count)
        out["pld"] = pld.get_epsilon(delta)
    return out

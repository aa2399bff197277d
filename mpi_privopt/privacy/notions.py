"""One accountant per privacy notion: how a sequence of releases composes in it.

zCDP (:class:`ZCDPAccountant`), pure DP (:class:`PureDPAccountant`), Renyi DP
(:class:`RDPAccountant`, dp-accounting's curves), Gaussian DP (:class:`GaussianExactAccountant`)
and privacy loss distributions (:class:`PLDAccountant`, dp-accounting). The split follows
Google's dp-accounting: events describe releases, accountants compose them. Every accountant
obeys one contract:

* ``supports(event)`` says whether it can count the event;
* ``compose(event, count=1)`` validates first (type, support, count) and only then changes
  state, so a rejected event leaves the accountant untouched; a wrapped event is counted as
  what :func:`~mpi_privopt.privacy.costs.resolve` makes of it;
* ``get_epsilon(delta)`` gives the (epsilon, delta)-DP guarantee of everything composed so far;
* ``report(delta)`` gives a JSON-ready dict with epsilon and the accountant's own state.

A :class:`NonPrivateEvent` (a message that depends on private data and carries no noise) makes
every accountant report ``inf``: its privacy loss is unbounded, never 0. A
:class:`PublicEvent` (data-independent) costs nothing. The run's own ledger composes with
:class:`~mpi_privopt.privacy.accountants.HeadlineAccountant`, which keeps plain totals; these
are for reports (``privacy epsilon``) and the end-of-run distributions.

No MPI here.
"""
from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv
from mpi_privopt.privacy.conversions import DEFAULT_RDP_ORDERS
from mpi_privopt.privacy.costs import (UnsupportedEventError, _orders_array, gdp_mu,
                                       pure_dp_rdp, pure_epsilon, resolve, zcdp_rho)
from mpi_privopt.privacy.events import (GaussianEvent, LaplaceEvent, NonPrivateEvent,
                                        PrivacyEvent, PublicEvent, PureDPEvent, ZCDPEvent)

__all__ = ["GaussianExactAccountant", "PLDAccountant", "PrivacyAccountant", "PureDPAccountant",
           "RDPAccountant", "ZCDPAccountant"]


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

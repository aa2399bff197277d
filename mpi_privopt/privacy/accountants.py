"""The accountant the ledger asks: every accounting that applies, and the smallest epsilon.

Events (:mod:`~mpi_privopt.privacy.events`) describe releases; what one release costs is
:mod:`~mpi_privopt.privacy.costs`'s; one accountant per privacy notion is in
:mod:`~mpi_privopt.privacy.notions`. This module holds what a run needs:
:class:`HeadlineAccountant` (plain totals, composed incrementally and merged by adding),
its vectorised end-of-run conversion (:func:`epsilons`), the comparisons that spare
conversions (:func:`dominance`, :func:`most_exposed`), the budget's equivalent totals
(:class:`Budget`), and every conversion at once for reports (:func:`epsilon_all`).

No MPI here.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy import conversions as conv
from mpi_privopt.privacy.conversions import DEFAULT_RDP_ORDERS
from mpi_privopt.privacy.costs import (WRAPPERS, UnsupportedEventError, gdp_mu, pure_dp_rdp,
                                       pure_epsilon, resolve, zcdp_rho)
from mpi_privopt.privacy.events import (GaussianEvent, LaplaceEvent, NonPrivateEvent,
                                        PrivacyEvent, PublicEvent, PureDPEvent, ZCDPEvent)
from mpi_privopt.privacy.notions import (GaussianExactAccountant, PLDAccountant,
                                         PrivacyAccountant, PureDPAccountant, RDPAccountant,
                                         ZCDPAccountant)

__all__ = [
    "DEFAULT_RDP_ORDERS",
    "Budget",
    "GaussianEvent",
    "GaussianExactAccountant",
    "HeadlineAccountant",
    "LaplaceEvent",
    "NonPrivateEvent",
    "PLDAccountant",
    "PrivacyAccountant",
    "PrivacyEvent",
    "PublicEvent",
    "PureDPAccountant",
    "PureDPEvent",
    "RDPAccountant",
    "UnsupportedEventError",
    "ZCDPAccountant",
    "ZCDPEvent",
    "dominance",
    "epsilon_all",
    "epsilons",
    "gdp_mu",
    "most_exposed",
    "pure_dp_rdp",
    "pure_epsilon",
    "resolve",
    "zcdp_rho",
]

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
    coalition of observers, a whole run) by adding its totals: the total zCDP, the total
    ``mu^2`` while every release is Gaussian, the total pure epsilon while every release is
    pure.

    A release without a differential-privacy guarantee (:class:`NonPrivateEvent`) makes
    every epsilon infinite (``unbounded``), never 0; a public one costs nothing.
    """

    __slots__ = ("releases", "public", "nonprivate", "notes", "_rho", "_mu2", "_pure",
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
        self._rho = 0.0
        self._mu2: float | None = 0.0   # None once a release is not Gaussian
        self._pure: float | None = 0.0  # None once a release is not pure DP
        #: epsilon of a privacy loss distribution at ``pld_delta`` (end of run), or None
        self.pld: float | None = None
        self.pld_delta: float | None = None

    # -- composing ------------------------------------------------------------------------
    def add(self, event: PrivacyEvent, count: int = 1) -> None:
        """Compose ``count`` releases of ``event`` (validated when it was made; a wrapped
        event is counted as what :func:`resolve` makes of it)."""
        cls = event.__class__
        if cls in WRAPPERS:  # resolve() returns every other event itself: no call per release
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
        self._rho += count * zcdp_rho(event)
        if self._mu2 is not None:
            self._mu2 = self._mu2 + count * gdp_mu(event) ** 2 if cls is GaussianEvent else None  # type: ignore[operator]
        if self._pure is not None:
            self._pure = (self._pure + count * pure_epsilon(event)  # type: ignore[operator]
                          if cls is LaplaceEvent or cls is PureDPEvent else None)
        if self.pld is not None:
            self.pld = self.pld_delta = None  # no longer covers every release

    def merge(self, other: "HeadlineAccountant") -> None:
        """Add every release ``other`` composed."""
        self.releases += other.releases
        self.public += other.public
        self.nonprivate += other.nonprivate
        self.notes += [n for n in other.notes if n not in self.notes]
        self._rho += other._rho
        self._mu2 = None if self._mu2 is None or other._mu2 is None else self._mu2 + other._mu2
        self._pure = None if self._pure is None or other._pure is None else self._pure + other._pure
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
        return self._rho

    @property
    def mu2(self) -> float:
        """Squared Gaussian-DP parameter while every release is Gaussian (else 0)."""
        return self._mu2 if self._mu2 is not None else 0.0

    @property
    def pure_epsilon(self) -> float | None:
        """Total pure epsilon while every release is pure DP (else None)."""
        return self._pure

    @property
    def pure(self) -> PureDPAccountant | None:
        """The pure-DP composition as an accountant (the audit's report reads it), or None."""
        if self._pure is None:
            return None
        return PureDPAccountant().compose(PureDPEvent(self._pure))  # type: ignore[return-value]

    @property
    def gaussian_only(self) -> bool:
        return self._mu2 is not None

    @property
    def pure_only(self) -> bool:
        return self._pure is not None

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
        delta = conv._check_delta(delta)
        if self._mu2 is not None and exact is None:
            exact = conv.gaussian_exact_eps(math.sqrt(self._mu2), delta) if self._mu2 > 0 else 0.0
        result: dict[str, float | str | None] = {
            "tight": conv.zcdp_to_eps_tight(self._rho, delta),
            "standard": conv.zcdp_to_eps_standard(self._rho, delta),
            "exact": exact if self._mu2 is not None else None,
            "pure": self._pure,
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
        if (self._rho <= budget.rho or (self._mu2 is not None and self._mu2 <= budget.mu2)
                or (self._pure is not None and self._pure <= budget.epsilon)):
            return True
        return self.epsilon(budget.delta)["best"] <= budget.epsilon

    # -- storage --------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-ready state (privacy.json's per-link and per-group entries)."""
        return {"releases": self.releases, "public": self.public, "rho": self._rho,
                "mu2": self.mu2, "pure": self._pure if self._pure is not None else 0.0,
                "gaussian_only": self.gaussian_only, "pure_only": self.pure_only,
                "nonprivate": self.nonprivate, "notes": list(self.notes),
                "pld": self.pld, "pld_delta": self.pld_delta}

    @classmethod
    def from_dict(cls, data: dict) -> "HeadlineAccountant":
        out = cls()
        out.releases, out.public = data["releases"], data["public"]
        out.nonprivate, out.notes = data["nonprivate"], list(data["notes"])
        out._rho = data["rho"]
        out._mu2 = data["mu2"] if data["gaussian_only"] else None
        out._pure = data["pure"] if data["pure_only"] else None
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
        return (float(flags), self._rho, self.mu2,
                self._pure if self._pure is not None else 0.0)

    @classmethod
    def from_exposure(cls, exposure) -> "HeadlineAccountant":
        """An accountant whose :meth:`epsilon` equals that of the one that gave ``exposure``."""
        flags, rho, mu2, pure = (float(x) for x in exposure)
        unbounded, gaussian_only, pure_only = (int(flags) >> bit & 1 for bit in range(3))
        out = cls()
        out.nonprivate = int(unbounded)
        out._rho = rho
        out._mu2 = mu2 if gaussian_only else None
        out._pure = pure if pure_only else None
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HeadlineAccountant) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"HeadlineAccountant(releases={self.releases}, rho={self.rho:.6g}, "
                f"unbounded={self.unbounded})")


def epsilons(accountants: Sequence[HeadlineAccountant], delta: float) -> list[dict]:
    """:meth:`HeadlineAccountant.epsilon` of each accountant, the exact Gaussian conversions
    of all of them in one vectorised call (the end of a run converts every link)."""
    mu = np.sqrt([acc.mu2 if acc.gaussian_only and not acc.unbounded else 0.0
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
        return {"exact": math.inf if head.gaussian_only else None, "tight": math.inf,
                "standard": math.inf, "rdp": math.inf, "rho": math.inf, "delta": delta,
                **({"pure": math.inf} if head.pure_only else {})}
    eps = head.epsilon(delta)
    out: dict[str, float | None] = {
        "exact": eps["exact"],
        "tight": eps["tight"],
        "standard": eps["standard"],
        "rdp": rdp.get_epsilon(delta),
        "rho": head.rho,
        "delta": delta,
    }
    if head.pure_only:
        out["pure"] = eps["pure"]
    kinds = {event.__class__ for event, _ in items}
    if LaplaceEvent in kinds and kinds <= {GaussianEvent, LaplaceEvent, PublicEvent}:
        pld = PLDAccountant()
        for event, count in items:
            if event.__class__ is not PublicEvent:
                pld.compose(event, count)
        out["pld"] = pld.get_epsilon(delta)
    return out

"""The per-link privacy ledger of one agent: it stores events and asks an accountant.

The network hands every release that leaves the agent to the ledger together with the
neighbours it travels to, so the ledger sees exactly what the traffic meter sees. It keeps
the releases' events per set of observers (a broadcast is one booking seen by every
neighbour; a scatter, one booking per neighbour) and answers, for each owner's data:

* per observer (a neighbour, or an eavesdropper on the link): the composition of every
  release that observer saw;
* per agent: the worst single observer, and all observers together (every distinct
  release once);
* per coalition of observers: the distinct releases any member saw.

Composition is sequential over the releases an observer saw and parallel over disjoint
records: releases that name one record (``event.record``) compose with the releases that
depend on every record, and the loss is that of the worst record. Events of another owner
(a token that carries other agents' contributions) are kept apart and reported in that
owner's row. Wrapped events (a packed message, an amplified release) are resolved by
:func:`~mpi_privopt.privacy.costs.resolve` before they are stored.

The arithmetic is the accountant's (:class:`~mpi_privopt.privacy.accountants.HeadlineAccountant`
composes incrementally for the budget guard; :class:`~mpi_privopt.privacy.notions.PLDAccountant`
runs once at the end of a run when Laplace releases need it). The ledger knows nothing of MPI.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from .. import display
from ..errors import PrivacyBudgetExceeded
from .accountants import Budget, HeadlineAccountant, epsilons, most_exposed
from .costs import WRAPPERS, resolve
from .events import GaussianEvent, LaplaceEvent, NonPrivateEvent, PrivacyEvent, PublicEvent
from .notions import PLDAccountant
from .release import Release

#: receiver objects the ledger recognises by identity (a network has at most one per
#: neighbour plus its neighbour list)
_IDENTITY_CACHE_SIZE = 1024
#: events that cost nothing or make the loss unbounded: counted, not kept
_NOT_KEPT = (PublicEvent, NonPrivateEvent)
#: events that wrap others: stored as what they resolve to
_WRAPPERS = WRAPPERS


class EventBook:
    """The releases one set of observers received of one owner's data, in booking order.

    ``accountant`` is their running composition (what the budget guard reads); ``events``
    keeps every private event for the end-of-run accountants that need the sequence.
    """

    __slots__ = ("receivers", "owner", "record", "events", "accountant")

    def __init__(self, receivers: tuple[int, ...], owner: int, record: int | None) -> None:
        self.receivers = receivers
        self.owner = owner
        self.record = record
        self.events: list[PrivacyEvent] = []
        self.accountant = HeadlineAccountant()

    def add(self, event: PrivacyEvent) -> None:
        self.accountant.add(event)
        if event.__class__ not in _NOT_KEPT:
            self.events.append(event)


def compose_observed(books: Iterable[tuple[Sequence[int], int | None, HeadlineAccountant]],
                     observers: Iterable[int] | None, delta: float) -> HeadlineAccountant:
    """The loss to a coalition from ``(receivers, record, accountant)`` bookings.

    Sequential composition over every booking a member observed (``observers`` None: every
    booking, each once); parallel over records: bookings of one record compose with those
    of every record (``record`` None), and the worst record (largest headline epsilon at
    ``delta``) is the loss.
    """
    members = None if observers is None else set(observers)
    every = HeadlineAccountant()
    by_record: dict[int, HeadlineAccountant] = {}
    for receivers, record, accountant in books:
        if members is not None and not members.intersection(receivers):
            continue
        if record is None:
            every.merge(accountant)
        else:
            by_record.setdefault(record, HeadlineAccountant()).merge(accountant)
    if not by_record:
        return every
    candidates = []
    for accountant in by_record.values():
        candidate = every.copy()
        candidate.merge(accountant)
        candidates.append(candidate)
    # every record's exact Gaussian epsilon in one vectorised conversion
    eps = [e["best"] for e in epsilons(candidates, delta)]
    return candidates[max(range(len(eps)), key=lambda i: (eps[i], -i))]


def pld_epsilon(events: Iterable[PrivacyEvent], delta: float) -> float | None:
    """The privacy-loss-distribution epsilon of ``events``, where it adds something.

    Only for sequences with a Laplace release and nothing but Gaussian and Laplace
    releases (all-Gaussian sequences have the exact conversion already).
    """
    events = list(events)
    if not any(e.__class__ is LaplaceEvent for e in events):
        return None
    if not all(e.__class__ in (GaussianEvent, LaplaceEvent) for e in events):
        return None
    accountant = PLDAccountant()
    for event in events:
        accountant.compose(event)
    return accountant.get_epsilon(delta)


class Ledger:
    """Privacy bookkeeping of one agent's releases, per observer and in total.

    Parameters
    ----------
    agent : int
        The agent whose data the releases depend on (unless an event names its owner).
    neighbours : sequence of int
        Its out-neighbours (the possible observers).
    delta : float
        The delta at which epsilons are reported and the budget is checked.
    budget : float
        The agent's epsilon budget at ``delta``; ``inf`` for none.
    limits : Budget, optional
        ``Budget.of(budget, delta)`` (a calibration) when the caller computed it once for
        every agent; computed here otherwise.
    """

    #: releases booked as made before an interruption, without being seen (a resume of a
    #: secure-noise run: mpi_privopt/services/release_gap.py): ``{"first", "last"}`` per
    #: window; a class default, so that ledgers saved before it existed read as none
    assumed: tuple[dict, ...] = ()
    #: what the booked epsilons are when they are not a proven bound (the method's
    #: ``epsilon_label``, set by the engine): shown beside every epsilon of a budget
    #: message, kept in the snapshot (a stopped agent's record, a checkpoint); a class
    #: default, so that ledgers saved before it existed read as none
    epsilon_label: str | None = None

    def __init__(self, agent: int, neighbours: Sequence[int], delta: float,
                 budget: float = math.inf, limits: Budget | None = None) -> None:
        self.agent = agent
        self.neighbours = sorted(int(j) for j in neighbours)
        self.delta = delta
        self.budget = budget
        # ``limits``: Budget.of(budget, delta), computed once for every agent by the caller
        self._budget = limits if limits is not None else Budget.of(budget, delta)
        # The agent's own releases that may depend on every record, by the exact set of
        # neighbours that received them. Every release is in one book, so per-observer,
        # coalition and total losses are merges of books: booking a release is one
        # composition whatever the degree.
        self.groups: dict[tuple[int, ...], EventBook] = {}
        # Releases that name one record or another owner: (receivers, owner, record).
        self.other: dict[tuple[tuple[int, ...], int, int | None], EventBook] = {}
        self._keys: dict[int, tuple[EventBook, Sequence[int]]] = {}

    # -- the network's two hooks ------------------------------------------------------------

    def admit(self, outgoing: Sequence[tuple[Release, Sequence[int]]], phase: str) -> None:
        """Refuse (raise) releases that would take the agent past its budget.

        ``outgoing`` lists the (release, receivers) pairs one network call is about to send.
        The budget is judged by the headline (best valid) conversion, the number
        privacy.json and the summary report, so a run never reports more than its budget.
        """
        if math.isinf(self.budget):
            return
        events = [(resolve(e), receivers) for r, receivers in outgoing
                  for e in (r.events if r.more else (r.event,))]
        if not self.other and all(e.record is None and e.owner in (None, self.agent)
                                  for e, _ in events):
            after = self.total  # a fresh merge: adding to it changes nothing booked
            for event, _ in events:
                after.add(event)
        else:
            books = self._books(self.agent)
            books += [(receivers, e.record, _single(e)) for e, receivers in events
                      if e.owner in (None, self.agent)]
            after = compose_observed(books, None, self.delta)
        if not after.within(self._budget):
            eps = after.epsilon(self.delta)["best"]
            spent = self.total.epsilon(self.delta)["best"]
            raise PrivacyBudgetExceeded(
                f"agent {self.agent}: sending phase {phase!r} would raise its privacy "
                f"loss from epsilon {display.loss(spent)} to {display.loss(eps)} at delta "
                f"{display.exact(self.delta)}{self.labelled()}, over its budget privacy.epsilon = "
                f"{display.exact(self.budget)}; nothing was sent",
                "raise privacy.epsilon, add noise, or run fewer iterations "
                "(what was measured so far is in the run directory)")

    def labelled(self) -> str:
        """`` (LABEL)`` after an epsilon of this ledger when it is not a proven bound, else
        nothing."""
        return f" ({self.epsilon_label})" if self.epsilon_label else ""

    def on_release(self, release: Release, receivers: Sequence[int], phase: str,
                   round: int) -> None:
        """Book a release that went to ``receivers``."""
        self._book(self._group_for(receivers), release)

    def booker(self, receivers: Sequence[int]) -> Callable[[Release], None]:
        """The function that books a release sent to ``receivers``.

        For a sender that always reaches the same receivers (a broadcast): it skips the
        receiver lookup of :meth:`on_release`.
        """
        group = self._group_for(receivers)
        agent, book = self.agent, self._book

        def book_release(release: Release) -> None:
            # The common release written out (one event of this agent's data, no record,
            # nothing to resolve: every broadcast of every method) goes straight to the
            # group; what _book_event does with it, without its two calls and checks.
            event = release.event
            cls = event.__class__
            if (not release.more and event.record is None and cls not in _WRAPPERS
                    and (event.owner is None or event.owner == agent)):
                if cls in _NOT_KEPT:  # counted, not kept: EventBook.add's one step
                    group.accountant.add(event)
                else:
                    group.add(event)
            else:
                book(group, release)
        return book_release

    def _book(self, group: EventBook, release: Release) -> None:
        self._book_event(group, release.event)
        for event in release.more:  # a release of several records (a token)
            self._book_event(group, event)

    def _book_event(self, group: EventBook, event: PrivacyEvent) -> None:
        if event.__class__ in _WRAPPERS:
            event = resolve(event)
        owner = event.owner
        if event.record is None and (owner is None or owner == self.agent):
            group.add(event)
            return
        owner = self.agent if owner is None else owner
        key = (group.receivers, owner, event.record)
        book = self.other.get(key)
        if book is None:
            book = self.other[key] = EventBook(group.receivers, owner, event.record)
        book.add(event)

    def _group_for(self, receivers: Sequence[int]) -> EventBook:
        # The network passes the same receiver object for the same links every time
        # (its neighbour list, one tuple per neighbour): recognise it by identity
        # instead of rebuilding the key on every release.
        cached = self._keys.get(id(receivers))
        if cached is not None and cached[1] is receivers:
            return cached[0]
        key = tuple(sorted(int(j) for j in receivers))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = EventBook(key, self.agent, None)
        if len(self._keys) >= _IDENTITY_CACHE_SIZE:
            # Callers that build a fresh receiver object per release get no benefit
            # from the cache; keep it from growing with them.
            self._keys.clear()
        # The cache holds the object, so its id cannot be reused while cached.
        self._keys[id(receivers)] = (group, receivers)
        return group

    def book_assumed(self, events: Iterable[PrivacyEvent], first: int, last: int) -> None:
        """Book ``events``, the planned releases of iterations ``first`` .. ``last`` that
        may have been made before an interruption, as sent to every neighbour (one
        observer's view of each, ``Algorithm.planned_events``), and record the window.
        The methods with a plan send every release to all their out-neighbours (their
        ledger has that one group: tests/mpi/test_planned_events.py)."""
        group = self._group_for(tuple(self.neighbours))
        for event in events:
            self._book_event(group, event)
        self.assumed = (*self.assumed, {"first": int(first), "last": int(last)})

    @property
    def assumed_iterations(self) -> int:
        """How many iterations' releases are booked as made before an interruption
        (counted once per window: a window booked twice counts twice)."""
        return sum(w["last"] - w["first"] + 1 for w in self.assumed)

    # -- questions ------------------------------------------------------------------------

    def _books(self, owner: int) -> list[tuple[tuple[int, ...], int | None, HeadlineAccountant]]:
        """Every booking of ``owner``'s data as (receivers, record, accountant)."""
        books = ([(g.receivers, None, g.accountant) for g in self.groups.values()]
                 if owner == self.agent else [])
        books += [(b.receivers, b.record, b.accountant) for b in self.other.values()
                  if b.owner == owner]
        return books

    def coalition(self, observers: Iterable[int] | None) -> HeadlineAccountant:
        """The loss to a coalition: every distinct release any member observed (None:
        every release, each once)."""
        return compose_observed(self._books(self.agent), observers, self.delta)

    @property
    def total(self) -> HeadlineAccountant:
        """The loss to all observers together: every distinct release, each once."""
        return self.coalition(None)

    @property
    def links(self) -> dict[int, HeadlineAccountant]:
        """The loss to each neighbour (what it, or an eavesdropper on the link, observed)."""
        return {j: self.coalition((j,)) for j in self.neighbours}

    def worst_link_exposure(self) -> tuple[float, ...] | None:
        """The :meth:`~HeadlineAccountant.exposure` of the link of largest epsilon (None
        without links), found without a conversion when one link's releases dominate
        (:func:`~mpi_privopt.privacy.accountants.most_exposed`); whoever needs the number
        converts it (a run's evaluation: rank 0, once for all agents)."""
        exposures = [loss.exposure() for loss in self.links.values()]
        worst = most_exposed(exposures, self.delta)
        return None if worst is None else exposures[worst]

    def worst_observer(self) -> tuple[int | None, float]:
        """The neighbour that learned the most, and its epsilon."""
        links = self.links
        worst, worst_eps = None, -1.0
        for j, eps in zip(links, epsilons(list(links.values()), self.delta)):
            if eps["best"] > worst_eps:
                worst, worst_eps = j, eps["best"]
        return worst, max(worst_eps, 0.0)

    def _with_pld(self, observers: Iterable[int] | None, accountant: HeadlineAccountant,
                  cache: dict) -> HeadlineAccountant:
        """``accountant`` with its privacy-loss-distribution epsilon, where one applies."""
        members = None if observers is None else set(observers)
        seen = tuple(key for key in self.groups if members is None or members.intersection(key))
        if seen not in cache:
            cache[seen] = pld_epsilon((e for key in seen for e in self.groups[key].events),
                                      self.delta)
        if cache[seen] is not None and not self.other:
            accountant.set_pld(cache[seen], self.delta)
        return accountant

    def to_dict(self) -> dict:
        """A JSON-ready snapshot (gathered to rank 0 for privacy.json), end-of-run figures
        included: a privacy loss distribution for observers that saw Laplace releases."""
        cache: dict = {}
        links = {j: self._with_pld((j,), loss, cache).to_dict() for j, loss in self.links.items()}
        total = self._with_pld(None, self.total, cache).to_dict()
        groups = [{"receivers": list(g.receivers), "owner": g.owner, "record": g.record,
                   **g.accountant.to_dict()}
                  for g in (*self.groups.values(), *self.other.values())]
        return {"agent": self.agent, "delta": self.delta, "budget": self.budget,
                "links": links, "total": total, "groups": groups,
                **({"assumed": [dict(w) for w in self.assumed],
                    "assumed_iterations": self.assumed_iterations} if self.assumed else {}),
                **({"epsilon_label": self.epsilon_label} if self.epsilon_label else {})}


def _single(event: PrivacyEvent) -> HeadlineAccountant:
    accountant = HeadlineAccountant()
    accountant.add(event)
    return accountant

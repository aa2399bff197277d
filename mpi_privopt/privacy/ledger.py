"""The per-link privacy ledger of one agent.

The network hands every release that leaves the agent to the ledger together with the
neighbours it travels to, so the ledger sees exactly what the traffic meter sees. From
that it answers, for the agent's data:

* per link (agent -> neighbour j): the composition of every release j observed; this is
  also what an eavesdropper on that link learns;
* per agent: the worst single observer, and all observers together (every distinct
  release: a broadcast counts once however many neighbours received it);
* per coalition of observers: the distinct releases any member observed.

Costs compose by addition in zCDP (rho; Laplace adds eps^2/2), in Gaussian DP (mu^2, for
the exact conversion while every release is Gaussian) and in pure DP (while every release
is pure). A non-private release makes the loss unbounded (inf), never 0; a public release
adds nothing. The ledger knows nothing of MPI.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field

from ..errors import PrivacyBudgetExceeded
from .accountants import (GaussianEvent, LaplaceEvent, NonPrivateEvent, PublicEvent,
                          PureDPEvent, ZCDPEvent)
from .calibration import calibrate_gdp_mu, calibrate_zcdp_total
from .conversions import gaussian_exact_eps, zcdp_to_eps_standard, zcdp_to_eps_tight
from .release import NONPRIVATE, PUBLIC, Release

#: receiver objects the ledger recognises by identity (a network has at most one per
#: neighbour plus its neighbour list)
_IDENTITY_CACHE_SIZE = 1024


@dataclass
class Loss:
    """Composed cost of a set of releases.

    Attributes
    ----------
    releases : int
        Data-dependent releases composed (private and non-private).
    public : int
        Data-independent releases (free).
    rho : float
        zCDP parameter (sum over releases).
    mu2 : float
        Sum of (D/sigma)^2 over Gaussian releases; exact composition while ``gaussian_only``.
    pure : float
        Sum of pure epsilons while ``pure_only``.
    nonprivate : int
        Releases without any DP guarantee; any makes the loss unbounded.
    """

    releases: int = 0
    public: int = 0
    rho: float = 0.0
    mu2: float = 0.0
    pure: float = 0.0
    gaussian_only: bool = True
    pure_only: bool = True
    nonprivate: int = 0
    notes: list[str] = field(default_factory=list)

    def add(self, release: Release) -> None:
        kind = release.kind
        if kind == PUBLIC:
            self.public += 1
            return
        self.releases += 1
        if kind == NONPRIVATE:
            self.nonprivate += 1
            if release.note and release.note not in self.notes:
                self.notes.append(release.note)
            return
        self.add_event(release.event)

    def add_event(self, event) -> None:
        # Once per private release: each event property is read once (they are computed).
        if isinstance(event, GaussianEvent):
            mu2 = event.mu ** 2
            self.rho += 0.5 * mu2  # GaussianEvent.rho
            self.mu2 += mu2
            self.pure_only = False
        elif isinstance(event, (LaplaceEvent, PureDPEvent)):
            epsilon = event.epsilon
            self.rho += epsilon ** 2 / 2
            self.pure += epsilon
            self.gaussian_only = False
        elif isinstance(event, ZCDPEvent):
            self.rho += event.rho
            self.gaussian_only = self.pure_only = False
        elif isinstance(event, NonPrivateEvent):
            self.nonprivate += 1
        elif isinstance(event, PublicEvent):
            pass
        else:
            raise TypeError(f"the ledger cannot book a {type(event).__name__}")

    def merge(self, other: "Loss") -> None:
        self.releases += other.releases
        self.public += other.public
        self.rho += other.rho
        self.mu2 += other.mu2
        self.pure += other.pure
        self.gaussian_only &= other.gaussian_only
        self.pure_only &= other.pure_only
        self.nonprivate += other.nonprivate
        self.notes += [n for n in other.notes if n not in self.notes]

    @property
    def unbounded(self) -> bool:
        return self.nonprivate > 0

    def epsilon(self, delta: float) -> dict[str, float | str | None]:
        """epsilon at ``delta`` by each conversion that applies (inf when unbounded).

        ``tight`` (CKS) and ``standard`` (Bun-Steinke) convert the total zCDP; ``exact``
        (Gaussian DP) applies while every release was Gaussian, ``pure`` while every release
        was pure. ``best`` is the smallest valid one, the headline, and ``conversion`` its
        name. Every mechanism here fixes its sensitivity and noise scale independently of
        the data, which is what the exact composition needs.
        """
        if self.unbounded:
            return {"tight": math.inf, "standard": math.inf, "exact": math.inf,
                    "pure": math.inf, "best": math.inf, "conversion": "unbounded"}
        result: dict[str, float | str | None] = {
            "tight": zcdp_to_eps_tight(self.rho, delta),
            "standard": zcdp_to_eps_standard(self.rho, delta),
            "exact": (gaussian_exact_eps(math.sqrt(self.mu2), delta) if self.mu2 > 0 else 0.0)
            if self.gaussian_only else None,
            "pure": self.pure if self.pure_only else None,
        }
        # Prefer the conversions in this order when they tie (e.g. all zero).
        name = min((k for k in ("exact", "pure", "tight") if result[k] is not None),
                   key=lambda k: result[k])
        result["best"] = result[name]
        result["conversion"] = name
        return result

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Loss":
        return cls(**data)


def observed_by(groups: Iterable[tuple[Sequence[int], Loss]], observers: Iterable[int]) -> Loss:
    """Merge the groups (receivers, loss) whose receivers include any of ``observers``."""
    members = set(observers)
    loss = Loss()
    for receivers, group in groups:
        if members.intersection(receivers):
            loss.merge(group)
    return loss


class Ledger:
    """Privacy bookkeeping of one agent's releases, per link and in total.

    Parameters
    ----------
    agent : int
        The agent whose data the releases depend on.
    neighbours : sequence of int
        Its out-neighbours (the possible observers).
    delta : float
        The delta at which epsilons are reported and the budget is checked.
    budget : float
        The agent's epsilon budget at ``delta``; ``inf`` for none.
    """

    def __init__(self, agent: int, neighbours: Sequence[int], delta: float,
                 budget: float = math.inf) -> None:
        self.agent = agent
        self.neighbours = sorted(int(j) for j in neighbours)
        self.delta = delta
        self.budget = budget
        # Releases grouped by the exact set of neighbours that received them. Every
        # release is in exactly one group, so the total, per-link and coalition losses
        # are merges of groups: booking a release is one addition whatever the degree,
        # and no release needs to be kept.
        self.groups: dict[tuple[int, ...], Loss] = {}
        self._keys: dict[int, tuple[Loss, Sequence[int]]] = {}
        # Comparing rho against the budget's rho is exact for the tight conversion, which
        # is monotone in rho, and costs nothing per release.
        self._rho_budget = (math.inf if math.isinf(budget)
                            else calibrate_zcdp_total(budget, delta, "tight"))
        # Likewise for the exact Gaussian composition: mu^2 is monotone in epsilon.
        self._mu2_budget = (math.inf if math.isinf(budget)
                            else calibrate_gdp_mu(budget, delta) ** 2)

    @property
    def total(self) -> Loss:
        """The loss to all observers together: every distinct release, each once."""
        total = Loss()
        for group in self.groups.values():
            total.merge(group)
        return total

    @property
    def links(self) -> dict[int, Loss]:
        """The loss to each neighbour (what it, or an eavesdropper on the link, observed)."""
        return {j: self.coalition((j,)) for j in self.neighbours}

    # -- the network's two hooks ------------------------------------------------------------

    def admit(self, outgoing: Sequence[tuple[Release, Sequence[int]]], phase: str) -> None:
        """Refuse (raise) releases that would take the agent past its budget.

        ``outgoing`` lists the (release, receivers) pairs one network call is about to send.
        """
        if math.isinf(self.budget):
            return
        after = self.total  # a fresh merge: adding to it changes nothing booked
        for release, _ in outgoing:
            after.add(release)
        # The budget is judged by the headline (best valid) conversion, the number
        # privacy.json and the summary report, so a run never reports more than its
        # budget. The cheap sufficient checks come first; the conversions run only near it.
        within = (not after.unbounded and (
            after.rho <= self._rho_budget
            or (after.gaussian_only and after.mu2 <= self._mu2_budget)
            or (after.pure_only and after.pure <= self.budget)))
        if not within:
            eps = after.epsilon(self.delta)["best"]
            if eps > self.budget:
                spent = self.total.epsilon(self.delta)["best"]
                raise PrivacyBudgetExceeded(
                    f"agent {self.agent}: sending phase {phase!r} would raise its privacy "
                    f"loss from epsilon {spent:.4g} to {eps:.4g} at delta {self.delta:g}, over "
                    f"its budget privacy.epsilon = {self.budget:g}; nothing was sent",
                    "raise privacy.epsilon, add noise, or run fewer iterations "
                    "(what was measured so far is in the run directory)")

    def on_release(self, release: Release, receivers: Sequence[int], phase: str,
                   round: int) -> None:
        """Book a release that went to ``receivers``."""
        self._group_for(receivers).add(release)

    def booker(self, receivers: Sequence[int]) -> Callable[[Release], None]:
        """The function that books a release sent to ``receivers``.

        For a sender that always reaches the same receivers (a broadcast): it skips the
        receiver lookup of :meth:`on_release`.
        """
        return self._group_for(receivers).add

    def _group_for(self, receivers: Sequence[int]) -> Loss:
        # The network passes the same receiver object for the same links every time
        # (its neighbour list, one tuple per neighbour): recognise it by identity
        # instead of rebuilding the key on every release.
        cached = self._keys.get(id(receivers))
        if cached is not None and cached[1] is receivers:
            return cached[0]
        key = tuple(sorted(int(j) for j in receivers))
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Loss()
        if len(self._keys) >= _IDENTITY_CACHE_SIZE:
            # Callers that build a fresh receiver object per release get no benefit
            # from the cache; keep it from growing with them.
            self._keys.clear()
        # The cache holds the object, so its id cannot be reused while cached.
        self._keys[id(receivers)] = (group, receivers)
        return group

    # -- questions ------------------------------------------------------------------------

    def coalition(self, observers: Iterable[int]) -> Loss:
        """The loss to a coalition: every distinct release any member observed."""
        return observed_by(self.groups.items(), observers)

    def worst_observer(self) -> tuple[int | None, float]:
        """The neighbour that learned the most, and its epsilon."""
        worst, worst_eps = None, -1.0
        for j, loss in self.links.items():
            eps = loss.epsilon(self.delta)["best"]
            if eps > worst_eps:
                worst, worst_eps = j, eps
        return worst, max(worst_eps, 0.0)

    def to_dict(self) -> dict:
        """A picklable snapshot (gathered to rank 0 for privacy.json)."""
        return {"agent": self.agent, "delta": self.delta, "budget": self.budget,
                "links": {j: loss.to_dict() for j, loss in self.links.items()},
                "total": self.total.to_dict(),
                "groups": [{"receivers": list(k), **g.to_dict()} for k, g in self.groups.items()]}

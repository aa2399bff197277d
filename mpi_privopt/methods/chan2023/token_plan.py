"""The public plan of one token chain: who holds it, which record each iteration uses, and
what every observer sees.

Everything here is a function of public facts (the graph, the seed, the chain number, the
agents' record counts and the configuration), so every rank computes the same plan and
nobody is told where the token goes. No MPI, no private data.

Schedules (``algorithm.schedule``):

``ring``
    round a Hamiltonian cycle (:func:`mpi_privopt.network.walks.ring`); iteration i at step i.
``walk``
    a uniform random neighbour at each step (:func:`mpi_privopt.network.walks.walk`).
``sample``
    the paper's experiment: iteration i uses global record ``r_i`` drawn uniformly with
    replacement from the chain's public stream (:func:`mpi_privopt.network.walks.schedule_stream`);
    the token follows :func:`mpi_privopt.network.walks.relay` to each owner (shortest paths, ties to
    the lower rank); the steps in between are relays.

In ``ring`` and ``walk`` the holder uses its next unused record in index order (cycling
through them again only with ``reuse``).

Observations: agent q sees the token whenever it holds it, and the final token. At each
sighting it sees, for the first time, every iteration done since its previous sighting;
an iteration i seen at step s is seen after ``k = #(iterations done at steps in (step_i,
s])`` further noisy iterations. Later sightings of the same iteration are post-processing.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ...network import walks
from ...errors import ConfigError

__all__ = ["TOKEN_SCHEDULES", "TokenPlan", "plan_chain"]

#: ``algorithm.schedule`` of the token method
TOKEN_SCHEDULES = ("ring", "walk", "sample")


@dataclass(frozen=True)
class TokenPlan:
    """One chain's public plan.

    Attributes
    ----------
    holders : ndarray of int64, shape (S,)
        ``holders[s]`` holds the token during step s.
    steps : ndarray of int64, shape (T,)
        ``steps[i]``: the step at which iteration i is done (increasing; the last is S - 1).
    owners : ndarray of int64, shape (T,)
        The agent whose record iteration i uses (= ``holders[steps[i]]``).
    records : ndarray of int64, shape (T,)
        The global index of that record.
    offsets : ndarray of int64, shape (K + 1,)
        Agent k's records are ``offsets[k] .. offsets[k+1] - 1``.
    """

    holders: np.ndarray
    steps: np.ndarray
    owners: np.ndarray
    records: np.ndarray
    offsets: np.ndarray

    @property
    def n_steps(self) -> int:
        return int(self.holders.size)

    def local_index(self, i: int) -> int:
        """Iteration i's record as an index into its owner's rows."""
        return int(self.records[i] - self.offsets[self.owners[i]])

    def window(self, i: int) -> range:
        """The steps that end with iteration i: the relays before it, then its own."""
        first = 0 if i == 0 else int(self.steps[i - 1]) + 1
        return range(first, int(self.steps[i]) + 1)

    def previous_sighting(self, agent: int, before: int) -> int:
        """The last step < ``before`` at which ``agent`` held the token (-1: none)."""
        if before < self.n_steps and self.holders[before] == agent:
            return int(self._previous[before])  # the hop's receiver: precomputed
        held = np.flatnonzero(self.holders[:before] == agent)
        return int(held[-1]) if held.size else -1

    @property
    def _previous(self) -> np.ndarray:
        # previous[s]: the last step < s held by holders[s] (-1: none); one pass, cached
        cached = self.__dict__.get("_previous_cache")
        if cached is None:
            cached = np.full(self.n_steps, -1, dtype=np.int64)
            last: dict[int, int] = {}
            for s, h in enumerate(self.holders.tolist()):
                cached[s] = last.get(h, -1)
                last[h] = s
            object.__setattr__(self, "_previous_cache", cached)
        return cached

    def seen(self, observer: int, at: int, released: int = -1) -> list[tuple[int, int]]:
        """``(iteration, k)`` first seen by ``observer`` when it sees the state after step ``at``.

        The iterations done at steps in (previous sighting, ``at``] whose record is not the
        observer's own; ``k`` counts the iterations after each one up to ``at``.
        ``released``: a step after which the state was released to every agent (the end
        of an earlier part of an extended run), a sighting of every observer.
        """
        previous = self.previous_sighting(observer, at + 1)
        if released <= at:
            previous = max(previous, released)
        lo = int(np.searchsorted(self.steps, previous, side="right"))
        hi = int(np.searchsorted(self.steps, at, side="right"))
        return [(i, hi - 1 - i) for i in range(lo, hi) if self.owners[i] != observer]


def plan_chain(schedule: str, graph: nx.Graph, iterations: int, counts, seed: int,
               chain: int = 0, *, start: int = 0, reuse: bool = False,
               name: str | None = None) -> TokenPlan:
    """The public plan of chain ``chain`` (see the module docstring).

    Raises
    ------
    ConfigError
        No Hamiltonian cycle (``ring``), a disconnected graph (``walk``, ``sample``), or,
        without ``reuse``, an agent given more iterations than it has records.
    """
    counts = np.asarray(counts, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    if schedule == "sample":
        records = walks.schedule_stream(seed, chain).integers(int(offsets[-1]), size=iterations)
        owners = np.searchsorted(offsets, records, side="right") - 1
        holders, steps = walks.relay(graph, owners, name=name)
        return TokenPlan(holders, steps, owners.astype(np.int64), records.astype(np.int64),
                         offsets)
    if schedule == "ring":
        holders = walks.ring(graph, iterations, start=start, name=name)
    elif schedule == "walk":
        holders = walks.walk(graph, iterations, seed, chain=chain, start=start, name=name)
    else:
        raise ConfigError(f"algorithm.schedule = {schedule!r} is unknown for the token method",
                          f"valid: {', '.join(TOKEN_SCHEDULES)}")
    uses = np.zeros(counts.size, dtype=np.int64)
    local = np.empty(iterations, dtype=np.int64)
    for i, h in enumerate(holders):
        local[i] = uses[h]
        uses[h] += 1
    short = np.flatnonzero(uses > counts)
    if short.size and not reuse:
        needs = ", ".join(f"agent {k} needs {int(uses[k])} and holds {int(counts[k])}"
                          for k in short[:5].tolist())
        raise ConfigError(
            f"the {schedule} schedule of {iterations} iterations (chain {chain}) uses more "
            f"records than some agents hold, and without reuse every iteration needs a record "
            f"not used before: {needs}{' ...' if short.size > 5 else ''}",
            "give those agents at least that many records, run fewer iterations, or set "
            "algorithm.reuse = true (records used again; their uses compose)")
    local %= counts[holders]
    steps = np.arange(iterations, dtype=np.int64)
    return TokenPlan(holders, steps, holders.copy(), offsets[holders] + local, offsets)

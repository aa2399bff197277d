"""Traffic meter: messages, payload bytes and seconds in MPI calls, per link and phase;
and the time each link cost its receiver.

Each agent meters what it sends, on its out-links. Rank 0 later stacks the rows into
K x K matrices (row = sender, column = receiver), so the matrices hold exactly the bytes
that left each agent on each link.

``seconds`` is the *sender's* time inside MPI calls. A neighbour collective serves all of
an agent's out-links at once, so its time is split evenly over those links; the row sums
are then the agent's total time in communication. It cannot tell a slow link from a fast
one: every out-link of a collective gets the same share.

The time a link costs is measured on the *receiver's* side (:mod:`.link_time`): on every
sampled exchange, ``wait_seconds`` adds how long the receiver waited for that
in-neighbour, ``transit_seconds`` the link's one-way time (where both ends read one clock);
a token hop adds its transit. ``wait_samples`` and ``transit_samples`` count them, so a
mean per sample is ``seconds / samples``. The receiver books them by in-link; the
matrices put them in the same place as the bytes (row = sender, column = receiver).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


#: by default every SAMPLE_EVERY-th exchange of each phase is timed per link (the first is
#: one; :mod:`.link_time`); a run sets ``run.link_time_every``, whose default this is
SAMPLE_EVERY = 50
#: the sampling in force, read on every exchange (set it with :func:`set_sample_every`)
every_n = SAMPLE_EVERY


def set_sample_every(every: int) -> None:
    """Time every ``every``-th exchange of each phase from now on (0: none).

    Every rank must use the same value: a timed exchange waits for its in-neighbours'
    markers (:mod:`.link_time`).
    """
    global every_n
    if int(every) < 0:
        raise ValueError(f"link-time sampling must be 0 (off) or a positive count, got {every}")
    every_n = int(every)


def sample_every() -> int:
    """Every how many exchanges of a phase one is timed per link (0: none)."""
    return every_n


class PhaseCounters:
    """Counters of one phase: per out-link arrays, plus what every link received alike.

    A neighbour collective books the same message on every out-link; keeping that as
    three scalars makes the per-call cost a few additions whatever the degree. Such a
    call's seconds serve all out-links at once: ``all_seconds`` holds the calls' total,
    split evenly over the links when read.
    """

    __slots__ = ("n_links", "messages", "bytes", "seconds",
                 "all_messages", "all_bytes", "all_seconds")

    def __init__(self, n_links: int) -> None:
        self.n_links = n_links
        self.messages = np.zeros(n_links, dtype=np.int64)
        self.bytes = np.zeros(n_links, dtype=np.int64)
        self.seconds = np.zeros(n_links, dtype=np.float64)
        self.all_messages = 0
        self.all_bytes = 0
        self.all_seconds = 0.0

    def per_link(self, name: str) -> np.ndarray:
        """Totals per out-link of ``messages``, ``bytes`` or ``seconds``."""
        shared = getattr(self, "all_" + name)
        if name == "seconds":
            shared = shared / self.n_links if self.n_links else 0.0
        return getattr(self, name) + shared


#: the link-time quantities of the matrices, in the order of :attr:`TrafficMeter.link_time`'s
#: lists (sums of seconds and their sample counts, :mod:`.link_time`)
LINK_TIME = ("wait_seconds", "wait_samples", "transit_seconds", "transit_samples")
#: what each link-time matrix holds (traffic.json's ``units``)
LINK_TIME_UNITS = {
    "wait_seconds": "receiver's seconds waiting for this in-neighbour, summed over the "
                    "timed exchanges (every link_time_every-th of a phase)",
    "wait_samples": "timed exchanges",
    "transit_seconds": "one-way seconds from the sender's stamp to the receiver seeing the "
                       "marker (timed exchanges whose marker was in flight) or the token "
                       "(a hop), summed; only between agents that read one clock",
    "transit_samples": "transits summed",
}


class TrafficMeter:
    """Per-link, per-phase counters of one agent's outgoing traffic, and the time each of
    its in-links cost it.

    Parameters
    ----------
    out_neighbors : sequence of int
        The agent's out-neighbours, in the order the network uses.
    in_neighbors : sequence of int, optional
        Its in-neighbours (the links whose time it measures).
    """

    def __init__(self, out_neighbors: Sequence[int], in_neighbors: Sequence[int] = ()) -> None:
        self.out_neighbors = list(out_neighbors)
        self.in_neighbors = list(in_neighbors)
        #: the counters of each phase seen so far (:meth:`counters` creates them)
        self.by_phase: dict[str, PhaseCounters] = {}
        # Time blocked in point-to-point receives; not attributable to an out-link.
        self.receive_seconds: dict[str, float] = {}
        #: per phase, 4 lists of n_in numbers: :data:`LINK_TIME` (sums and sample counts)
        self.link_time: dict[str, list[list[float]]] = {}

    def __setstate__(self, state: dict) -> None:
        # a meter saved before link times were measured (a checkpoint of an older run)
        state.setdefault("in_neighbors", [])
        state.setdefault("link_time", {})
        self.__dict__.update(state)

    def _link_time(self, phase: str) -> list[list[float]]:
        table = self.link_time.get(phase)
        if table is None:
            n_in = len(self.in_neighbors)
            table = self.link_time[phase] = [[0.0] * n_in for _ in LINK_TIME]
        return table

    def record_link_time(self, phase: str, waits: Sequence[float],
                         transits: Sequence[float | None]) -> None:
        """Book one timed exchange: per in-link, the receiver's wait and the link's transit
        (None: not measured on that link)."""
        # plain floats: a timed exchange books a handful of numbers, where numpy's
        # per-call overhead would be most of its cost
        wait, waits_n, transit, transits_n = self._link_time(phase)
        for i, (w, t) in enumerate(zip(waits, transits)):
            wait[i] += w
            waits_n[i] += 1
            if t is not None:
                transit[i] += t
                transits_n[i] += 1

    def record_hop(self, phase: str, link: int, transit: float) -> None:
        """Book one token hop that came in on in-link number ``link``, and its transit."""
        table = self._link_time(phase)
        table[2][link] += transit
        table[3][link] += 1

    def counters(self, phase: str) -> PhaseCounters:
        """The counters of ``phase`` (created on first use)."""
        counters = self.by_phase.get(phase)
        if counters is None:
            counters = self.by_phase[phase] = PhaseCounters(len(self.out_neighbors))
        return counters

    def record_all(self, phase: str, nbytes_per_link: int, seconds: float) -> None:
        """Book one message of ``nbytes_per_link`` on every out-link."""
        # Called on every exchange: the increments are written out, not delegated.
        counters = self.by_phase.get(phase) or self.counters(phase)
        counters.all_messages += 1
        counters.all_bytes += nbytes_per_link
        counters.all_seconds += seconds

    def record_link(self, phase: str, link: int, nbytes: int, seconds: float) -> None:
        """Book one message of ``nbytes`` on out-link number ``link``."""
        counters = self.counters(phase)
        counters.messages[link] += 1
        counters.bytes[link] += nbytes
        counters.seconds[link] += seconds

    def record_time(self, phase: str, seconds: float, links: Sequence[int] | None = None) -> None:
        """Add time spent waiting in MPI (for example completing a nonblocking call)."""
        counters = self.counters(phase)
        if links is None:
            counters.all_seconds += seconds
        else:
            counters.seconds[list(links)] += seconds / max(len(links), 1)

    def record_receive(self, phase: str, seconds: float) -> None:
        """Add time spent in a point-to-point receive."""
        self.receive_seconds[phase] = self.receive_seconds.get(phase, 0.0) + seconds

    @property
    def phases(self) -> list[str]:
        return sorted(self.by_phase)

    def total_seconds(self) -> float:
        """Seconds this agent spent inside metered MPI calls, receives included."""
        return float(sum(c.per_link("seconds").sum() for c in self.by_phase.values())
                     + sum(self.receive_seconds.values()))

    def rows(self, n_agents: int) -> dict[str, dict[str, np.ndarray]]:
        """This agent's rows of the K x K matrices, by phase and quantity.

        The :data:`LINK_TIME` entries are indexed by *sender* (this agent is the
        receiver): they are its column of those matrices.
        """
        out: dict[str, dict[str, np.ndarray]] = {}
        for phase, counters in self.by_phase.items():
            rows = {}
            for name in ("messages", "bytes", "seconds"):
                row = np.zeros(n_agents, dtype=getattr(counters, name).dtype)
                row[self.out_neighbors] = counters.per_link(name)
                rows[name] = row
            out[phase] = rows
        for phase, table in self.link_time.items():
            rows = out.setdefault(phase, {})
            for k, name in enumerate(LINK_TIME):
                column = np.zeros(n_agents)
                column[self.in_neighbors] = table[k]
                rows[name] = column
        return out


def cross_host_links(hosts: Sequence[str]) -> np.ndarray:
    """K x K booleans: True where agent ``i`` (sender) and ``j`` (receiver) ran on different
    hosts, ``hosts[k]`` being agent k's host (``MPI_Get_processor_name``)."""
    names = np.asarray(list(hosts), dtype=object)
    return names[:, None] != names[None, :]


def assemble_matrices(all_rows: Sequence[dict[str, dict[str, np.ndarray]]], n_agents: int,
                      hosts: Sequence[str] | None = None) -> dict:
    """Stack the agents' rows into K x K matrices, by phase and in total.

    Parameters
    ----------
    all_rows : sequence of dict
        ``all_rows[k]`` is ``TrafficMeter.rows()`` of agent k.
    n_agents : int
        K.
    hosts : sequence of str, optional
        Each agent's host: the result then also has ``"hosts"`` and ``"cross_host"``
        (:func:`cross_host_links`), which marks the links whose bytes left a machine.

    Returns
    -------
    dict
        ``{"phases": {phase: {"messages": M, "bytes": B, "seconds": S, ...}}, "total":
        {...}}`` with numpy K x K matrices, row = sender, column = receiver; ``...``: the
        :data:`LINK_TIME` matrices (all zero where nothing was timed).
    """
    phases = sorted({phase for rows in all_rows for phase in rows})
    result: dict = {"phases": {}, "total": {}}
    quantities = [("messages", np.int64, False), ("bytes", np.int64, False),
                  ("seconds", np.float64, False)]
    quantities += [(name, np.float64, True) for name in LINK_TIME]
    for name, dtype, by_receiver in quantities:
        total = np.zeros((n_agents, n_agents), dtype=dtype)
        for phase in phases:
            matrix = np.zeros((n_agents, n_agents), dtype=dtype)
            for agent, rows in enumerate(all_rows):
                if name not in rows.get(phase, ()):
                    continue
                if by_receiver:  # the receiver's column: its in-links' times
                    matrix[:, agent] = rows[phase][name]
                else:
                    matrix[agent] = rows[phase][name]
            result["phases"].setdefault(phase, {})[name] = matrix
            total += matrix
        if by_receiver and name.endswith("_samples"):
            total = total.astype(np.int64)
            for phase in phases:
                result["phases"][phase][name] = result["phases"][phase][name].astype(np.int64)
        result["total"][name] = total
    if hosts is not None:
        result["hosts"] = list(hosts)
        result["cross_host"] = cross_host_links(hosts)
    return result


def slowest_links(matrices: dict, count: int = 3) -> list[dict]:
    """The ``count`` links with the longest mean receiver wait per timed exchange, then
    (links never timed in an exchange, e.g. a token's) the longest mean transit.

    Parameters
    ----------
    matrices : dict
        :func:`assemble_matrices`' result (or traffic.json's ``total`` as lists, under
        ``"total"``).

    Returns
    -------
    list of dict
        ``{"link": [sender, receiver], "wait_mean_seconds": float | None,
        "transit_mean_seconds": float | None, "samples": int}``, slowest first; empty
        when nothing was timed.
    """
    total = matrices["total"]
    if "wait_seconds" not in total:
        return []  # a traffic.json written before link times were measured
    waits, wait_n = np.asarray(total["wait_seconds"], float), np.asarray(total["wait_samples"])
    transit, transit_n = (np.asarray(total["transit_seconds"], float),
                          np.asarray(total["transit_samples"]))
    with np.errstate(invalid="ignore", divide="ignore"):
        wait_mean = np.where(wait_n > 0, waits / np.maximum(wait_n, 1), np.nan)
        transit_mean = np.where(transit_n > 0, transit / np.maximum(transit_n, 1), np.nan)
    key = np.where(wait_n > 0, wait_mean, np.where(transit_n > 0, transit_mean, -np.inf))
    timed = np.argwhere((wait_n > 0) | (transit_n > 0))
    # sort: links with a wait first (by wait), then the others by transit
    order = sorted(timed.tolist(), key=lambda ij: (wait_n[tuple(ij)] == 0, -key[tuple(ij)]))
    out = []
    for i, j in order[:count]:
        out.append({"link": [int(i), int(j)],
                    "wait_mean_seconds": _maybe(wait_mean[i, j]),
                    "transit_mean_seconds": _maybe(transit_mean[i, j]),
                    "samples": int(max(wait_n[i, j], transit_n[i, j]))})
    return out


def _maybe(value: float) -> float | None:
    return None if np.isnan(value) else float(value)

"""Traffic meter: messages, payload bytes and seconds in MPI calls, per link and phase.

Each agent meters what it sends, on its out-links. Rank 0 later stacks the rows into
K x K matrices (row = sender, column = receiver), so the matrices hold exactly the bytes
that left each agent on each link.

Seconds are the time spent inside MPI calls. A neighbour collective serves all of an
agent's out-links at once, so its time is split evenly over those links; the row sums are
then the agent's total time in communication.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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


class TrafficMeter:
    """Per-link, per-phase counters of one agent's outgoing traffic.

    Parameters
    ----------
    out_neighbors : sequence of int
        The agent's out-neighbours, in the order the network uses.
    """

    def __init__(self, out_neighbors: Sequence[int]) -> None:
        self.out_neighbors = list(out_neighbors)
        #: the counters of each phase seen so far (:meth:`counters` creates them)
        self.by_phase: dict[str, PhaseCounters] = {}
        # Time blocked in point-to-point receives; not attributable to an out-link.
        self.receive_seconds: dict[str, float] = {}

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
        """This agent's rows of the K x K matrices, by phase and quantity."""
        out: dict[str, dict[str, np.ndarray]] = {}
        for phase, counters in self.by_phase.items():
            rows = {}
            for name in ("messages", "bytes", "seconds"):
                row = np.zeros(n_agents, dtype=getattr(counters, name).dtype)
                row[self.out_neighbors] = counters.per_link(name)
                rows[name] = row
            out[phase] = rows
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
        ``{"phases": {phase: {"messages": M, "bytes": B, "seconds": S}}, "total": {...}}``
        with numpy K x K matrices, row = sender, column = receiver.
    """
    phases = sorted({phase for rows in all_rows for phase in rows})
    result: dict = {"phases": {}, "total": {}}
    for name, dtype in (("messages", np.int64), ("bytes", np.int64), ("seconds", np.float64)):
        total = np.zeros((n_agents, n_agents), dtype=dtype)
        for phase in phases:
            matrix = np.zeros((n_agents, n_agents), dtype=dtype)
            for sender, rows in enumerate(all_rows):
                if phase in rows:
                    matrix[sender] = rows[phase][name]
            result["phases"].setdefault(phase, {})[name] = matrix
            total += matrix
        result["total"][name] = total
    if hosts is not None:
        result["hosts"] = list(hosts)
        result["cross_host"] = cross_host_links(hosts)
    return result

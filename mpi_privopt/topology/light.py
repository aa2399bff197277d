"""A graph as plain data: the node count, the direction and the sorted edge list.

What a rank needs to run (its neighbours, the degrees for its mixing weights, the hash
the ranks compare, the edge list rank 0 writes) follows from the edge list alone, so a
run's ranks hold a :class:`LightGraph` and never import networkx (about 0.07 s of CPU
and 20 MB per process: docs/performance.md, section 8). The builders still draw every
graph with networkx (:mod:`.builders`); :func:`light_graph` keeps only its edges, and
:func:`as_networkx` gives the networkx graph back to the few callers that need its
algorithms (a token's walks, the Gade & Vaidya certificate, :func:`~.checks.describe`).

Nothing here imports networkx at module level (a test checks it).
"""
from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any

__all__ = ["LightGraph", "as_networkx", "light_graph"]


class LightGraph:
    """An immutable graph on the nodes ``0..n-1`` given by its edges (arcs when directed).

    Parameters
    ----------
    n : int
        Number of nodes.
    directed : bool
        Whether ``edges`` are arcs ``u -> v``.
    edges : iterable of (int, int)
        The edges; an undirected edge is stored as ``(min, max)``, and the list is
        sorted, so equal graphs have equal edge tuples however they were made.

    Only the part of networkx's interface that the topology functions read is offered
    (``number_of_nodes``, ``number_of_edges``, ``is_directed``, ``nodes``, ``edges``,
    ``in``); :meth:`to_networkx` gives the rest.
    """

    __slots__ = ("n", "directed", "edges", "_lists", "_nx")

    def __init__(self, n: int, directed: bool, edges: Iterable[tuple[int, int]]) -> None:
        self.n = int(n)
        self.directed = bool(directed)
        pairs = ((int(u), int(v)) for u, v in edges)
        self.edges: tuple[tuple[int, int], ...] = tuple(sorted(
            pairs if self.directed else ((min(u, v), max(u, v)) for u, v in pairs)))
        self._lists: tuple[list[list[int]], list[list[int]]] | None = None
        self._nx = None

    # -- the networkx-like surface ---------------------------------------------------
    def number_of_nodes(self) -> int:
        return self.n

    def number_of_edges(self) -> int:
        return len(self.edges)

    def is_directed(self) -> bool:
        return self.directed

    @property
    def nodes(self) -> range:
        return range(self.n)

    def __contains__(self, node: Any) -> bool:
        try:
            return 0 <= operator.index(node) < self.n
        except TypeError:
            return False

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LightGraph):
            return NotImplemented
        return (self.n, self.directed, self.edges) == (other.n, other.directed, other.edges)

    def __hash__(self) -> int:
        return hash((self.n, self.directed, self.edges))

    def __repr__(self) -> str:
        kind = "directed" if self.directed else "undirected"
        return f"LightGraph({self.n} nodes, {len(self.edges)} {kind} edges)"

    # -- neighbours ------------------------------------------------------------------
    def in_out_lists(self) -> tuple[list[list[int]], list[list[int]]]:
        """Every node's in- and out-neighbours, each list ascending (one pass, cached).

        For an undirected graph both are the same lists.
        """
        if self._lists is None:
            ins: list[list[int]] = [[] for _ in range(self.n)]
            outs: list[list[int]] = ins if not self.directed else [[] for _ in range(self.n)]
            for u, v in self.edges:  # sorted by u, then v: each list comes out ascending
                outs[u].append(v)
                ins[v].append(u)
            if not self.directed:
                for row in ins:
                    row.sort()
            self._lists = (ins, outs)
        return self._lists

    def to_networkx(self):
        """The same graph as a :class:`networkx.Graph` (``DiGraph`` when directed), as
        :func:`~.builders.build_graph` returns it: nodes ``0..n-1`` and the sorted edges
        added in order. Imports networkx; built once and then shared (do not modify it)."""
        if self._nx is None:
            import networkx as nx
            G = nx.DiGraph() if self.directed else nx.Graph()
            G.add_nodes_from(range(self.n))
            G.add_edges_from(self.edges)
            self._nx = G
        return self._nx


def light_graph(G: Any) -> LightGraph:
    """The :class:`LightGraph` of a networkx graph on ``0..n-1`` (or ``G`` itself)."""
    if isinstance(G, LightGraph):
        return G
    return LightGraph(G.number_of_nodes(), G.is_directed(), G.edges)


def as_networkx(G: Any):
    """``G`` as a networkx graph: itself if it is one, else :meth:`LightGraph.to_networkx`."""
    return G.to_networkx() if isinstance(G, LightGraph) else G

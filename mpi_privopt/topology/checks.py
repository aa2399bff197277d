"""Whether a graph can serve a job, a node's neighbours, and the summaries ranks compare or log.

:func:`neighbors`, :func:`graph_hash` and :func:`check_labels` take a networkx graph or a
:class:`~.light.LightGraph` and need no networkx; :func:`validate_graph` and
:func:`describe` use networkx's algorithms (imported when called).
"""
from __future__ import annotations

import hashlib
from typing import Any

from mpi_privopt.errors import TopologyError

from .edgelists import sorted_edges
from .light import LightGraph, as_networkx
from .matrices import degrees


def validate_graph(G: Any, n_ranks: int) -> None:
    """Check that ``G`` can serve as the communication graph of ``n_ranks`` agents.

    Parameters
    ----------
    G : networkx.Graph, networkx.DiGraph or LightGraph
        Candidate graph.
    n_ranks : int
        Number of MPI ranks in the job.

    Raises
    ------
    TopologyError
        Wrong number of nodes, nodes other than ``0..n-1``, a self-loop, or not
        connected (strongly connected when directed).
    """
    import networkx as nx
    G = as_networkx(G)
    n = G.number_of_nodes()
    if n != n_ranks:
        raise TopologyError(f"the graph has {n} nodes but the job has {n_ranks} ranks",
                            f"run with mpiexec -n {n} or change the topology")
    check_labels(G)
    loops = list(nx.selfloop_edges(G))
    if loops:
        raise TopologyError(f"the graph has {len(loops)} self-loop(s), e.g. at node {loops[0][0]}",
                            "remove self-loops; an agent always keeps its own value")
    if n <= 1:
        return
    isolated = sorted(v for v in G.nodes if G.degree(v) == 0)
    if isolated:
        # the usual cause: an edge list written for fewer agents than the job has ranks
        named = n - len(isolated)
        raise TopologyError(
            f"node(s) {_few(isolated)} have no edges: the graph names links for only {named} "
            f"of the job's {n_ranks} agents",
            f"give every agent a link, or run with as many ranks as the graph's agents "
            f"(mpiexec -n {named} if the others are meant to be absent)")
    strong = G.is_directed()
    parts = list(nx.strongly_connected_components(G) if strong else nx.connected_components(G))
    if len(parts) > 1:
        parts.sort(key=min)
        what = "strongly connected" if strong else "connected"
        raise TopologyError(
            f"the graph is not {what}: it has {len(parts)} {what} components, "
            f"e.g. node {min(parts[0])} and node {min(parts[1])} are in different components",
            "use a denser topology (raise [topology] degree or radius, or use kind = \"ring\" or "
            "\"complete\"); information must reach every agent",
        )


def _few(nodes: list[int], shown: int = 8) -> str:
    """A list of nodes for a message, cut after ``shown``."""
    head = ", ".join(map(str, nodes[:shown]))
    return head + (f", ... ({len(nodes)} in all)" if len(nodes) > shown else "")


def check_labels(G: Any) -> None:
    """Raise TopologyError unless the nodes are exactly ``0..n-1``."""
    n = G.number_of_nodes()
    nodes = set(G.nodes)
    expected = set(range(n))
    if nodes != expected:
        extra = sorted(nodes - expected, key=repr)[:3]
        missing = sorted(expected - nodes)[:3]
        raise TopologyError(
            f"graph nodes must be exactly 0..{n - 1}; unexpected nodes {extra}, missing {missing}",
            f"relabel the nodes to the integers 0..{n - 1} (one per MPI rank)",
        )


def neighbors(G: Any, node: int) -> tuple[list[int], list[int]]:
    """In- and out-neighbours of ``node``, each sorted ascending.

    For an undirected graph both are the neighbour list; for a directed one the
    in-neighbours are the predecessors (they send to ``node``) and the out-neighbours the
    successors (``node`` sends to them).
    """
    if node not in G:
        raise TopologyError(f"node {node!r} is not in the graph (nodes 0..{G.number_of_nodes() - 1})",
                            "use a rank number within the job")
    if isinstance(G, LightGraph):
        ins, outs = G.in_out_lists()
        return list(ins[node]), list(outs[node])
    if G.is_directed():
        return sorted(G.predecessors(node)), sorted(G.successors(node))
    out = sorted(G.neighbors(node))
    return list(out), out



def graph_hash(G: Any) -> str:
    """SHA-256 hex digest of the directed flag, the node count and the sorted edge list.

    Undirected edges are taken as ``(min, max)``, so equal graphs hash equal however
    they were built; ranks compare hashes to confirm they hold the same graph.
    """
    text = f"directed={G.is_directed()}\nn={G.number_of_nodes()}\n"
    text += "".join(f"{u} {v}\n" for u, v in sorted_edges(G))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def describe(G: Any) -> dict[str, Any]:
    """Summary for logs and result files.

    Returns
    -------
    dict
        ``nodes``, ``edges`` (arcs for a DiGraph), ``directed``, ``min_degree``,
        ``max_degree``, ``average_degree`` (out-degrees for a DiGraph) and ``diameter``
        (``None`` unless connected, strongly connected when directed).
    """
    import networkx as nx
    G = as_networkx(G)
    n = G.number_of_nodes()
    deg = degrees(G)
    connected = n > 0 and (nx.is_strongly_connected(G) if G.is_directed() else nx.is_connected(G))
    return {
        "nodes": n,
        "edges": G.number_of_edges(),
        "directed": G.is_directed(),
        "min_degree": int(deg.min()) if n else 0,
        "max_degree": int(deg.max()) if n else 0,
        "average_degree": float(deg.mean()) if n else 0.0,
        "diameter": int(nx.diameter(G)) if connected else None,
    }

"""Graph builders: one per topology kind, and :func:`build_graph`, which dispatches on the kind.

Every builder has the signature ``(n, *, seed, directed, params)`` so :func:`build_graph`
can dispatch through :data:`TOPOLOGIES` without knowing which parameters a kind uses.
Random kinds draw only from generators seeded by ``seed``, so every rank builds the same graph.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import networkx as nx
import numpy as np

from mpi_privopt.errors import TopologyError

from .edgelists import read_edge_list
from .params import KINDS, check_agent_count, int_param, number_param

# Redraws before a random builder gives up. Rejection at these counts costs well under
# a second for a few hundred nodes; anything rarer needs different parameters.
_ER_REJECTION_TRIES = 200
_RANDOM_TRIES = 200

_DEFAULT_DEGREE = 3.0


def _attempt_seeds(seed: int) -> Iterator[int]:
    """Endless stream of per-attempt integer seeds, a function of ``seed`` only."""
    rng = np.random.default_rng(seed)
    while True:
        yield int(rng.integers(0, 2**32))


def _max_edges(n: int, directed: bool) -> int:
    return n * (n - 1) if directed else n * (n - 1) // 2



def _both_ways(G: nx.Graph, directed: bool) -> nx.Graph:
    return G.to_directed() if directed else G


def build_ring(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Cycle ``0-1-...-(n-1)-0``; directed: the cycle ``i -> i+1 mod n``.

    Below three nodes the cycle degenerates: one node has no edge (``cycle_graph(1)``
    would be a self-loop) and two nodes share a single edge (two arcs when directed).
    """
    if n == 1:
        return nx.empty_graph(1, create_using=nx.DiGraph if directed else nx.Graph)
    if directed:
        return nx.cycle_graph(n, create_using=nx.DiGraph)
    return nx.cycle_graph(n) if n >= 3 else nx.path_graph(n)


def build_path(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Path ``0-1-...-(n-1)``; directed: arcs ``i -> i+1`` only (not strongly connected)."""
    return nx.path_graph(n, create_using=nx.DiGraph if directed else nx.Graph)


def build_star(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Star with centre 0; directed: arcs both ways between the centre and each leaf."""
    return _both_ways(nx.star_graph(n - 1), directed)


def build_complete(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Complete graph; directed: every arc ``i -> j`` with ``i != j``."""
    return _both_ways(nx.complete_graph(n), directed)


def grid_shape(n: int, rows: int = 0) -> tuple[int, int]:
    """Rows and columns of the grid on ``n`` nodes.

    Parameters
    ----------
    n : int
        Number of nodes.
    rows : int, default 0
        Requested number of rows; 0 picks the most square factorisation
        (``rows <= cols``; a prime ``n`` gives a single row).

    Returns
    -------
    tuple of int
        ``(rows, cols)`` with ``rows * cols == n``.
    """
    if rows == 0:
        rows = max(r for r in range(1, math.isqrt(n) + 1) if n % r == 0)
    if rows < 1 or n % rows != 0:
        divisors = [r for r in range(1, n + 1) if n % r == 0]
        raise TopologyError(
            f"[topology] rows = {rows} does not divide the {n} agents into a full grid",
            f"set rows to a divisor of {n} ({', '.join(map(str, divisors))}) or to 0 for automatic",
        )
    return rows, n // rows


def build_grid(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """2-D grid ``rows x cols`` (param ``rows``, 0 = most square), nodes numbered row-major."""
    rows, cols = grid_shape(n, int_param(params, "rows", 0))
    G = nx.grid_2d_graph(rows, cols)
    G = nx.relabel_nodes(G, {(r, c): r * cols + c for r, c in G.nodes})
    return _both_ways(G, directed)


def _tree_plus_edges(n: int, m: int, rng: np.random.Generator) -> nx.Graph:
    """Uniform random labelled spanning tree plus uniformly random extra edges up to ``m``."""
    G = nx.empty_graph(n)
    if n >= 2:
        # A uniformly random Pruefer sequence encodes a uniformly random labelled tree.
        G.add_edges_from(nx.from_prufer_sequence(rng.integers(0, n, size=n - 2).tolist()).edges)
    _add_random_edges(G, m - G.number_of_edges(), rng)
    return G


def _cycle_plus_arcs(n: int, m: int, rng: np.random.Generator) -> nx.DiGraph:
    """Directed Hamiltonian cycle in random order plus uniformly random extra arcs up to ``m``."""
    G = nx.empty_graph(n, create_using=nx.DiGraph)
    if n >= 2:
        order = rng.permutation(n).tolist()
        G.add_edges_from(zip(order, order[1:] + order[:1]))
    _add_random_edges(G, m - G.number_of_edges(), rng)
    return G


def _add_random_edges(G: nx.Graph, count: int, rng: np.random.Generator) -> None:
    """Add ``count`` edges (arcs) drawn uniformly from the absent ones, no self-loops."""
    if count <= 0:
        return
    n = G.number_of_nodes()
    free = _max_edges(n, G.is_directed()) - G.number_of_edges()
    if count * 2 <= free:
        # Sparse: rejection is cheap and avoids listing O(n^2) pairs.
        while count > 0:
            u, v = (int(x) for x in rng.integers(0, n, size=2))
            if u != v and not G.has_edge(u, v):
                G.add_edge(u, v)
                count -= 1
        return
    if G.is_directed():
        absent = [(u, v) for u in range(n) for v in range(n) if u != v and not G.has_edge(u, v)]
    else:
        absent = [(u, v) for u in range(n) for v in range(u + 1, n) if not G.has_edge(u, v)]
    picks = rng.choice(len(absent), size=min(count, len(absent)), replace=False)
    G.add_edges_from(absent[i] for i in sorted(picks.tolist()))


def build_erdos_renyi(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Connected Erdos-Renyi graph G(n, m) with a target average degree.

    ``m = round(n * degree / 2)`` edges (``round(n * degree)`` arcs when directed),
    capped at the complete graph. First up to 200 plain G(n, m) draws are tried and the
    first connected (strongly connected when directed) one is returned. If all fail,
    which is the common case at low degree (e.g. connected G(50, 75) is a rare event),
    the graph is built directly as a uniformly random labelled spanning tree (random
    Pruefer sequence) plus uniformly random extra edges up to ``m``; when directed, a
    directed Hamiltonian cycle through a random permutation plus uniformly random extra
    arcs. The fallback is connected by construction but not exactly uniform over
    connected G(n, m) graphs. Both stages draw only from generators seeded by ``seed``.

    Parameters
    ----------
    params : mapping
        ``degree`` (float, default 3.0): target average degree (average out-degree when
        directed).
    """
    degree = number_param(params, "degree", _DEFAULT_DEGREE)
    m = min(round(n * degree) if directed else round(n * degree / 2), _max_edges(n, directed))
    needed = n if directed and n >= 2 else n - 1
    if m < needed:
        least = "1" if directed else f"2(n-1)/n = {2 * (n - 1) / n:.4g}"
        kind = "strongly connected digraph" if directed else "connected graph"
        raise TopologyError(
            f"[topology] degree = {degree:g} gives {m} {'arcs' if directed else 'edges'} on "
            f"{n} agents, too few for a {kind} (needs at least {needed})",
            f"raise [topology] degree to at least {least}",
        )
    connected = nx.is_strongly_connected if directed else nx.is_connected
    seeds = _attempt_seeds(seed)
    for _ in range(_ER_REJECTION_TRIES):
        G = nx.gnm_random_graph(n, m, seed=next(seeds), directed=directed)
        if connected(G):
            return G
    rng = np.random.default_rng(next(seeds))
    return _cycle_plus_arcs(n, m, rng) if directed else _tree_plus_edges(n, m, rng)


def _expected_disc_area(r: float) -> float:
    """Mean area of a radius-``r`` disc around a uniform point, clipped to the unit square.

    Exact for ``r <= 1``; accounting for the boundary makes the realised average degree
    match the requested one instead of falling short near the edges.
    """
    return math.pi * r * r - 8.0 / 3.0 * r**3 + 0.5 * r**4


def geometric_radius(n: int, degree: float) -> float:
    """Radius at which a random geometric graph on ``n`` nodes has expected average ``degree``.

    Solves ``(n - 1) * A(r) = degree`` by bisection, with ``A`` the expected clipped disc
    area; a degree beyond what ``r = 1`` gives returns ``sqrt(2)`` (complete graph).
    """
    if n <= 1:
        return 0.0
    target = degree / (n - 1)
    if target >= _expected_disc_area(1.0):
        return math.sqrt(2.0)
    lo, hi = 0.0, 1.0
    for _ in range(100):  # A is increasing on [0, 1]; 100 halvings reach float precision
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _expected_disc_area(mid) < target else (lo, mid)
    return hi


def build_geometric(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Connected random geometric graph in the unit square.

    Nodes are uniform points; two are joined when closer than ``radius``. Positions are
    redrawn (deterministically from ``seed``) up to 200 times until the graph is
    connected. Node attribute ``pos`` holds the positions.

    Parameters
    ----------
    params : mapping
        ``radius`` (float, default 0 = auto): connection radius; when 0 it is chosen so
        the expected average degree, boundary effects included, equals ``degree``
        (float, default 3.0).
    """
    radius = number_param(params, "radius", 0.0)
    degree = number_param(params, "degree", _DEFAULT_DEGREE)
    if radius < 0:
        raise TopologyError(f"[topology] radius must be >= 0, got {radius:g}",
                            "set radius = 0 (automatic from degree) or a positive radius")
    if radius == 0:
        if degree <= 0 and n > 1:
            raise TopologyError(f"[topology] degree must be > 0 for an automatic radius, got {degree:g}",
                                "set a positive degree or an explicit radius")
        radius = geometric_radius(n, degree)
    seeds = _attempt_seeds(seed)
    for _ in range(_RANDOM_TRIES):
        G = nx.random_geometric_graph(n, radius, seed=next(seeds))
        if nx.is_connected(G):
            return _both_ways(G, directed)
    # Connectivity of random geometric graphs sets in around average degree ~ ln(n).
    hint = max(math.ceil(1.5 * math.log(n)) + 1, math.ceil(degree) + 1)
    raise TopologyError(
        f"no connected random geometric graph on {n} agents with radius {radius:.4g} "
        f"in {_RANDOM_TRIES} draws",
        f"raise [topology] degree (e.g. degree = {hint}) or set a larger radius",
    )


def build_small_world(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Connected Watts-Strogatz small-world graph.

    Uses :func:`networkx.connected_watts_strogatz_graph`: a ring where each node is joined
    to its ``neighbors`` nearest nodes (networkx uses ``neighbors // 2`` on each side, so an
    odd value acts like the even number below it), then each edge is rewired with
    probability ``rewire``. ``neighbors >= n`` gives the complete graph.

    Parameters
    ----------
    params : mapping
        ``neighbors`` (int, default 4) and ``rewire`` (float in [0, 1], default 0.1).
    """
    k = int_param(params, "neighbors", 4)
    p = number_param(params, "rewire", 0.1)
    if k < 2:
        raise TopologyError(f"[topology] neighbors = {k} leaves the small-world ring disconnected",
                            "set neighbors to at least 2")
    if not 0.0 <= p <= 1.0:
        raise TopologyError(f"[topology] rewire must be a probability in [0, 1], got {p:g}",
                            "set rewire between 0 and 1 (e.g. 0.1)")
    try:
        G = nx.connected_watts_strogatz_graph(n, min(k, n), p, tries=_RANDOM_TRIES, seed=seed)
    except nx.NetworkXError as err:
        raise TopologyError(f"no connected small-world graph on {n} agents ({err})",
                            "lower [topology] rewire or raise neighbors") from err
    return _both_ways(G, directed)


def build_regular(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Connected uniformly random ``degree``-regular graph.

    Draws :func:`networkx.random_regular_graph` up to 200 times until connected.

    Parameters
    ----------
    params : mapping
        ``degree`` (whole number, default 3): every node's degree; ``n * degree`` must be
        even and ``degree < n``.
    """
    d = int_param(params, "degree", int(_DEFAULT_DEGREE))
    if d < 0 or d >= n:
        raise TopologyError(f"[topology] degree = {d} is impossible for a regular graph on {n} agents",
                            f"set degree between 1 and {n - 1}" if n > 1 else "use 0 for a single agent")
    if (n * d) % 2:
        raise TopologyError(
            f"a {d}-regular graph on {n} agents does not exist: n * degree = {n * d} is odd",
            f"use an even degree (e.g. {d - 1 if d > 1 else d + 1}) or an even number of agents",
        )
    if (n > 1 and d == 0) or (n > 2 and d == 1):
        raise TopologyError(f"a {d}-regular graph on {n} agents is never connected",
                            "set [topology] degree to at least 2")
    seeds = _attempt_seeds(seed)
    for _ in range(_RANDOM_TRIES):
        G = nx.random_regular_graph(d, n, seed=next(seeds))
        if nx.is_connected(G):
            return _both_ways(G, directed)
    raise TopologyError(f"no connected {d}-regular graph on {n} agents in {_RANDOM_TRIES} draws",
                        "raise [topology] degree (3 or more is connected almost always)")


def build_file(n: int, *, seed: int, directed: bool, params: Mapping[str, Any]) -> nx.Graph:
    """Graph read from the edge-list file named by param ``file`` (see :func:`read_edge_list`)."""
    path = params.get("file")
    if not path:
        raise TopologyError('[topology] kind = "file" needs the path of an edge list',
                            'add file = "path/to/edges.txt" to the [topology] section')
    return read_edge_list(path, n, directed=directed)


TOPOLOGIES: dict[str, Callable[..., nx.Graph]] = {
    "ring": build_ring,
    "path": build_path,
    "star": build_star,
    "complete": build_complete,
    "grid": build_grid,
    "erdos-renyi": build_erdos_renyi,
    "geometric": build_geometric,
    "small-world": build_small_world,
    "regular": build_regular,
    "file": build_file,
}
assert tuple(TOPOLOGIES) == KINDS, "a kind without a builder, or a builder not in KINDS"


def build_graph(kind: str, n: int, *, seed: int, directed: bool = False,
                params: Mapping[str, Any] | None = None) -> nx.Graph | nx.DiGraph:
    """Build the communication graph of ``n`` agents.

    Parameters
    ----------
    kind : str
        One of the keys of :data:`TOPOLOGIES`.
    n : int
        Number of agents (MPI ranks); the nodes are ``0..n-1``.
    seed : int
        Non-negative seed; the only source of randomness, so every rank gets the same graph.
    directed : bool, default False
        Return a :class:`networkx.DiGraph` (see the module docstring for how each kind
        is oriented).
    params : mapping, optional
        The ``[topology]`` section; builders read the keys they use and ignore the rest.

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        Graph on exactly the nodes ``0..n-1`` without self-loops. Connectivity is
        guaranteed by the random kinds but not checked here; see :func:`validate_graph`.

    Raises
    ------
    TopologyError
        Unknown kind, invalid parameters, or no connected draw.
    """
    builder = TOPOLOGIES.get(kind)
    if builder is None:
        valid = ", ".join(TOPOLOGIES)
        raise TopologyError(f"unknown topology kind {kind!r}; valid kinds: {valid}",
                            f"set [topology] kind to one of: {valid}")
    n = check_agent_count(n)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TopologyError(f"the topology seed must be a non-negative integer, got {seed!r}",
                            "set seed to a whole number >= 0")
    G = builder(n, seed=int(seed), directed=bool(directed), params=params or {})
    # Return a plain graph type (no generator-specific class or graph name) so equal
    # graphs look equal regardless of how they were made.
    out = nx.DiGraph() if directed else nx.Graph()
    out.add_nodes_from(sorted(G.nodes(data=True)))
    out.add_edges_from(sorted((u, v) for u, v in G.edges))
    if nx.number_of_selfloops(out):  # a builder bug, never the user's fault
        raise AssertionError(f"builder {kind!r} produced self-loops")
    return out

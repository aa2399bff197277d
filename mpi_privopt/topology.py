"""Communication graphs between agents (one MPI rank = one node).

Topologies are plain data: a builder turns a kind name, the number of ranks and a
seed into a :class:`networkx.Graph` (or :class:`networkx.DiGraph`) on the nodes
``0..n-1``. Everything else (neighbour lists, Metropolis mixing weights, Laplacians,
a hash the ranks compare) is computed from that graph, in the spirit of Bluefog's
topology utilities.

Every rank builds the graph itself, so builders are deterministic: random kinds draw
only from generators seeded by ``seed`` (never from global random state), and the
ranks confirm agreement by comparing :func:`graph_hash`.

Directed graphs
---------------
``directed=True`` gives a :class:`networkx.DiGraph`. Kinds with a natural direction
are built directly: ``"ring"`` is the directed cycle ``i -> i+1 mod n``, ``"path"`` is
``i -> i+1`` (not strongly connected, so :func:`validate_graph` rejects it),
``"erdos-renyi"`` draws random arcs and ``"file"`` reads arcs ``u -> v``. Every other
kind builds the undirected graph and replaces each edge by both arcs
(:meth:`networkx.Graph.to_directed`).
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from mpi_privopt.errors import TopologyError

__all__ = [
    "TOPOLOGIES",
    "METROPOLIS_VARIANTS",
    "build_graph",
    "validate_graph",
    "neighbors",
    "metropolis_weights",
    "metropolis_row",
    "laplacian",
    "signless_laplacian",
    "adjacency",
    "degrees",
    "graph_hash",
    "describe",
    "read_edge_list",
    "write_edge_list",
]

#: Mixing-weight rules understood by :func:`metropolis_weights`.
METROPOLIS_VARIANTS: tuple[str, ...] = ("standard", "self-inclusive")

# Redraws before a random builder gives up. Rejection at these counts costs well under
# a second for a few hundred nodes; anything rarer needs different parameters.
_ER_REJECTION_TRIES = 200
_RANDOM_TRIES = 200

_DEFAULT_DEGREE = 3.0


# --------------------------------------------------------------------------- params


def _number_param(params: Mapping[str, Any], key: str, default: float) -> float:
    value = params.get(key, default)
    # bool is an int subclass; "degree = true" in a config is a mistake, not 1
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TopologyError(
            f"[topology] {key} must be a number, got {value!r}",
            f"set {key} = {default!r} (or another number) in the [topology] section",
        )
    value = float(value)
    if not math.isfinite(value):
        raise TopologyError(f"[topology] {key} must be finite, got {value!r}",
                            f"set {key} to a finite number")
    return value


def _int_param(params: Mapping[str, Any], key: str, default: int) -> int:
    value = _number_param(params, key, default)
    if not value.is_integer():
        raise TopologyError(f"[topology] {key} must be a whole number, got {value!r}",
                            f"set {key} = {round(value)}")
    return int(value)


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise TopologyError(f"the number of agents must be a positive integer, got {n!r}",
                            "run with at least one MPI rank (mpiexec -n N with N >= 1)")
    return int(n)


def _attempt_seeds(seed: int) -> Iterator[int]:
    """Endless stream of per-attempt integer seeds, a function of ``seed`` only."""
    rng = np.random.default_rng(seed)
    while True:
        yield int(rng.integers(0, 2**32))


def _max_edges(n: int, directed: bool) -> int:
    return n * (n - 1) if directed else n * (n - 1) // 2


# --------------------------------------------------------------------------- builders
# Every builder has the signature (n, *, seed, directed, params) so build_graph can
# dispatch through TOPOLOGIES without knowing which parameters a kind uses.


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
    rows, cols = grid_shape(n, _int_param(params, "rows", 0))
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
    degree = _number_param(params, "degree", _DEFAULT_DEGREE)
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
    radius = _number_param(params, "radius", 0.0)
    degree = _number_param(params, "degree", _DEFAULT_DEGREE)
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
    k = _int_param(params, "neighbors", 4)
    p = _number_param(params, "rewire", 0.1)
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
    d = _int_param(params, "degree", int(_DEFAULT_DEGREE))
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
    n = _check_n(n)
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


# --------------------------------------------------------------------------- edge lists

_SEPARATOR = re.compile(r"[,\s]+")
_HEADER = re.compile(r"#\s*mpi_privopt edge list:\s*n=(\d+)")


def read_edge_list(path: str | os.PathLike[str], n: int, *, directed: bool = False) -> nx.Graph:
    """Read an edge list on the nodes ``0..n-1``.

    One edge per line, ``u v`` separated by whitespace and/or a comma, with an optional
    third column (a weight, ignored). Blank lines and lines starting with ``#`` are
    skipped. When directed each line is the arc ``u -> v``. Nodes that appear on no line
    are still added (and make the graph disconnected).

    Parameters
    ----------
    path : str or path-like
        The file.
    n : int
        Number of agents.
    directed : bool, default False
        Return a DiGraph of arcs.

    Raises
    ------
    TopologyError
        Missing or unreadable file, malformed line, self-loop, node outside ``0..n-1``,
        or a header written by :func:`write_edge_list` for a different ``n``.
    """
    n = _check_n(n)
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise TopologyError(f"edge-list file {str(path)!r} does not exist",
                            "check [topology] file (relative paths are relative to the working directory)") from err
    except (OSError, UnicodeDecodeError) as err:
        raise TopologyError(f"cannot read edge-list file {str(path)!r}: {err}",
                            "point [topology] file at a readable UTF-8 text file") from err
    G = nx.empty_graph(n, create_using=nx.DiGraph if directed else nx.Graph)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            _check_header(line, n, path)
            continue
        if line:
            G.add_edge(*_parse_edge(line, lineno, n, path))
    return G


def _check_header(line: str, n: int, path: Path) -> None:
    # A file we wrote records its n; a mismatch is clearer here than as a disconnected graph.
    match = _HEADER.match(line)
    if match and int(match.group(1)) != n:
        written = int(match.group(1))
        raise TopologyError(
            f"edge-list file {str(path)!r} was written for {written} agents but the job has {n} ranks",
            f"run with mpiexec -n {written} or use an edge list for {n} agents",
        )


def _parse_edge(line: str, lineno: int, n: int, path: Path) -> tuple[int, int]:
    fields = _SEPARATOR.split(line)
    try:
        if len(fields) not in (2, 3):
            raise ValueError
        u, v = int(fields[0]), int(fields[1])
        if len(fields) == 3:
            float(fields[2])
    except ValueError:
        raise TopologyError(
            f"{path}, line {lineno}: malformed edge {line!r}",
            'write one edge per line as "u v" or "u,v" (integers), optionally followed by a weight',
        ) from None
    for node in (u, v):
        if not 0 <= node < n:
            raise TopologyError(
                f"{path}, line {lineno}: node {node} is outside 0..{n - 1} (the job has {n} ranks)",
                f"number the nodes 0..{n - 1}, or run with more ranks (mpiexec -n {max(u, v) + 1})"
                if node >= n else f"number the nodes 0..{n - 1}",
            )
    if u == v:
        raise TopologyError(f"{path}, line {lineno}: self-loop {u}-{v}",
                            "remove the line; an agent always keeps its own value")
    return u, v


def _sorted_edges(G: nx.Graph) -> list[tuple[int, int]]:
    if G.is_directed():
        return sorted((int(u), int(v)) for u, v in G.edges)
    return sorted((min(int(u), int(v)), max(int(u), int(v))) for u, v in G.edges)


def write_edge_list(G: nx.Graph, path: str | os.PathLike[str]) -> None:
    """Write ``G`` in the format read by :func:`read_edge_list`.

    A header ``# mpi_privopt edge list: n=<n> directed=<bool>`` and then one ``u v`` line
    per edge (arc), sorted; undirected edges are written as ``min max``.
    """
    lines = [f"# mpi_privopt edge list: n={G.number_of_nodes()} directed={G.is_directed()}"]
    lines += [f"{u} {v}" for u, v in _sorted_edges(G)]
    Path(path).expanduser().write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- checks


def validate_graph(G: nx.Graph, n_ranks: int) -> None:
    """Check that ``G`` can serve as the communication graph of ``n_ranks`` agents.

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph
        Candidate graph.
    n_ranks : int
        Number of MPI ranks in the job.

    Raises
    ------
    TopologyError
        Wrong number of nodes, nodes other than ``0..n-1``, a self-loop, or not
        connected (strongly connected when directed).
    """
    n = G.number_of_nodes()
    if n != n_ranks:
        raise TopologyError(f"the graph has {n} nodes but the job has {n_ranks} ranks",
                            f"run with mpiexec -n {n} or change the topology")
    _check_labels(G)
    loops = list(nx.selfloop_edges(G))
    if loops:
        raise TopologyError(f"the graph has {len(loops)} self-loop(s), e.g. at node {loops[0][0]}",
                            "remove self-loops; an agent always keeps its own value")
    if n <= 1:
        return
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


def _check_labels(G: nx.Graph) -> None:
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


def neighbors(G: nx.Graph, node: int) -> tuple[list[int], list[int]]:
    """In- and out-neighbours of ``node``, each sorted ascending.

    For an undirected graph both are the neighbour list; for a directed one the
    in-neighbours are the predecessors (they send to ``node``) and the out-neighbours the
    successors (``node`` sends to them).
    """
    if node not in G:
        raise TopologyError(f"node {node!r} is not in the graph (nodes 0..{G.number_of_nodes() - 1})",
                            "use a rank number within the job")
    if G.is_directed():
        return sorted(G.predecessors(node)), sorted(G.successors(node))
    out = sorted(G.neighbors(node))
    return list(out), out


# --------------------------------------------------------------------------- weights


def _metropolis_offset(variant: str) -> int:
    # "self-inclusive" counts the agent itself in |N_i|, i.e. uses degree + 1 on both sides.
    if variant == "standard":
        return 0
    if variant == "self-inclusive":
        return 1
    valid = ", ".join(METROPOLIS_VARIANTS)
    raise TopologyError(f"unknown Metropolis weight variant {variant!r}; valid variants: {valid}",
                        f"use one of: {valid}")


def _self_weight(neighbor_weights: Sequence[float] | np.ndarray) -> float:
    # fsum is correctly rounded, hence order independent: the matrix and the per-agent
    # row give bit-identical self weights.
    return 1.0 - math.fsum(neighbor_weights)


def metropolis_weights(G: nx.Graph, variant: str = "standard") -> np.ndarray:
    """Metropolis-Hastings mixing matrix of an undirected graph.

    Parameters
    ----------
    G : networkx.Graph
        Undirected graph on ``0..n-1`` without self-loops.
    variant : {"standard", "self-inclusive"}
        ``"standard"`` (Xiao, Boyd & Lall): ``W_ij = 1 / (1 + max(d_i, d_j))`` on edges.
        ``"self-inclusive"`` (Gade & Vaidya, with ``|N_i|`` counting ``i`` itself):
        ``W_ij = 1 / (2 + max(d_i, d_j))``. In both, ``W_ii = 1 - sum_{j != i} W_ij`` and
        all other entries are 0.

    Returns
    -------
    numpy.ndarray
        ``(n, n)`` float64, symmetric and doubly stochastic.
    """
    offset = _metropolis_offset(variant)
    if G.is_directed():
        raise TopologyError("Metropolis weights need an undirected graph, got a directed one",
                            "set [topology] directed = false or use an algorithm for directed graphs")
    _check_labels(G)
    if nx.number_of_selfloops(G):
        raise TopologyError("Metropolis weights are undefined on a graph with self-loops",
                            "remove the self-loops")
    n = G.number_of_nodes()
    deg = degrees(G)
    W = np.zeros((n, n), dtype=np.float64)
    for u, v in G.edges:
        W[u, v] = W[v, u] = 1.0 / (1 + offset + max(deg[u], deg[v]))
    for i in range(n):
        W[i, i] = _self_weight(W[i, sorted(G.neighbors(i))])
    return W


def metropolis_row(node: int, neighbor_list: Sequence[int],
                   degrees: Mapping[int, int] | Sequence[int],
                   variant: str = "standard") -> tuple[float, np.ndarray]:
    """One agent's Metropolis weights, from its own and its neighbours' degrees only.

    Parameters
    ----------
    node : int
        The agent.
    neighbor_list : sequence of int
        Its neighbours, in the order the weights are wanted.
    degrees : mapping or sequence
        ``degrees[j]`` for ``node`` and every neighbour ``j``.
    variant : {"standard", "self-inclusive"}
        As in :func:`metropolis_weights`.

    Returns
    -------
    self_weight : float
        ``W_ii``.
    weights : numpy.ndarray
        ``W_ij`` for ``j`` in ``neighbor_list``, same order; equal to row ``node`` of
        :func:`metropolis_weights`.
    """
    offset = _metropolis_offset(variant)
    nbrs = [int(j) for j in neighbor_list]
    if node in nbrs:
        raise TopologyError(f"agent {node} lists itself as a neighbour", "remove self-loops from the graph")
    own = _lookup_degree(degrees, node)
    if own != len(nbrs):
        raise TopologyError(f"agent {node} has {len(nbrs)} neighbours but its degree is given as {own}",
                            "pass the degrees of the same graph the neighbour list came from")
    weights = np.array([1.0 / (1 + offset + max(own, _lookup_degree(degrees, j))) for j in nbrs],
                       dtype=np.float64)
    return _self_weight(weights), weights


def _lookup_degree(degrees: Mapping[int, int] | Sequence[int], node: int) -> int:
    try:
        return int(degrees[node])
    except (KeyError, IndexError) as err:
        raise TopologyError(f"the degree of agent {node} is unknown",
                            "pass degrees for the agent and all of its neighbours") from err


# --------------------------------------------------------------------------- matrices


def adjacency(G: nx.Graph) -> np.ndarray:
    """Dense 0/1 adjacency matrix, float64, rows and columns in node order ``0..n-1``.

    For a DiGraph ``A[i, j] = 1`` when there is an arc ``i -> j``. Edge weights are ignored.
    """
    return nx.to_numpy_array(G, nodelist=range(G.number_of_nodes()), dtype=np.float64, weight=None)


def degrees(G: nx.Graph) -> np.ndarray:
    """Degree of each node ``0..n-1`` (out-degree for a DiGraph), as an int array."""
    deg = G.out_degree if G.is_directed() else G.degree
    return np.array([deg[i] for i in range(G.number_of_nodes())], dtype=np.int64)


def laplacian(G: nx.Graph) -> np.ndarray:
    """Graph Laplacian ``D - A`` (out-degree ``D`` for a DiGraph), dense float64."""
    return np.diag(degrees(G).astype(np.float64)) - adjacency(G)


def signless_laplacian(G: nx.Graph) -> np.ndarray:
    """Signless Laplacian ``D + A`` (out-degree ``D`` for a DiGraph), dense float64."""
    return np.diag(degrees(G).astype(np.float64)) + adjacency(G)


# --------------------------------------------------------------------------- summaries


def graph_hash(G: nx.Graph) -> str:
    """SHA-256 hex digest of the directed flag, the node count and the sorted edge list.

    Undirected edges are taken as ``(min, max)``, so equal graphs hash equal however
    they were built; ranks compare hashes to confirm they hold the same graph.
    """
    text = f"directed={G.is_directed()}\nn={G.number_of_nodes()}\n"
    text += "".join(f"{u} {v}\n" for u, v in _sorted_edges(G))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def describe(G: nx.Graph) -> dict[str, Any]:
    """Summary for logs and result files.

    Returns
    -------
    dict
        ``nodes``, ``edges`` (arcs for a DiGraph), ``directed``, ``min_degree``,
        ``max_degree``, ``average_degree`` (out-degrees for a DiGraph) and ``diameter``
        (``None`` unless connected, strongly connected when directed).
    """
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

"""Public, seeded schedules for a token that travels the graph.

A schedule is the sequence of holders ``h_0, h_1, ...`` of one token: step ``t`` is done by
agent ``h_t``, which then hands the token to ``h_{t+1}`` over a graph link (no message when
``h_{t+1} == h_t``). Every function here is a pure function of the public graph and a seed:
no MPI, no private data, so every rank computes the same sequence whatever the process
placement, and nobody needs to be told where the token goes.

* :func:`ring`: around a Hamiltonian cycle of the graph (:func:`hamiltonian_cycle`, a
  deterministic backtracking search, smallest ranks first).
* :func:`walk`: a random walk; each step moves to a uniformly drawn out-neighbour, from a
  generator derived from the seed and the chain number only.
* :func:`relay`: visit a sequence of owners (the agents holding the records a method
  samples), relaying along :func:`shortest_path` between consecutive owners.
* :func:`spanning_tree`: the public tree along which the final token reaches every agent.

Shortest paths break ties towards the lower rank at every hop (the lexicographically
smallest shortest path), so a path and the tree's branches agree.

Random streams: the walk of chain ``c`` draws from
``SeedSequence(seed, spawn_key=(SCHEDULE_STREAM_TAG, c))``. The tag is far above any agent
index, so the public schedule never shares a stream with an agent's private streams
(spawn keys ``(k,)`` and the noise tags of :mod:`mpi_privopt.privacy.noise`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import networkx as nx
import numpy as np

from ..errors import ConfigError
from ..topology.light import as_networkx

#: spawn-key tag of the public schedule streams ("WALK")
SCHEDULE_STREAM_TAG = 0x57414C4B

#: backtracking steps after which :func:`hamiltonian_cycle` gives up
HAMILTONIAN_STEP_LIMIT = 200_000

_OTHER_SCHEDULE = ("use the \"walk\" schedule (uniform random neighbour), or a topology with a "
                   "Hamiltonian cycle (kind = \"ring\" or \"complete\", or a denser graph)")


def _describe(graph: nx.Graph, name: str | None) -> str:
    if name is not None:
        return name
    kind = "directed graph" if graph.is_directed() else "graph"
    return (f"the {kind} with {graph.number_of_nodes()} nodes and "
            f"{graph.number_of_edges()} edges")


def _successors(graph: nx.Graph) -> dict[int, list[int]]:
    """Each node's out-neighbours (neighbours when undirected), ascending."""
    return {v: sorted(graph.successors(v) if graph.is_directed() else graph.neighbors(v))
            for v in graph.nodes}


def _check_connected(graph: nx.Graph, name: str | None, user: str) -> None:
    if graph.number_of_nodes() <= 1:
        return
    directed = graph.is_directed()
    connected = nx.is_strongly_connected(graph) if directed else nx.is_connected(graph)
    if not connected:
        what = "strongly connected" if directed else "connected"
        raise ConfigError(f"{user} needs a {what} graph; "
                          f"{_describe(graph, name)} is not",
                          "use a connected topology: the token must be able to reach every agent")


def hamiltonian_cycle(graph: nx.Graph, *, name: str | None = None,
                      max_steps: int = HAMILTONIAN_STEP_LIMIT) -> list[int]:
    """A cycle through every node of ``graph`` once, along its edges (arcs when directed).

    Depth-first backtracking from the smallest node, trying neighbours in ascending order;
    the first cycle found is returned, so the answer is a function of the graph alone.

    Parameters
    ----------
    graph : networkx.Graph or networkx.DiGraph
        Nodes ``0..K-1``. With two nodes the cycle ``[0, 1]`` uses the one edge both ways.
    name : str, optional
        How error messages name the graph (e.g. ``"topology 'star' with 5 agents"``).
    max_steps : int
        Give up after this many extensions of the partial path.

    Returns
    -------
    list of int
        The nodes in cycle order, starting at the smallest; the last one is a neighbour of
        the first.

    Raises
    ------
    ConfigError
        No Hamiltonian cycle exists, or none was found within ``max_steps``.
    """
    graph = as_networkx(graph)  # a run's LightGraph: networkx's algorithms below
    nodes = sorted(graph.nodes)
    if not nodes:
        raise ConfigError("a ring schedule needs a graph with at least one node")
    succ = _successors(graph)
    start, n = nodes[0], len(nodes)
    if n == 1:
        return [start]
    # A node that cannot be both entered and left (a leaf of a star or a path) rules out
    # any cycle: say so at once instead of searching.
    pred_count = {v: 0 for v in nodes}
    for v in nodes:
        for w in succ[v]:
            pred_count[w] += 1
    need = 1 if (graph.is_directed() or n == 2) else 2
    for v in nodes:
        if min(len(succ[v]), pred_count[v]) < need:
            raise ConfigError(
                f"the ring schedule needs a Hamiltonian cycle, and {_describe(graph, name)} "
                f"has none: agent {v} has {len(succ[v])} neighbour(s), so a cycle through "
                "every agent cannot pass through it", _OTHER_SCHEDULE)
    closes = set(graph.predecessors(start) if graph.is_directed() else graph.neighbors(start))
    path, on_path = [start], {start}
    choices = [iter(succ[start])]  # choices[i]: untried next nodes after path[i]
    steps = 0
    while choices:
        for w in choices[-1]:
            if w in on_path:
                continue
            steps += 1
            if steps > max_steps:
                raise ConfigError(
                    f"the ring schedule needs a Hamiltonian cycle, and none was found in "
                    f"{_describe(graph, name)} within {max_steps} search steps", _OTHER_SCHEDULE)
            if len(path) + 1 == n:
                if w in closes:
                    return path + [w]
                continue
            path.append(w)
            on_path.add(w)
            choices.append(iter(succ[w]))
            break
        else:  # every extension of path[-1] failed: backtrack
            choices.pop()
            on_path.discard(path.pop())
    raise ConfigError(f"the ring schedule needs a Hamiltonian cycle, and "
                      f"{_describe(graph, name)} has none", _OTHER_SCHEDULE)


def ring(graph: nx.Graph, steps: int, *, start: int | None = None,
         name: str | None = None) -> np.ndarray:
    """Holders of ``steps`` steps going round :func:`hamiltonian_cycle` of ``graph``.

    Parameters
    ----------
    graph : networkx.Graph or networkx.DiGraph
        The public communication graph.
    steps : int
        Number of steps (holders); the token makes ``steps - 1`` hops.
    start : int, optional
        The first holder (default: the smallest node); the cycle is rotated to begin there.
    name : str, optional
        How error messages name the graph.

    Returns
    -------
    numpy.ndarray of int64, shape (steps,)
    """
    graph = as_networkx(graph)  # a run's LightGraph: networkx's algorithms below
    cycle = hamiltonian_cycle(graph, name=name)
    if start is not None:
        if start not in cycle:
            raise ConfigError(f"the ring cannot start at agent {start}: it is not in "
                              f"{_describe(graph, name)}", "start at an agent of the graph")
        i = cycle.index(start)
        cycle = cycle[i:] + cycle[:i]
    return np.resize(np.asarray(cycle, dtype=np.int64), _check_steps(steps))


def _check_steps(steps: int) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ConfigError(f"a schedule needs a whole number of steps >= 0, got {steps!r}")
    return int(steps)


def schedule_stream(seed: int | np.random.SeedSequence, chain: int = 0) -> np.random.Generator:
    """The public generator of chain ``chain``'s schedule (see the module docstring)."""
    entropy = seed.entropy if isinstance(seed, np.random.SeedSequence) else int(seed)
    return np.random.default_rng(
        np.random.SeedSequence(entropy, spawn_key=(SCHEDULE_STREAM_TAG, int(chain))))


def walk(graph: nx.Graph, steps: int, seed: int | np.random.SeedSequence, *,
         chain: int = 0, start: int = 0, name: str | None = None) -> np.ndarray:
    """Holders of a random walk: each step moves to a uniformly drawn out-neighbour.

    Parameters
    ----------
    graph : networkx.Graph or networkx.DiGraph
        The public communication graph; must be (strongly) connected.
    steps : int
        Number of steps (holders); the token makes ``steps - 1`` hops.
    seed : int or numpy.random.SeedSequence
        The run's seed (a SeedSequence's entropy is used).
    chain : int
        Which chain: chains of one seed walk independently.
    start : int
        The first holder.
    name : str, optional
        How error messages name the graph.

    Returns
    -------
    numpy.ndarray of int64, shape (steps,)
    """
    graph = as_networkx(graph)  # a run's LightGraph: networkx's algorithms below
    steps = _check_steps(steps)
    _check_connected(graph, name, "the walk schedule")
    if start not in graph:
        raise ConfigError(f"the walk cannot start at agent {start}: it is not in "
                          f"{_describe(graph, name)}", "start at an agent of the graph")
    holders = np.empty(steps, dtype=np.int64)
    if steps == 0:
        return holders
    succ = _successors(graph)
    # One uniform draw per hop, scaled to the current degree: floor(u * d) is uniform on
    # 0..d-1 (up to 2^-53), and the draws do not depend on the path taken.
    draws = schedule_stream(seed, chain).random(steps - 1)
    current = holders[0] = start
    for t, u in enumerate(draws, start=1):
        nbrs = succ[current]
        if nbrs:  # only a single-agent graph has none: the token stays
            current = nbrs[int(u * len(nbrs))]
        holders[t] = current
    return holders


def _distances_to(graph: nx.Graph, target: int) -> dict[int, int]:
    towards = graph.reverse(copy=False) if graph.is_directed() else graph
    return nx.single_source_shortest_path_length(towards, target)


def _greedy_path(succ: dict[int, list[int]], dist: dict[int, int], source: int,
                 target: int, graph: nx.Graph, name: str | None) -> list[int]:
    if source not in dist:
        raise ConfigError(f"agent {target} cannot be reached from agent {source} in "
                          f"{_describe(graph, name)}",
                          "use a connected topology: the token must be able to reach every agent")
    path = [source]
    while path[-1] != target:
        here = dist[path[-1]]
        # The first (smallest) neighbour one step closer: ties go to the lower rank.
        path.append(next(w for w in succ[path[-1]] if dist.get(w) == here - 1))
    return path


def shortest_path(graph: nx.Graph, source: int, target: int, *,
                  name: str | None = None) -> list[int]:
    """The public shortest path from ``source`` to ``target``, ties to the lower rank.

    At every hop the smallest neighbour that is one step closer to ``target`` is taken,
    which gives the lexicographically smallest of the shortest paths.

    Returns
    -------
    list of int
        ``[source, ..., target]`` (``[source]`` when they are equal).
    """
    graph = as_networkx(graph)  # a run's LightGraph: networkx's algorithms below
    for v in (source, target):
        if v not in graph:
            raise ConfigError(f"agent {v} is not in {_describe(graph, name)}")
    return _greedy_path(_successors(graph), _distances_to(graph, target), source, target,
                        graph, name)


def relay(graph: nx.Graph, owners: Iterable[int], *,
          name: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A schedule that visits ``owners`` in order, relaying along shortest paths.

    Parameters
    ----------
    graph : networkx.Graph or networkx.DiGraph
        The public communication graph.
    owners : iterable of int
        The agent that must hold the token for each iteration (e.g. the owner of each
        sampled record), in order.

    Returns
    -------
    holders : numpy.ndarray of int64
        The schedule: ``owners[0]``, then for each next owner the hops of
        :func:`shortest_path` to it. An owner equal to the previous one adds a step
        without a hop (no message).
    iterations : numpy.ndarray of int64, shape (len(owners),)
        ``iterations[i]``: the step at which ``owners[i]`` does iteration ``i``; every other
        step is a relay (the holder forwards the token and does not iterate).
    """
    graph = as_networkx(graph)  # a run's LightGraph: networkx's algorithms below
    owners = [int(v) for v in owners]
    for v in set(owners):
        if v not in graph:
            raise ConfigError(f"agent {v} is not in {_describe(graph, name)}")
    succ = _successors(graph)
    distances: dict[int, dict[int, int]] = {}
    holders: list[int] = []
    iterations = np.empty(len(owners), dtype=np.int64)
    for i, owner in enumerate(owners):
        if not holders or holders[-1] == owner:
            holders.append(owner)
        else:
            dist = distances.get(owner)
            if dist is None:
                dist = distances[owner] = _distances_to(graph, owner)
            holders.extend(_greedy_path(succ, dist, holders[-1], owner, graph, name)[1:])
        iterations[i] = len(holders) - 1
    return np.asarray(holders, dtype=np.int64), iterations


def spanning_tree(graph: nx.Graph, root: int, *, name: str | None = None) -> dict[int, int]:
    """The public tree of shortest paths from ``root`` to every node, ties to the lower rank.

    The branch from ``root`` to a node ``v`` is ``shortest_path(graph, root, v)``: of all
    shortest paths, the lexicographically smallest. Such paths share their prefixes, so
    together they form a tree.

    Returns
    -------
    dict
        ``parent[v]`` for every node but ``root`` (``parent[v] -> v`` is a graph link).
    """
    graph = as_networkx(graph)  # a run's LightGraph: networkx's algorithms below
    if root not in graph:
        raise ConfigError(f"agent {root} is not in {_describe(graph, name)}")
    _check_connected(graph, name, "the final release along a spanning tree")
    dist = nx.single_source_shortest_path_length(graph, root)
    preds = {v: (graph.predecessors(v) if graph.is_directed() else graph.neighbors(v))
             for v in graph.nodes}
    levels: dict[int, list[int]] = {}
    for v, d in dist.items():
        levels.setdefault(d, []).append(v)
    # order[v]: the rank of v's branch among the branches of its level, compared
    # lexicographically; a branch is its parent's branch followed by v.
    order, parent = {root: 0}, {}
    for d in range(1, len(levels)):
        for v in levels[d]:
            parent[v] = min((u for u in preds[v] if dist[u] == d - 1), key=order.__getitem__)
        ranked = sorted(levels[d], key=lambda v: (order[parent[v]], v))
        order.update((v, i) for i, v in enumerate(ranked))
    return parent


def tree_children(parent: dict[int, int], node: int) -> list[int]:
    """The children of ``node`` in a parent map, ascending."""
    return sorted(v for v, p in parent.items() if p == node)


def hops(holders: Sequence[int]) -> list[tuple[int, int]]:
    """The messages a schedule sends: ``(sender, receiver)`` of every step that moves."""
    return [(int(a), int(b)) for a, b in zip(holders[:-1], holders[1:]) if a != b]

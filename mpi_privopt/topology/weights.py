"""Metropolis mixing weights: the whole matrix, or one agent's row from local degrees only.

Both work from the sorted edge list, so they take a networkx graph or a
:class:`~.light.LightGraph` and need no networkx.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mpi_privopt.errors import TopologyError

from .checks import check_labels, neighbors
from .edgelists import sorted_edges
from .matrices import degrees

#: Mixing-weight rules understood by :func:`metropolis_weights`.
METROPOLIS_VARIANTS: tuple[str, ...] = ("standard", "self-inclusive")


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


def metropolis_weights(G: Any, variant: str = "standard") -> np.ndarray:
    """Metropolis-Hastings mixing matrix of an undirected graph.

    Parameters
    ----------
    G : networkx.Graph or LightGraph
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
    check_labels(G)
    edges = sorted_edges(G)
    if any(u == v for u, v in edges):
        raise TopologyError("Metropolis weights are undefined on a graph with self-loops",
                            "remove the self-loops")
    n = G.number_of_nodes()
    deg = degrees(G)
    W = np.zeros((n, n), dtype=np.float64)
    for u, v in edges:
        W[u, v] = W[v, u] = 1.0 / (1 + offset + max(deg[u], deg[v]))
    for i in range(n):
        W[i, i] = _self_weight(W[i, neighbors(G, i)[1]])
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

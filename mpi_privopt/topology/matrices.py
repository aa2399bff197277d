"""Dense matrices of a graph: adjacency, degrees, Laplacian and signless Laplacian.

Computed from the sorted edge list (:func:`~.edgelists.sorted_edges`), so they take a
networkx graph or a :class:`~.light.LightGraph` alike and need no networkx.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .edgelists import sorted_edges


def adjacency(G: Any) -> np.ndarray:
    """Dense 0/1 adjacency matrix, float64, rows and columns in node order ``0..n-1``.

    For a DiGraph ``A[i, j] = 1`` when there is an arc ``i -> j``. Edge weights are ignored.
    """
    A = np.zeros((G.number_of_nodes(),) * 2, dtype=np.float64)
    pairs = np.array(sorted_edges(G), dtype=np.int64).reshape(-1, 2)
    A[pairs[:, 0], pairs[:, 1]] = 1.0
    if not G.is_directed():
        A[pairs[:, 1], pairs[:, 0]] = 1.0
    return A


def degrees(G: Any) -> np.ndarray:
    """Degree of each node ``0..n-1`` (out-degree for a DiGraph), as an int array.

    As networkx counts them: an undirected self-loop adds 2 to its node's degree.
    """
    pairs = np.array(sorted_edges(G), dtype=np.int64).reshape(-1, 2)
    ends = pairs[:, 0] if G.is_directed() else pairs.ravel()
    return np.bincount(ends, minlength=G.number_of_nodes()).astype(np.int64)


def laplacian(G: Any) -> np.ndarray:
    """Graph Laplacian ``D - A`` (out-degree ``D`` for a DiGraph), dense float64."""
    return np.diag(degrees(G).astype(np.float64)) - adjacency(G)


def signless_laplacian(G: Any) -> np.ndarray:
    """Signless Laplacian ``D + A`` (out-degree ``D`` for a DiGraph), dense float64."""
    return np.diag(degrees(G).astype(np.float64)) + adjacency(G)

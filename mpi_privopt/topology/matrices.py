"""Dense matrices of a graph: adjacency, degrees, Laplacian and signless Laplacian."""
from __future__ import annotations

import networkx as nx
import numpy as np


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

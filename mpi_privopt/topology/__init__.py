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

Layout: :mod:`.builders` (one builder per kind, :func:`build_graph`), :mod:`.edgelists`
(file input and output), :mod:`.checks` (validation, neighbours, hash, summary),
:mod:`.weights` (Metropolis mixing weights) and :mod:`.matrices` (adjacency, Laplacians).
This package re-exports their public names.
"""
from __future__ import annotations

from .builders import TOPOLOGIES, build_graph, geometric_radius, grid_shape
from .checks import describe, graph_hash, neighbors, validate_graph
from .edgelists import read_edge_list, write_edge_list
from .matrices import adjacency, degrees, laplacian, signless_laplacian
from .weights import METROPOLIS_VARIANTS, metropolis_row, metropolis_weights

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

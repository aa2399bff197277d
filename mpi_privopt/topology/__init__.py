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

Light graphs
------------
A run's ranks hold a :class:`LightGraph` (the node count, the direction and the sorted
edge list, :mod:`.light`): neighbours, degrees, mixing weights, matrices and the hash
are computed from the edges, without networkx, and give the same values, bitwise, as
from the networkx graph. The graph is drawn once per host (:mod:`mpi_privopt.graph_cache`).

Layout: :mod:`.builders` (one builder per kind, :func:`build_graph`), :mod:`.light` (the
light graph), :mod:`.edgelists` (file input and output), :mod:`.checks` (validation,
neighbours, hash, summary), :mod:`.weights` (Metropolis mixing weights) and
:mod:`.matrices` (adjacency, Laplacians). This package re-exports their public names;
the builders' (which import networkx) on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

from .checks import describe, graph_hash, neighbors, validate_graph
from .edgelists import read_edge_list, write_edge_list
from .light import LightGraph, as_networkx, light_graph
from .matrices import adjacency, degrees, laplacian, signless_laplacian
from .params import KINDS
from .weights import METROPOLIS_VARIANTS, metropolis_row, metropolis_weights

#: names of :mod:`.builders`, imported on first use: networkx costs a worker rank about
#: 0.07 s of CPU and 20 MB (docs/performance.md, section 8)
_FROM_BUILDERS = ("TOPOLOGIES", "build_graph", "geometric_radius", "grid_shape")


def __getattr__(name: str) -> Any:
    if name in _FROM_BUILDERS:
        return getattr(importlib.import_module(".builders", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "KINDS",
    "LightGraph",
    "light_graph",
    "as_networkx",
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

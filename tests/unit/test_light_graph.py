"""The light graph a run's ranks hold (mpi_privopt/topology/light.py) against networkx's.

Everything a rank computes from its graph (neighbours, degrees, matrices, Metropolis
weights, the hash, the edge-list file) must be the same, bitwise, from the
:class:`LightGraph` as from the networkx graph the builders draw, for every kind, both
directions and several seeds; and the light path must not import networkx.
"""
from __future__ import annotations

import sys

import networkx as nx
import numpy as np
import pytest

from launch_util import run_child
from mpi_privopt import topology
from mpi_privopt.errors import TopologyError
from mpi_privopt.topology import LightGraph, as_networkx, light_graph

#: (kind, params) for 13 agents, and 16 for the grid (4 x 4)
CASES = [("ring", {}), ("path", {}), ("star", {}), ("complete", {}), ("grid", {}),
         ("erdos-renyi", {"degree": 3.0}), ("erdos-renyi", {"degree": 6.0}),
         ("geometric", {"degree": 6.0}), ("small-world", {"neighbors": 4, "rewire": 0.3}),
         ("regular", {"degree": 4})]
SEEDS = [0, 7, 2024]


def _graphs():
    for kind, params in CASES:
        for directed in (False, True):
            for seed in SEEDS if kind in ("erdos-renyi", "geometric", "small-world",
                                          "regular") else SEEDS[:1]:
                n = 16 if kind == "grid" else 13
                yield (f"{kind}-{'di' if directed else 'un'}-{seed}",
                       topology.build_graph(kind, n, seed=seed, directed=directed,
                                            params=params))


GRAPHS = dict(_graphs())


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_the_light_graph_gives_what_networkx_gives_bitwise(name, tmp_path):
    G = GRAPHS[name]
    L = light_graph(G)
    n = G.number_of_nodes()
    assert (L.number_of_nodes(), L.number_of_edges(), L.is_directed()) == (
        n, G.number_of_edges(), G.is_directed())
    assert topology.graph_hash(L) == topology.graph_hash(G)
    for v in range(n):
        assert topology.neighbors(L, v) == topology.neighbors(G, v)
    # against networkx's own computations (not our functions on the nx graph)
    nx_degrees = np.array([(G.out_degree if G.is_directed() else G.degree)[v]
                           for v in range(n)])
    nx_adjacency = nx.to_numpy_array(G, nodelist=range(n), dtype=np.float64, weight=None)
    for graph in (L, G):
        assert np.array_equal(topology.degrees(graph), nx_degrees)
        assert topology.degrees(graph).dtype == np.int64
        assert np.array_equal(topology.adjacency(graph), nx_adjacency)
        assert np.array_equal(topology.laplacian(graph), np.diag(nx_degrees * 1.0) - nx_adjacency)
        assert np.array_equal(topology.signless_laplacian(graph),
                              np.diag(nx_degrees * 1.0) + nx_adjacency)
    if not G.is_directed():
        for variant in topology.METROPOLIS_VARIANTS:
            W = topology.metropolis_weights(L, variant)
            assert np.array_equal(W, topology.metropolis_weights(G, variant))
            deg = dict(G.degree())  # as the agent did before: networkx's degrees
            for v in range(n):
                nbrs = sorted(G.neighbors(v))
                own, row = topology.metropolis_row(v, nbrs, deg, variant)
                light_own, light_row = topology.metropolis_row(v, nbrs, topology.degrees(L),
                                                               variant)
                assert (own, row.tobytes()) == (light_own, light_row.tobytes())
                assert (W[v, v], W[v, nbrs].tobytes()) == (own, row.tobytes())
    topology.write_edge_list(G, tmp_path / "nx.txt")
    topology.write_edge_list(L, tmp_path / "light.txt")
    assert (tmp_path / "nx.txt").read_bytes() == (tmp_path / "light.txt").read_bytes()
    assert topology.describe(L) == topology.describe(G)
    back = as_networkx(L)
    assert sorted(back.nodes) == sorted(G.nodes) and set(back.edges) == set(G.edges)
    assert back.is_directed() == G.is_directed()
    assert light_graph(back) == L and as_networkx(G) is G


def test_a_light_graph_keeps_its_edges_sorted_and_undirected_edges_as_min_max():
    L = LightGraph(4, False, [(3, 1), (0, 2), (1, 0)])
    assert L.edges == ((0, 1), (0, 2), (1, 3))
    assert topology.neighbors(L, 1) == ([0, 3], [0, 3])
    D = LightGraph(3, True, [(2, 0), (0, 1), (1, 2), (0, 2)])
    assert D.edges == ((0, 1), (0, 2), (1, 2), (2, 0))
    assert topology.neighbors(D, 2) == ([0, 1], [0])
    assert 2 in D and np.int64(1) in D and 3 not in D and "a" not in D
    assert LightGraph(4, False, [(1, 0), (2, 3)]) == LightGraph(4, False, [(3, 2), (0, 1)])


def test_a_light_graph_with_a_self_loop_has_no_metropolis_weights():
    with pytest.raises(TopologyError, match="self-loop"):
        topology.metropolis_weights(LightGraph(3, False, [(0, 1), (1, 1), (1, 2)]))


def test_validation_takes_a_light_graph_too():
    topology.validate_graph(LightGraph(3, False, [(0, 1), (1, 2)]), 3)
    with pytest.raises(TopologyError, match="not connected"):
        topology.validate_graph(LightGraph(4, False, [(0, 1), (2, 3)]), 4)


def test_every_kind_named_without_networkx_has_a_builder():
    assert topology.KINDS == tuple(topology.TOPOLOGIES)


def test_the_light_path_imports_no_networkx():
    # what every rank runs: the config, the graph from a verdict, neighbours and weights
    code = (
        "import sys\n"
        "from mpi_privopt.config import load_config\n"
        "from mpi_privopt import topology, agent, graph_cache, prelaunch\n"
        "from mpi_privopt.methods import ALGORITHMS\n"
        "cfg = load_config('default', [])\n"
        "ALGORITHMS[cfg.algorithm.name]\n"
        "L = topology.LightGraph(4, False, [(0, 1), (1, 2), (2, 3), (3, 0)])\n"
        "ins, outs = topology.neighbors(L, 0)\n"
        "topology.metropolis_row(0, ins, topology.degrees(L))\n"
        "topology.metropolis_weights(L); topology.laplacian(L); topology.graph_hash(L)\n"
        "print('networkx' in sys.modules)\n")
    proc = run_child([sys.executable, "-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["erdos-renyi-un-7", "complete-un-0", "erdos-renyi-di-2024"])
def test_walks_and_the_certificate_take_a_light_graph(name):
    from mpi_privopt.network import walks
    from mpi_privopt.methods.gade2017.certificate import exposure, topology_certificate
    G = GRAPHS[name]
    L = light_graph(G)
    assert walks.spanning_tree(L, 3) == walks.spanning_tree(G, 3)
    assert np.array_equal(walks.walk(L, 50, 11), walks.walk(G, 50, 11))
    light_relay, nx_relay = walks.relay(L, [5, 1, 9]), walks.relay(G, [5, 1, 9])
    assert all(np.array_equal(a, b) for a, b in zip(light_relay, nx_relay, strict=True))
    if not G.is_directed():
        assert topology_certificate(L, 1) == topology_certificate(G, 1)
        assert exposure(L, [0, 1, 2]) == exposure(G, [0, 1, 2])

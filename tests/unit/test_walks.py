"""Public seeded token schedules: ring, walk, relay paths and the final-release tree."""
import itertools

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from mpi_privopt import topology
from mpi_privopt.network import walks
from mpi_privopt.errors import ConfigError


def is_hamiltonian_cycle(graph, cycle):
    return (sorted(cycle) == sorted(graph.nodes)
            and all(graph.has_edge(a, b) for a, b in zip(cycle, cycle[1:] + cycle[:1])))


@pytest.mark.parametrize("kind,n", [("ring", 2), ("ring", 7), ("complete", 5), ("grid", 8),
                                    ("small-world", 12), ("regular", 10), ("erdos-renyi", 5)])
def test_ring_is_a_cycle_on_graph_edges_visiting_every_node_once(kind, n):
    graph = topology.build_graph(kind, n, seed=0)
    cycle = walks.hamiltonian_cycle(graph)
    assert cycle[0] == 0
    assert is_hamiltonian_cycle(graph, cycle)
    holders = walks.ring(graph, 3 * n + 1)
    assert list(holders[:n]) == cycle and list(holders[n:2 * n]) == cycle
    assert holders[-1] == cycle[0]


def test_ring_takes_smallest_ranks_first_and_rotates_to_its_start():
    graph = nx.complete_graph(6)
    assert walks.hamiltonian_cycle(graph) == [0, 1, 2, 3, 4, 5]
    assert list(walks.ring(graph, 7, start=3)) == [3, 4, 5, 0, 1, 2, 3]


def test_ring_backtracks_out_of_a_dead_end():
    # smallest first goes 0, 1, 2, 4, 3, and 3 is not linked back to 0: back up to 1
    graph = nx.Graph([(0, 1), (0, 2), (1, 2), (1, 3), (2, 4), (3, 4)])
    assert walks.hamiltonian_cycle(graph) == [0, 1, 3, 4, 2]


def test_directed_ring_follows_arcs():
    graph = topology.build_graph("ring", 5, seed=0, directed=True)
    assert walks.hamiltonian_cycle(graph) == [0, 1, 2, 3, 4]
    reverse = graph.reverse()
    assert walks.hamiltonian_cycle(reverse) == [0, 4, 3, 2, 1]


@pytest.mark.parametrize("kind", ["star", "path"])
def test_ring_refuses_a_graph_with_a_leaf(kind):
    graph = topology.build_graph(kind, 5, seed=0)
    with pytest.raises(ConfigError) as err:
        walks.ring(graph, 10, name=f"topology {kind!r} with 5 agents")
    message = str(err.value)
    assert f"topology {kind!r} with 5 agents" in message
    assert "Hamiltonian cycle" in message and "how to fix" in message and '"walk"' in message


def test_ring_refuses_a_graph_without_a_cycle_after_searching():
    graph = nx.petersen_graph()  # 3-regular, no Hamiltonian cycle
    with pytest.raises(ConfigError, match="has none"):
        walks.hamiltonian_cycle(graph)
    with pytest.raises(ConfigError, match="within 3 search steps"):
        walks.hamiltonian_cycle(graph, max_steps=3)


def test_walk_is_reproducible_along_edges_and_chains_differ():
    graph = topology.build_graph("erdos-renyi", 8, seed=2)
    a = walks.walk(graph, 500, seed=11)
    assert np.array_equal(a, walks.walk(graph, 500, seed=11))
    assert np.array_equal(a, walks.walk(graph, 500, seed=np.random.SeedSequence(11)))
    assert a[0] == 0 and all(graph.has_edge(u, v) for u, v in zip(a[:-1], a[1:]))
    assert not np.array_equal(a, walks.walk(graph, 500, seed=12))
    assert not np.array_equal(a, walks.walk(graph, 500, seed=11, chain=1))
    assert walks.walk(graph, 0, seed=1).shape == (0,)


def test_walk_moves_to_a_uniform_neighbour():
    # A star's hub has 6 neighbours and every leaf returns to it: count where the hub
    # sends the token; a chi-square test at a fixed seed (p is fixed, so the test is exact
    # and would fail for a stream that favoured some neighbours).
    graph = nx.star_graph(6)
    holders = walks.walk(graph, 12001, seed=5)
    after_hub = holders[1::2]
    assert np.all(holders[0::2] == 0)
    counts = np.bincount(after_hub, minlength=7)[1:]
    assert counts.sum() == 6000
    assert stats.chisquare(counts).pvalue > 0.01
    # and a biased stream is caught by the same check
    biased = counts + np.array([300, 0, 0, 0, 0, -300])
    assert stats.chisquare(biased).pvalue < 1e-6


def test_walk_refuses_a_disconnected_graph():
    graph = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ConfigError, match="walk schedule needs a connected graph"):
        walks.walk(graph, 5, seed=0)


def test_shortest_path_ties_to_the_lower_rank():
    # 0 reaches 5 through 1, 2 or 3 (all two hops): the lowest, 1, is taken; from 5 back
    # to 0 likewise through 1.
    graph = nx.Graph([(0, 3), (0, 2), (0, 1), (3, 5), (2, 5), (1, 5), (5, 4)])
    assert walks.shortest_path(graph, 0, 5) == [0, 1, 5]
    assert walks.shortest_path(graph, 4, 0) == [4, 5, 1, 0]
    assert walks.shortest_path(graph, 2, 2) == [2]
    # the lexicographically smallest of all shortest paths, on a random graph
    graph = topology.build_graph("geometric", 30, seed=4)
    for s, t in itertools.product(range(0, 30, 7), range(0, 30, 5)):
        best = min(nx.all_shortest_paths(graph, s, t))
        assert walks.shortest_path(graph, s, t) == best


def test_relay_visits_each_owner_along_shortest_paths():
    graph = topology.build_graph("ring", 6, seed=0)
    holders, iterations = walks.relay(graph, [0, 3, 3, 1, 5])
    assert list(holders) == [0, 1, 2, 3, 3, 2, 1, 0, 5]
    assert list(iterations) == [0, 3, 4, 6, 8]
    assert list(holders[iterations]) == [0, 3, 3, 1, 5]
    assert walks.hops(holders) == [(0, 1), (1, 2), (2, 3), (3, 2), (2, 1), (1, 0), (0, 5)]


def test_spanning_tree_is_the_union_of_the_public_shortest_paths():
    for kind, n, seed in [("geometric", 25, 1), ("erdos-renyi", 12, 3), ("grid", 9, 0)]:
        graph = topology.build_graph(kind, n, seed=seed)
        for root in (0, n - 1):
            parent = walks.spanning_tree(graph, root)
            assert sorted(parent) == sorted(set(range(n)) - {root})
            for v in parent:
                assert graph.has_edge(parent[v], v)
                assert walks.shortest_path(graph, root, v)[-2] == parent[v]
            assert walks.tree_children(parent, root) == sorted(
                v for v in parent if parent[v] == root)

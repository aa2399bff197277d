"""Unit tests for mpi_privopt.topology: builders, validation, weights, matrices, edge lists."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from mpi_privopt.errors import TopologyError
from mpi_privopt.topology import (
    TOPOLOGIES,
    adjacency,
    build_graph,
    degrees,
    describe,
    graph_hash,
    laplacian,
    metropolis_row,
    metropolis_weights,
    neighbors,
    read_edge_list,
    signless_laplacian,
    validate_graph,
    write_edge_list,
)

KINDS = ["ring", "path", "star", "complete", "grid", "erdos-renyi", "geometric", "small-world", "regular"]
RANDOM_KINDS = ["erdos-renyi", "geometric", "small-world", "regular"]
# geometric needs an average degree around ln(n) or more to be connected at all
PARAMS = {"geometric": {"degree": 6.0}}


def test_registry_has_exactly_the_documented_kinds():
    assert set(TOPOLOGIES) == set(KINDS) | {"file"}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 16, 24])
def test_every_kind_builds_valid_undirected_graph(kind, n):
    if kind == "regular" and n <= 3:
        pytest.skip("a 3-regular graph needs at least 4 nodes")
    G = build_graph(kind, n, seed=7, params=PARAMS.get(kind))
    assert type(G) is nx.Graph
    assert sorted(G.nodes) == list(range(n))
    assert nx.number_of_selfloops(G) == 0
    validate_graph(G, n)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "path"])
def test_every_kind_builds_strongly_connected_digraph(kind):
    G = build_graph(kind, 16, seed=3, directed=True, params=PARAMS.get(kind))
    assert type(G) is nx.DiGraph
    assert sorted(G.nodes) == list(range(16))
    assert nx.number_of_selfloops(G) == 0
    validate_graph(G, 16)


def test_directed_path_is_rejected_by_validation():
    G = build_graph("path", 5, seed=0, directed=True)
    assert sorted(G.edges) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    with pytest.raises(TopologyError, match="strongly connected"):
        validate_graph(G, 5)


@pytest.mark.parametrize("kind", KINDS)
def test_same_seed_gives_same_graph(kind):
    a = build_graph(kind, 20, seed=11, params=PARAMS.get(kind))
    b = build_graph(kind, 20, seed=11, params=PARAMS.get(kind))
    assert graph_hash(a) == graph_hash(b)
    assert sorted(a.edges) == sorted(b.edges)


@pytest.mark.parametrize("kind", RANDOM_KINDS)
def test_different_seeds_give_different_graphs(kind):
    hashes = {graph_hash(build_graph(kind, 20, seed=s, params=PARAMS.get(kind))) for s in range(4)}
    assert len(hashes) > 1


def test_builders_do_not_touch_global_random_state():
    import random

    random.seed(123)
    np.random.seed(123)
    a = graph_hash(build_graph("erdos-renyi", 30, seed=5))
    random.seed(999)
    np.random.seed(999)
    b = graph_hash(build_graph("erdos-renyi", 30, seed=5))
    assert a == b


def test_erdos_renyi_sparse_has_exact_edge_count_and_is_connected():
    # How fast it is built is measured by tests/bench/graph_build.py, not asserted here.
    G = build_graph("erdos-renyi", 50, seed=0, params={"degree": 3.0})
    assert G.number_of_edges() == 75
    assert nx.is_connected(G)
    for seed in range(1, 6):
        G = build_graph("erdos-renyi", 50, seed=seed, params={"degree": 3.0})
        assert G.number_of_edges() == 75 and nx.is_connected(G)


def test_erdos_renyi_fallback_when_rejection_is_hopeless():
    # connected G(200, 220) essentially never occurs, so this exercises tree + extra edges
    a = build_graph("erdos-renyi", 200, seed=3, params={"degree": 2.2})
    assert a.number_of_edges() == 220 and nx.is_connected(a)
    assert graph_hash(a) == graph_hash(build_graph("erdos-renyi", 200, seed=3, params={"degree": 2.2}))
    assert graph_hash(a) != graph_hash(build_graph("erdos-renyi", 200, seed=4, params={"degree": 2.2}))


def test_erdos_renyi_directed_has_exact_arc_count():
    G = build_graph("erdos-renyi", 40, seed=2, directed=True, params={"degree": 2.0})
    assert G.number_of_edges() == 80
    assert nx.is_strongly_connected(G)


def test_erdos_renyi_dense_is_capped_at_complete():
    G = build_graph("erdos-renyi", 4, seed=0, params={"degree": 10.0})
    assert G.number_of_edges() == 6


def test_erdos_renyi_too_sparse_to_connect():
    with pytest.raises(TopologyError) as err:
        build_graph("erdos-renyi", 10, seed=0, params={"degree": 1.0})
    assert "how to fix" in str(err.value) and "1.8" in str(err.value)


def test_directed_ring_is_a_cycle_with_distinct_in_and_out_neighbours():
    G = build_graph("ring", 6, seed=0, directed=True)
    assert nx.is_strongly_connected(G)
    assert G.number_of_edges() == 6
    assert neighbors(G, 0) == ([5], [1])
    assert neighbors(G, 3) == ([2], [4])


def test_undirected_neighbours_are_sorted_and_equal():
    G = build_graph("star", 5, seed=0)
    assert neighbors(G, 0) == ([1, 2, 3, 4], [1, 2, 3, 4])
    assert neighbors(G, 3) == ([0], [0])


def test_star_directed_has_arcs_both_ways():
    G = build_graph("star", 4, seed=0, directed=True)
    assert sorted(G.edges) == [(0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0)]


@pytest.mark.parametrize(("n", "rows", "shape"), [(12, 0, (3, 4)), (16, 0, (4, 4)), (7, 0, (1, 7)), (12, 2, (2, 6))])
def test_grid_shape_and_row_major_labels(n, rows, shape):
    G = build_graph("grid", n, seed=0, params={"rows": rows})
    r, c = shape
    assert G.number_of_edges() == r * (c - 1) + c * (r - 1)
    if c > 1:
        assert G.has_edge(0, 1)
    if r > 1:
        assert G.has_edge(0, c)
    assert nx.is_isomorphic(G, nx.grid_2d_graph(r, c))


def test_grid_rows_must_divide_n():
    with pytest.raises(TopologyError, match="divide"):
        build_graph("grid", 12, seed=0, params={"rows": 5})


def test_regular_odd_product_rejected_with_fix():
    with pytest.raises(TopologyError) as err:
        build_graph("regular", 9, seed=0, params={"degree": 3})
    assert "odd" in str(err.value) and "how to fix" in str(err.value)


def test_regular_graph_degrees():
    G = build_graph("regular", 12, seed=4, params={"degree": 4})
    assert set(degrees(G).tolist()) == {4}


def test_geometric_auto_radius_reaches_target_degree_on_average():
    avg = np.mean([describe(build_graph("geometric", 60, seed=s, params={"degree": 8.0}))["average_degree"]
                   for s in range(5)])
    assert 6.0 < avg < 10.0


def test_geometric_impossible_raises_helpful_error():
    with pytest.raises(TopologyError, match="radius"):
        build_graph("geometric", 30, seed=0, params={"radius": 0.01})


def test_unknown_kind_lists_valid_kinds():
    with pytest.raises(TopologyError) as err:
        build_graph("hypercube", 8, seed=0)
    message = str(err.value)
    assert "hypercube" in message
    for kind in TOPOLOGIES:
        assert kind in message


def test_irrelevant_params_are_ignored():
    a = build_graph("ring", 6, seed=0, params={"degree": 5, "rewire": 0.3, "unknown": "x"})
    assert graph_hash(a) == graph_hash(build_graph("ring", 6, seed=0))


# ------------------------------------------------------------------ edge lists


def test_edge_list_round_trip(tmp_path):
    for directed in (False, True):
        G = build_graph("erdos-renyi", 15, seed=9, directed=directed, params={"degree": 4.0})
        path = tmp_path / f"edges_{directed}.txt"
        write_edge_list(G, path)
        assert path.read_text().startswith(f"# mpi_privopt edge list: n=15 directed={directed}")
        H = build_graph("file", 15, seed=0, directed=directed, params={"file": str(path)})
        assert graph_hash(H) == graph_hash(G)


def test_edge_list_accepts_commas_comments_and_weights(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("# a comment\n\n0,1\n1 2 0.5\n  2 ,\t3\n# end\n")
    G = build_graph("file", 4, seed=0, params={"file": str(path)})
    assert sorted(G.edges) == [(0, 1), (1, 2), (2, 3)]


def test_edge_list_node_out_of_range_names_node_and_line(tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("0 1\n1 2\n# comment\n2 9\n")
    with pytest.raises(TopologyError) as err:
        build_graph("file", 8, seed=0, params={"file": str(path)})
    message = str(err.value)
    assert "node 9" in message and "line 4" in message and "how to fix" in message


@pytest.mark.parametrize("line", ["0 x", "0", "0 1 2 3", "0 1 heavy", "1.5 2"])
def test_edge_list_malformed_line_names_line(tmp_path, line):
    path = tmp_path / "edges.txt"
    path.write_text(f"0 1\n{line}\n")
    with pytest.raises(TopologyError, match="line 2"):
        build_graph("file", 4, seed=0, params={"file": str(path)})


def test_edge_list_self_loop_rejected(tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("0 1\n2 2\n")
    with pytest.raises(TopologyError, match="line 2"):
        build_graph("file", 4, seed=0, params={"file": str(path)})


def test_edge_list_missing_file_and_missing_param(tmp_path):
    with pytest.raises(TopologyError, match="does not exist"):
        build_graph("file", 4, seed=0, params={"file": str(tmp_path / "nope.txt")})
    with pytest.raises(TopologyError, match="file"):
        build_graph("file", 4, seed=0, params={})


def test_edge_list_header_for_other_size(tmp_path):
    path = tmp_path / "edges.txt"
    write_edge_list(nx.cycle_graph(8), path)
    with pytest.raises(TopologyError, match="mpiexec -n 8"):
        build_graph("file", 16, seed=0, params={"file": str(path)})


# ------------------------------------------------------------------ validation


def test_validate_wrong_node_count():
    with pytest.raises(TopologyError) as err:
        validate_graph(nx.cycle_graph(6), 8)
    message = str(err.value)
    assert "6 nodes" in message and "8 ranks" in message and "mpiexec -n 6" in message


def test_validate_disconnected_names_components():
    G = nx.disjoint_union(nx.cycle_graph(4), nx.cycle_graph(3))
    with pytest.raises(TopologyError) as err:
        validate_graph(G, 7)
    message = str(err.value)
    assert "2 connected components" in message
    assert "node 0" in message and "node 4" in message
    assert "denser" in message


def test_validate_bad_labels_and_self_loops():
    G = nx.relabel_nodes(nx.cycle_graph(4), {3: 10})
    with pytest.raises(TopologyError, match="0..3"):
        validate_graph(G, 4)
    G = nx.cycle_graph(4)
    G.add_edge(2, 2)
    with pytest.raises(TopologyError, match="self-loop"):
        validate_graph(G, 4)


def test_validate_single_node_is_fine():
    validate_graph(build_graph("complete", 1, seed=0), 1)


# ------------------------------------------------------------------ Metropolis weights


def _check_doubly_stochastic(W):
    np.testing.assert_allclose(W, W.T, atol=0)
    np.testing.assert_allclose(W.sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    assert (W >= 0).all()


def test_metropolis_cycle_reference_values():
    C5 = nx.cycle_graph(5)
    W = metropolis_weights(C5)
    np.testing.assert_allclose(W, 1 / 3 * (np.eye(5) + adjacency(C5)), atol=1e-15)
    W = metropolis_weights(C5, "self-inclusive")
    np.testing.assert_allclose(np.diag(W), 0.5, atol=1e-15)
    np.testing.assert_allclose(W[adjacency(C5) == 1], 0.25, atol=1e-15)
    np.testing.assert_allclose(W[(adjacency(C5) == 0) & ~np.eye(5, dtype=bool)], 0.0)


def test_metropolis_complete_reference_values():
    K5 = nx.complete_graph(5)
    np.testing.assert_allclose(metropolis_weights(K5), np.full((5, 5), 0.2), atol=1e-15)
    W = metropolis_weights(K5, "self-inclusive")
    np.testing.assert_allclose(W, np.where(np.eye(5, dtype=bool), 1 / 3, 1 / 6), atol=1e-15)


@pytest.mark.parametrize("variant", ["standard", "self-inclusive"])
def test_metropolis_row_matches_matrix(variant):
    G = build_graph("erdos-renyi", 30, seed=21, params={"degree": 4.0})
    W = metropolis_weights(G, variant)
    _check_doubly_stochastic(W)
    deg = degrees(G)
    deg_map = {i: int(d) for i, d in enumerate(deg)}
    for i in G.nodes:
        nbrs = neighbors(G, i)[1][::-1]  # any order: weights follow the given order
        for d in (deg, deg_map):
            self_w, w = metropolis_row(i, nbrs, d, variant)
            assert self_w == W[i, i]
            assert np.array_equal(w, W[i, nbrs])


def test_metropolis_rejects_digraph_and_unknown_variant():
    with pytest.raises(TopologyError, match="undirected"):
        metropolis_weights(build_graph("ring", 4, seed=0, directed=True))
    with pytest.raises(TopologyError) as err:
        metropolis_weights(nx.cycle_graph(4), "lazy")
    assert "standard" in str(err.value) and "self-inclusive" in str(err.value)
    with pytest.raises(TopologyError):
        metropolis_row(0, [1], [1, 1], "lazy")


def test_metropolis_single_node():
    np.testing.assert_array_equal(metropolis_weights(build_graph("ring", 1, seed=0)), [[1.0]])
    assert metropolis_row(0, [], [0]) == (1.0, pytest.approx(np.array([])))


# ------------------------------------------------------------------ matrices and summaries


@pytest.mark.parametrize("directed", [False, True])
def test_laplacians(directed):
    G = build_graph("small-world", 12, seed=1, directed=directed)
    L, Q, A = laplacian(G), signless_laplacian(G), adjacency(G)
    D = np.diag(degrees(G).astype(float))
    assert L.dtype == np.float64 and Q.dtype == np.float64
    np.testing.assert_allclose(L.sum(axis=1), 0.0)
    np.testing.assert_allclose(L + Q, 2 * D)
    np.testing.assert_allclose(Q - L, 2 * A)
    if not directed:
        np.testing.assert_allclose(L, nx.laplacian_matrix(G, nodelist=range(12)).toarray())


def test_degrees_are_out_degrees_for_digraph():
    G = nx.DiGraph([(0, 1), (0, 2), (1, 2), (2, 0)])
    assert degrees(G).tolist() == [2, 1, 1]
    assert degrees(G).dtype.kind == "i"


def test_graph_hash_is_canonical():
    a = nx.Graph([(0, 1), (1, 2)])
    b = nx.Graph([(2, 1), (1, 0)])
    assert graph_hash(a) == graph_hash(b)
    assert graph_hash(a) != graph_hash(a.to_directed())
    assert graph_hash(a) != graph_hash(nx.Graph([(0, 1), (0, 2)]))
    c = nx.Graph([(0, 1), (1, 2)])
    c.add_node(3)
    assert graph_hash(a) != graph_hash(c)
    assert len(graph_hash(a)) == 64


def test_describe():
    info = describe(build_graph("star", 5, seed=0))
    assert info == {"nodes": 5, "edges": 4, "directed": False, "min_degree": 1, "max_degree": 4,
                    "average_degree": 1.6, "diameter": 2}
    assert describe(build_graph("path", 4, seed=0, directed=True))["diameter"] is None
    assert describe(build_graph("ring", 4, seed=0, directed=True))["diameter"] == 3


def test_edge_list_refuses_a_repeated_edge(tmp_path):
    path = tmp_path / "twice.txt"
    path.write_text("0 1\n1 2\n2 0\n1,0\n")
    with pytest.raises(TopologyError, match=r"line 4: the edge 1-0 is already on line 1"):
        read_edge_list(path, 3)
    arcs = tmp_path / "arcs.txt"
    arcs.write_text("0 1\n1 0\n1 2\n2 0\n")         # two directions: two arcs, not a repeat
    assert read_edge_list(arcs, 3, directed=True).number_of_edges() == 4


def test_an_edge_list_for_fewer_agents_names_the_nodes_without_edges(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("0 1\n1 2\n2 0\n")                # written for 3 agents, run on 5
    graph = read_edge_list(path, 5)
    with pytest.raises(TopologyError, match=r"node\(s\) 3, 4 have no edges") as info:
        validate_graph(graph, 5)
    assert "only 3 of the job's 5 agents" in str(info.value)
    assert "mpiexec -n 3" in str(info.value) and "connected" not in str(info.value)

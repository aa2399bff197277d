"""The topology certificate of Theorem 2, against hand values and against brute force."""
import itertools

import networkx as nx
import pytest

from mpi_privopt import topology
from mpi_privopt.methods.gade2017.certificate import exposure, topology_certificate


def star(n):
    return nx.star_graph(n - 1)  # centre 0, leaves 1..n-1


# (graph, f, min degree, connectivity, P1 holds, P2 holds)
CASES = [
    (nx.cycle_graph(5), 1, 2, 2, True, True),
    (nx.cycle_graph(5), 2, 2, 2, False, False),
    (nx.complete_graph(5), 1, 4, 4, True, True),
    (nx.complete_graph(5), 2, 4, 4, True, True),
    (nx.complete_graph(5), 4, 4, 4, False, False),
    (nx.path_graph(5), 1, 1, 1, False, False),
    (nx.path_graph(5), 2, 1, 1, False, False),
    (star(5), 1, 1, 1, False, False),
    (star(5), 2, 1, 1, False, False),
    # two K4 sharing one vertex: every degree >= 3 but one cut vertex, so P1 without P2
    (nx.compose(nx.complete_graph(4), nx.relabel_nodes(nx.complete_graph(4), {0: 0, 1: 4, 2: 5, 3: 6})),
     1, 3, 1, True, False),
]


@pytest.mark.parametrize("graph,f,min_degree,kappa,p1,p2", CASES)
def test_certificate_on_named_graphs(graph, f, min_degree, kappa, p1, p2):
    cert = topology_certificate(graph, f)
    assert (cert.min_degree, cert.connectivity) == (min_degree, kappa)
    assert (cert.protects_each_agent, cert.protects_subset_sums) == (p1, p2)
    assert ("holds" if p1 else "FAILS") in cert.statement().split("(P1")[0]


def _brute_force(graph, f):
    """P1/P2 by enumerating every coalition of size <= f (the theorem's conditions)."""
    p1 = p2 = True
    for size in range(1, f + 1):
        for coalition in itertools.combinations(graph.nodes, size):
            seen = exposure(graph, coalition)
            p1 &= not seen.exposed_agents
            p2 &= not seen.separated_groups and not seen.exposed_agents
    return p1, p2


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("f", [1, 2])
def test_certificate_matches_brute_force_on_random_graphs(seed, f):
    graph = topology.build_graph("erdos-renyi", 7, seed=seed, params={"degree": 3.5})
    cert = topology_certificate(graph, f)
    p1, p2 = _brute_force(graph, f)
    assert cert.protects_each_agent == p1
    assert cert.protects_subset_sums == p2


def test_exposure_names_what_a_coalition_learns():
    ring = nx.cycle_graph(5)
    both = exposure(ring, [1, 4])
    assert both.exposed_agents == (0,)
    assert both.separated_groups == ((0,), (2, 3))
    assert exposure(ring, [1]).exposed_agents == ()
    assert exposure(ring, [1]).separated_groups == ()
    assert exposure(star(5), [0]).exposed_agents == (1, 2, 3, 4)
    assert exposure(nx.complete_graph(5), [1, 2]).exposed_agents == ()


def test_certificate_refuses_bad_input():
    with pytest.raises(ValueError):
        topology_certificate(nx.cycle_graph(4), -1)
    with pytest.raises(ValueError):
        topology_certificate(nx.DiGraph([(0, 1), (1, 0)]), 1)


def test_attack_report_separates_the_graph_certificate_from_the_target():
    from mpi_privopt.methods.gade2017.attacks.runner import certificate_entries

    # a 5-cycle with a pendant agent 5 on agent 0: min degree 1, so (P1) fails for f = 1
    graph = nx.cycle_graph(5)
    graph.add_edge(0, 5)
    elsewhere = certificate_entries(graph, [1], 3)
    assert not elsewhere["certificate_protects_each_agent"]  # a property of the whole graph
    assert not elsewhere["target_exposed"]  # agent 3 keeps neighbours 2 and 4 outside
    assert "FAILS" in elsewhere["certificate"]
    pendant = certificate_entries(graph, [0], 5)
    assert not pendant["certificate_protects_each_agent"] and pendant["target_exposed"]
    k5 = certificate_entries(nx.complete_graph(5), [1], 0)
    assert k5["certificate_protects_each_agent"] and not k5["target_exposed"]

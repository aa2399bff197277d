"""Gade & Vaidya's P2 from the attacker's side, in one process: on the 5-cycle, a path, a
star and K5, for every coalition of one or two agents, the coalition's estimate of a group's
objective sum is exact exactly when every link leaving the group ends in the coalition, and
otherwise a second instance with another sum looks the same to it."""
from itertools import combinations

import networkx as nx
import numpy as np
import pytest

from mpi_privopt.methods.gade2017.attacks.subset_sum import (RECOVERY_TOLERANCE, adversary_view,
                                            boundary_links, candidate_groups,
                                            group_sum_estimate, indistinguishable_instance,
                                            obfuscated)
from mpi_privopt.methods.gade2017.certificate import exposure

GRAPHS = {"cycle": nx.cycle_graph(5), "path": nx.path_graph(5), "star": nx.star_graph(4),
          "complete": nx.complete_graph(5)}
COALITIONS = [c for size in (1, 2) for c in combinations(range(5), size)]
M = 6  # coefficients per function


def instance(graph, seed):
    rng = np.random.default_rng(seed)
    objectives = rng.normal(size=(graph.number_of_nodes(), M))
    shares = {(u, v): rng.normal(size=M) for a, b in graph.edges for u, v in ((a, b), (b, a))}
    return objectives, shares


def separated(graph, coalition, group):
    return all(j in coalition for _, j in boundary_links(graph, group))


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_a_group_sum_is_recovered_exactly_when_the_coalition_separates_it(name):
    graph = GRAPHS[name]
    objectives, shares = instance(graph, 1)
    view = adversary_view(objectives, shares, [])
    # sum_i f-hat_i = sum_i f_i (eq. 7): the shares cancel over the whole graph
    np.testing.assert_allclose(view.obfuscated.sum(axis=0), objectives.sum(axis=0), atol=1e-12)
    outcomes = {True: 0, False: 0}
    for coalition in COALITIONS:
        view = adversary_view(objectives, shares, coalition)
        groups = candidate_groups(graph, coalition)
        assert len(groups) == 2 ** (5 - len(coalition)) - 2  # every strict group
        recovered = []
        for group in groups:
            estimate = group_sum_estimate(view, graph, group)
            truth = objectives[list(group)].sum(axis=0)
            error = np.linalg.norm(estimate.estimate - truth) / np.linalg.norm(truth)
            assert estimate.complete == separated(graph, coalition, group)
            if estimate.complete:
                assert error < RECOVERY_TOLERANCE
                recovered.append(group)
                assert indistinguishable_instance(objectives, shares, graph, coalition,
                                                  group, np.ones(M)) is None
            else:
                assert error > 1e-3  # the unseen shares are missing from the estimate
                # ... and no attack can do better: another instance, the same view
                other_f, other_s = indistinguishable_instance(objectives, shares, graph,
                                                              coalition, group, np.ones(M))
                assert adversary_view(other_f, other_s, coalition).same_as(view)
                assert not np.allclose(other_f[list(group)].sum(axis=0), truth)
        separated_groups = exposure(graph, coalition).separated_groups
        assert bool(recovered) == bool(separated_groups)
        for group in separated_groups:
            assert tuple(group) in recovered
        outcomes[bool(recovered)] += 1
        # the whole rest is always learnable (f - sum_a f_a): why P2 needs strict subsets
        rest = [v for v in graph.nodes if v not in coalition]
        assert group_sum_estimate(view, graph, rest).complete
    if name == "complete":
        assert outcomes == {True: 0, False: len(COALITIONS)}  # K5: kappa = 4 > 2
    else:
        assert outcomes[True] > 0 and outcomes[False] > 0


def test_obfuscation_moves_each_share_from_sender_to_receiver():
    objectives = np.zeros((2, 1))
    hat = obfuscated(objectives, {(0, 1): np.array([2.0])})
    assert hat.tolist() == [[-2.0], [2.0]]


def test_a_group_overlapping_the_coalition_is_refused():
    graph = GRAPHS["cycle"]
    objectives, shares = instance(graph, 2)
    with pytest.raises(ValueError, match="overlaps"):
        group_sum_estimate(adversary_view(objectives, shares, [0]), graph, [0, 1])

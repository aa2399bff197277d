"""The subset-sum attack on a real Function Sharing run (shares recorded as they cross the
coalition's links): on the cycle, a path, a star and the complete graph, a coalition of one
or two agents recovers a group's objective sum exactly when it separates the group."""
from itertools import combinations

import pytest

from mpi_privopt.methods.gade2017.attacks.subset_sum import boundary_links
from mpi_privopt.methods.gade2017.attacks import run_subset_sum_attack
from mpi_privopt.config import load_config
from mpi_privopt.engine import build_graph
from mpi_privopt.methods.gade2017.certificate import exposure

BASE = ["algorithm.name=fs", "algorithm.sigma=0.5", "algorithm.degree=2",
        "problem.name=polynomial", "problem.preset=random", "problem.features=2",
        "topology.weights=self-inclusive", "algorithm.box=5.0", "run.iterations=1",
        "run.eval_every=1"]


def coalitions(size):
    if size == 5:  # every coalition of one or two agents
        return [list(c) for k in (1, 2) for c in combinations(range(5), k)]
    return [[0], [1], [0, 2], [1, size - 1]]


@pytest.mark.mpi(min_size=4)
@pytest.mark.parametrize("kind", ["ring", "path", "star", "complete"])
def test_the_coalition_recovers_exactly_the_groups_it_separates(comm, shared_dir, kind):
    cfg = load_config(None, BASE + [f"topology.kind={kind}"])
    graph = build_graph(cfg, comm.size)
    for n, coalition in enumerate(coalitions(comm.size)):
        report = comm.bcast(run_subset_sum_attack(cfg, coalition,
                                                  out=f"{shared_dir}/{kind}-{n}", comm=comm))
        separated = exposure(graph, coalition).separated_groups
        assert report["attack_succeeds"] == bool(separated), (kind, coalition)
        for group in report["groups"]:
            closed = all(j in coalition for _, j in boundary_links(graph, group["group"]))
            assert group["recovered"] == closed, (kind, coalition, group)
            if not closed:
                assert group["relative_error"] > 1e-3
                assert group["same_view_other_sum"]
        if kind == "complete":
            assert not report["attack_succeeds"]

"""The curious-coalition attack under mpiexec: exact when the target is exposed, not otherwise.

Target: agent 0. Problem: the random convex polynomial preset (D = 2), X = [-5, 5]^2.
"""
import pytest

from mpi_privopt.methods.gade2017.attacks import SUCCESS_THRESHOLD, run_attack
from mpi_privopt.config import load_config

BASE = ["problem.name=polynomial", "problem.preset=random", "problem.features=2",
        "topology.weights=self-inclusive", "algorithm.box=5.0", "algorithm.init=uniform",
        "run.iterations=150", "run.eval_every=150"]
METHODS = {
    "dgd": ["algorithm.name=dgd", "algorithm.gradient_at=fused", "algorithm.step=1.0",
            "algorithm.schedule=inverse"],
    "rss-nb": ["algorithm.name=rss-nb", "algorithm.delta=5.0"],
    "rss-lb": ["algorithm.name=rss-lb", "algorithm.delta=5.0"],
    "fs": ["algorithm.name=fs", "algorithm.sigma=0.5"],
}


def attack(comm, shared_dir, name, method, kind, coalition):
    cfg = load_config(None, BASE + METHODS[method] + [f"topology.kind={kind}"])
    report = run_attack(cfg, coalition, 0, out=f"{shared_dir}/{name}", comm=comm)
    return comm.bcast(report)


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_one_curious_neighbour_on_the_complete_graph(comm, shared_dir, method):
    # f = 1 on K_n (n >= 3): the certificate holds; the neighbour sees every state
    report = attack(comm, shared_dir, f"kn-{method}", method, "complete", [1])
    assert report["certificate_protects_each_agent"] and not report["target_exposed"]
    assert report["rounds_scored"] > 100
    if method == "dgd":
        # clean states on every link: the target's gradients come out exactly
        assert report["gradient_relative_error"] < SUCCESS_THRESHOLD
        assert report["coefficient_relative_error"] < 1e-6
    else:
        # what the target's other links carry stays hidden: no exact recovery
        assert report["gradient_relative_error"] > 1e-2
        assert report["coefficient_relative_error"] > 1e-3
        assert not report["exact"]


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_all_neighbours_colluding_recover_the_target_exactly(comm, shared_dir, method):
    # the ring's two neighbours of agent 0: min degree 2 < f + 1 = 3, the target is exposed
    coalition = sorted({1, comm.size - 1})
    report = attack(comm, shared_dir, f"ring-{method}", method, "ring", coalition)
    assert report["target_exposed"] and not report["certificate_protects_each_agent"]
    assert report["gradient_relative_error"] < SUCCESS_THRESHOLD
    assert report["coefficient_relative_error"] < 1e-6
    assert report["exact"]

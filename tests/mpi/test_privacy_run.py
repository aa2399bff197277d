"""Privacy accounting of real runs under mpiexec: privacy.json against hand computation."""
import dataclasses
import json
import math

import numpy as np
import pytest

from mpi_privopt import topology
from mpi_privopt.methods.contract import ALGORITHMS, Algorithm, register
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.privacy.calibration import calibrate_phi1, geometric_zcdp_schedule
from mpi_privopt.privacy.conversions import (
    gaussian_exact_eps, zcdp_to_eps_standard, zcdp_to_eps_tight)
from mpi_privopt.privacy.mechanisms import GaussianMechanism
from mpi_privopt.privacy.report import coalition_epsilon

SENSITIVITY = 0.5


def broadcast_sigma(n):
    return 1.0 + n % 3


SCATTER_SIGMA = 2.0


class LedgerProbe(Algorithm):
    """Test-only: each round broadcasts one Gaussian release; even rounds also scatter one
    release per link. Nothing is learned; the point is a known privacy cost. Registered only
    while the test that runs it does (:func:`ledger_probe`), so ``ALGORITHMS`` holds the
    package's methods for every other test (the contract test runs each of them)."""

    name = "test-ledger-probe"
    summary = "test only"
    private = True

    @dataclasses.dataclass
    class Params:
        pass

    def __init__(self, agent, params):
        super().__init__(agent, params)
        self.mechanism = GaussianMechanism(agent.noise)
        self.value = np.full(3, float(agent.id))

    def step(self, n):
        net = self.agent.net
        net.broadcast(self.mechanism.release(self.value, SENSITIVITY, broadcast_sigma(n)), "w")
        if n % 2 == 0:
            net.scatter([self.mechanism.release(self.value, SENSITIVITY, SCATTER_SIGMA)
                         for _ in net.out_neighbors], "s")

    @property
    def estimate(self):
        return np.zeros(self.agent.problem.n_features)


@pytest.fixture
def ledger_probe():
    register(LedgerProbe)
    yield LedgerProbe.name
    del ALGORITHMS[LedgerProbe.name]


def run_case(comm, shared_dir, name, overrides):
    cfg = load_config(None, overrides)
    result = comm.bcast(run(cfg, out=f"{shared_dir}/{name}", comm=comm, stream=None))
    report = json.loads(open(f"{shared_dir}/{name}/privacy.json").read()) if comm.rank == 0 else None
    return cfg, result, comm.bcast(report)


@pytest.mark.mpi(min_size=3)
def test_privacy_json_equals_the_hand_computed_composition(comm, shared_dir,
                                                         ledger_probe):
    T, delta = 9, 1e-6
    cfg, _, report = run_case(comm, shared_dir, "probe",
                              [f"algorithm.name={ledger_probe}", f"run.iterations={T}",
                               "topology.kind=erdos-renyi", f"privacy.delta={delta}"])
    graph = topology.build_graph("erdos-renyi", comm.size, seed=cfg.run.seed,
                                 params={"degree": cfg.topology.degree})
    rho_broadcast = sum(SENSITIVITY ** 2 / (2 * broadcast_sigma(n) ** 2) for n in range(1, T + 1))
    rho_scatter = (T // 2) * SENSITIVITY ** 2 / (2 * SCATTER_SIGMA ** 2)
    adjacency = topology.adjacency(graph)
    for k in range(comm.size):
        for j in range(comm.size):
            rho = report["links"]["rho"][k][j]
            if adjacency[k, j]:
                assert rho == pytest.approx(rho_broadcast + rho_scatter, rel=1e-12)
                assert report["links"]["epsilon_tight"][k][j] == pytest.approx(
                    zcdp_to_eps_tight(rho_broadcast + rho_scatter, delta), rel=1e-12)
                # Every release is Gaussian: the headline is the exact composition.
                mu = math.sqrt(2 * (rho_broadcast + rho_scatter))
                assert report["links"]["epsilon"][k][j] == pytest.approx(
                    gaussian_exact_eps(mu, delta), rel=1e-9)
                assert report["links"]["conversion"][k][j] == "exact"
                assert report["links"]["releases"][k][j] == T + T // 2
            else:
                assert rho is None and report["links"]["epsilon"][k][j] is None
        # All observers together: each broadcast once, every scatter release.
        degree = int(adjacency[k].sum())
        assert report["agents"][k]["all_observers_rho"] == pytest.approx(
            rho_broadcast + degree * rho_scatter, rel=1e-12)
        # A coalition of two neighbours: the broadcasts once, both links' scatters.
        neighbours = [int(j) for j in np.flatnonzero(adjacency[k])]
        if len(neighbours) >= 2:
            pair = coalition_epsilon(report, k, neighbours[:2])
            assert pair["tight"] == pytest.approx(
                zcdp_to_eps_tight(rho_broadcast + 2 * rho_scatter, delta), rel=1e-12)
    assert report["noise"] == "fast"


ZCDP = ["algorithm.name=zcdp-nfl", "problem.clip=3.0", "problem.name=elastic-net"]


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("tau,conversion", [(0.99, "standard"), (1.0, "tight")])
def test_zcdp_nfl_ledger_equals_the_corollary_on_every_link(comm, shared_dir, tau, conversion):
    T, eps, delta = 30, 5.0, 1e-5
    cfg, result, report = run_case(
        comm, shared_dir, f"zcdp-{tau}",
        ZCDP + [f"run.iterations={T}", f"privacy.epsilon={eps}", f"privacy.delta={delta}",
                f"algorithm.tau={tau}", f"algorithm.conversion={conversion}"])
    phi1 = calibrate_phi1(eps, delta, T, tau, conversion)
    Phi = math.fsum(geometric_zcdp_schedule(phi1, tau, T))
    convert = zcdp_to_eps_standard if conversion == "standard" else zcdp_to_eps_tight
    assert convert(Phi, delta) == pytest.approx(eps, rel=1e-9)
    for k, row in enumerate(report["links"]["rho"]):
        for j, rho in enumerate(row):
            if rho is not None:
                assert rho == pytest.approx(Phi, rel=1e-10)
    # A broadcast reaches every neighbour: all observers together learn no more than one.
    for agent in report["agents"]:
        assert agent["all_observers_rho"] == pytest.approx(Phi, rel=1e-10)
    assert result.summary["worst_link_epsilon"] <= eps * (1 + 1e-9)


@pytest.mark.mpi(min_size=2)
def test_noise_free_zcdp_nfl_reports_unbounded_loss(comm, shared_dir):
    _, result, report = run_case(comm, shared_dir, "noiseless",
                                 ZCDP + ["algorithm.noiseless=true", "run.iterations=5"])
    assert math.isinf(result.summary["worst_link_epsilon"])
    assert all(math.isinf(e) for row in report["links"]["epsilon"] for e in row if e is not None)

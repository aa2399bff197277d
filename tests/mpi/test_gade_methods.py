"""RSS-NB, RSS-LB and FS under mpiexec: balance, per-link payloads, shares, convergence.

Problem: the random convex polynomial preset (D = 2) with the paper's self-inclusive
Metropolis weights, X = [-5, 5]^2, x_1 uniform in X and alpha_k = 1/k.
"""
import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt import topology
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.methods.gade2017.certificate import topology_certificate

POLY = ["problem.name=polynomial", "problem.preset=random", "problem.features=2",
        "topology.weights=self-inclusive", "algorithm.box=5.0", "algorithm.init=uniform"]
#: the documented tolerance: after 400 steps of alpha_k = 1/k on K_n, every agent is within
#: 0.03 of the optimum (measured 0.010-0.017 for K = 2..8; the remaining gap is DGD's
#: O(alpha_k) consensus bias, which the perturbations barely change at Delta = 1)
TOLERANCE, ITERATIONS = 0.03, 400


def run_quiet(comm, shared_dir, name, overrides, on_setup=None):
    cfg = load_config(None, overrides)
    result = run(cfg, out=f"{shared_dir}/{name}", comm=comm, stream=None, on_setup=on_setup)
    return cfg, comm.bcast(result)


def record_after_each_step(holder, attribute):
    """An on_setup that stores ``algorithm.<attribute>`` after every step in holder["trace"]."""
    def on_setup(agent, algorithm):
        holder.update(agent=agent, algorithm=algorithm, trace=[])
        original = algorithm.step

        def step(n):
            original(n)
            holder["trace"].append(np.array(getattr(algorithm, attribute), copy=True))

        algorithm.step = step
    return on_setup


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("noise", ["ball", "biased"])
def test_rss_nb_perturbations_cancel_over_the_network_every_iteration(comm, shared_dir, noise):
    held = {}
    delta = 50.0
    cfg, _ = run_quiet(comm, shared_dir, f"nb-{noise}",
                       POLY + ["algorithm.name=rss-nb", f"algorithm.delta={delta}",
                               f"algorithm.noise={noise}", "topology.kind=ring",
                               "run.iterations=60", "run.eval_every=60"],
                       record_after_each_step(held, "perturbation"))
    d = np.array(held["trace"])  # d_k^j, k = 1..60
    network_sum = comm.allreduce(d, op=MPI.SUM)
    assert np.abs(network_sum).max() <= 1e-12
    np.testing.assert_array_equal(d[0], 0.0)  # s_1 = 0: the first iteration is clean
    # ||d_k^j|| <= 2 deg_j Delta / (2n) <= Delta, and the perturbations are not trivial
    bound = 2 * held["agent"].degree * delta / (2 * comm.size)
    assert np.linalg.norm(d, axis=1).max() <= bound * (1 + 1e-12)
    assert comm.allreduce(np.abs(d[1:]).max(), op=MPI.MAX) > 1.0


@pytest.mark.mpi(min_size=3)
def test_rss_lb_noise_is_locally_balanced_and_cancels_when_fused(comm, shared_dir):
    held = {}
    delta = 5.0
    cfg, _ = run_quiet(comm, shared_dir, "lb-balance",
                       POLY + ["algorithm.name=rss-lb", f"algorithm.delta={delta}",
                               "topology.kind=erdos-renyi", "run.iterations=40",
                               "run.eval_every=40"],
                       record_after_each_step(held, "link_noise"))
    graph = held["agent"].graph
    B = topology.metropolis_weights(graph, "self-inclusive")
    mine = (comm.rank, held["agent"].net.out_neighbors, np.array(held["trace"]))
    everyone = comm.allgather(mine)
    for k in range(40):
        fused = np.zeros((comm.size, 2))  # e_k^j = sum_i B[j,i] d_k^{i,j}
        for j, receivers, noise in everyone:
            d = noise[k]
            np.testing.assert_allclose(B[receivers, j] @ d, 0.0, atol=1e-12)  # eq. 4
            assert np.linalg.norm(d, axis=1).max() <= delta * (1 + 1e-12)
            for i, d_ji in zip(receivers, d):
                fused[i] += B[i, j] * d_ji
        assert np.abs(fused.sum(axis=0)).max() <= 1e-12  # eq. 22
    largest = max(np.abs(noise).max() for _, receivers, noise in everyone if len(receivers) > 1)
    assert largest > 0.1


@pytest.mark.mpi(min_size=3)
def test_rss_lb_sends_a_different_state_on_each_link(comm, shared_dir):
    seen = {}

    class Listener:
        def on_receive(self, data, sources, phase, round):
            for row, source in zip(data, sources):
                seen[(phase, round, source)] = row.copy()

    def on_setup(agent, algorithm):
        agent.net.receive_listeners.append(Listener())

    cfg, result = run_quiet(comm, shared_dir, "lb-links",
                            POLY + ["algorithm.name=rss-lb", "algorithm.delta=5.0",
                                    "topology.kind=ring", "run.iterations=20",
                                    "run.eval_every=20"], on_setup)
    everything = comm.allgather(seen)
    left, right = everything[1], everything[comm.size - 1]  # agent 0's two neighbours
    for k in range(1, 21):
        a, b = left[("w-link", k, 0)], right[("w-link", k, 0)]
        assert np.linalg.norm(a - b) > 1e-9, k
    # the meter shows per-link (scatter) traffic in phase "w-link", and nothing else
    phases = result.traffic["phases"]
    assert set(phases) == {"w-link"}
    adjacency = topology.adjacency(topology.build_graph("ring", comm.size, seed=0)) != 0
    np.testing.assert_array_equal(np.array(phases["w-link"]["bytes"]), adjacency * 2 * 8 * 20)


@pytest.mark.mpi(min_size=2)
def test_rss_nb_traffic_is_a_broadcast_state_plus_scattered_shares(comm, shared_dir):
    _, result = run_quiet(comm, shared_dir, "nb-traffic",
                          POLY + ["algorithm.name=rss-nb", "topology.kind=ring",
                                  "run.iterations=15", "run.eval_every=15"])
    phases = result.traffic["phases"]
    assert set(phases) == {"w", "s"}
    adjacency = topology.adjacency(topology.build_graph("ring", comm.size, seed=0)) != 0
    for phase in ("w", "s"):
        np.testing.assert_array_equal(np.array(phases[phase]["bytes"]), adjacency * 2 * 8 * 15)


@pytest.mark.mpi(min_size=2)
def test_without_noise_every_method_is_the_papers_dgd_bit_for_bit(comm, shared_dir):
    common = POLY + ["algorithm.step=1.0", "algorithm.schedule=inverse",
                     "topology.kind=erdos-renyi", "run.iterations=50", "run.eval_every=10"]
    _, dgd = run_quiet(comm, shared_dir, "dgd0", common + ["algorithm.name=dgd",
                                                           "algorithm.gradient_at=fused"])
    runs = {
        "rss-nb": ["algorithm.name=rss-nb", "algorithm.delta=0.0"],
        "rss-lb": ["algorithm.name=rss-lb", "algorithm.delta=0.0"],
        "fs": ["algorithm.name=fs", "algorithm.sigma=0.0"],
    }
    for name, extra in runs.items():
        _, other = run_quiet(comm, shared_dir, f"{name}0", common + extra)
        np.testing.assert_array_equal(other.models, dgd.models, err_msg=name)
        assert [m.error for m in other.metrics] == [m.error for m in dgd.metrics], name
    # and with noise they differ (the comparison can fail)
    _, noisy = run_quiet(comm, shared_dir, "nb1", common + ["algorithm.name=rss-nb",
                                                            "algorithm.delta=1.0"])
    assert not np.array_equal(noisy.models, dgd.models)


@pytest.mark.mpi(min_size=2)
def test_fs_shares_sum_to_zero_and_the_shared_functions_sum_to_the_originals(comm, shared_dir):
    held = {}

    def on_setup(agent, algorithm):
        held.update(agent=agent, algorithm=algorithm)

    _, result = run_quiet(comm, shared_dir, "fs-shares",
                          POLY + ["algorithm.name=fs", "algorithm.sigma=1.0", "algorithm.degree=4",
                                  "topology.kind=erdos-renyi", "run.iterations=5",
                                  "run.eval_every=5"], on_setup)
    fs, agent = held["algorithm"], held["agent"]
    p = fs.noise_function
    # eq. 6 coefficient-wise: sum_j p_j = 0 as a polynomial
    total = comm.allreduce(p.coefficients, op=MPI.SUM)
    assert np.abs(total).max() <= 1e-12
    assert comm.allreduce(np.abs(p.coefficients).max(), op=MPI.MAX) > 0.5
    # every share arrived as sent: what i got from j is what j sent to i
    sent = {(agent.id, i): s for i, s in zip(agent.net.out_neighbors, fs.shares_sent)}
    got = {(j, agent.id): s for j, s in zip(agent.net.in_neighbors, fs.shares_received)}
    all_sent = {k: v for part in comm.allgather(sent) for k, v in part.items()}
    for link, share in got.items():
        np.testing.assert_array_equal(share, all_sent[link])
    # eq. 7 pointwise: sum_j f-hat_j(x) = sum_j f_j(x), while single f-hat_j != f_j
    points = np.random.default_rng(9).uniform(-3, 3, (6, 2))
    hat = np.array([fs.objective.value(x) for x in points])
    true = np.array([agent.problem.value(x) for x in points])
    np.testing.assert_allclose(comm.allreduce(hat, op=MPI.SUM), comm.allreduce(true, op=MPI.SUM),
                               rtol=1e-12, atol=1e-9)
    assert np.abs(hat - true).max() > 1e-3
    # the setup exchange is metered once per link, in its own phase
    phases = result.traffic["phases"]
    adjacency = np.array(result.traffic["total"]["bytes"]) > 0
    n_coefficients = len(p.coefficients)  # all monomials of degree 1..4 in 2 variables: 14
    assert n_coefficients == 14
    np.testing.assert_array_equal(np.array(phases["fs-setup"]["bytes"]),
                                  adjacency * n_coefficients * 8)
    np.testing.assert_array_equal(np.array(phases["x"]["bytes"]), adjacency * 2 * 8 * 5)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("method", [["algorithm.name=rss-nb", "algorithm.delta=1.0"],
                                    ["algorithm.name=rss-lb", "algorithm.delta=1.0"],
                                    ["algorithm.name=rss-nb", "algorithm.delta=1.0",
                                     "algorithm.noise=biased"],
                                    ["algorithm.name=fs", "algorithm.sigma=0.3"]],
                         ids=["rss-nb", "rss-lb", "rss-nb-biased", "fs"])
def test_every_agent_reaches_the_optimum_of_the_sum(comm, shared_dir, method):
    _, result = run_quiet(comm, shared_dir, "conv-" + method[0].split("=")[1],
                          POLY + method + ["topology.kind=complete",
                                           f"run.iterations={ITERATIONS}", "run.eval_every=40"])
    distances = np.linalg.norm(result.models - result.w_c, axis=1)
    assert distances.max() <= TOLERANCE, distances
    errors = {m.iteration: m.error for m in result.metrics}
    # the squared error keeps falling (about like 1/k^2): it is not a noise floor
    assert errors[ITERATIONS] < errors[40] / 20 < errors[0]


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("kind,f", [("ring", 1), ("ring", 2), ("complete", 2)])
def test_the_summary_reports_the_topology_certificate(comm, shared_dir, kind, f):
    _, result = run_quiet(comm, shared_dir, f"cert-{kind}-{f}",
                          POLY + ["algorithm.name=rss-lb", f"algorithm.adversaries={f}",
                                  f"topology.kind={kind}", "run.iterations=2", "run.eval_every=2"])
    report = result.summary["algorithm_report"]
    graph = topology.build_graph(kind, comm.size, seed=0)
    cert = topology_certificate(graph, f)
    assert report["certificate_f"] == f
    assert report["min_degree"] == cert.min_degree
    assert report["vertex_connectivity"] == cert.connectivity
    assert report["protects_each_agent"] == (cert.min_degree >= f + 1)
    assert report["protects_subset_sums"] == (cert.connectivity >= f + 1)
    assert "not differential privacy" in report["privacy kind"]
    assert result.summary["worst_link_epsilon"] == float("inf")

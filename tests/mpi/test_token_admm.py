"""token-admm under mpiexec (4 ranks): iterates, traffic and the observer matrix.

* the final token of every agent equals, to 1e-12, a single-process computation of the same
  equations (tests/token_reference.py: the kernel, the holders' per-chain noise streams,
  the public schedule stream), for ring, walk and sample, with sigma = 0 and with noise,
  and with two chains at once;
* traffic: one token message per hop of the realised path, plus one final-release message
  per spanning-tree link, and nothing else with run.evaluate = "none";
* the observer matrix of a 4-rank ring with 2 records per rank against a hand computation;
* sigma = 0 is reported as unbounded privacy, never zero.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt import topology
from mpi_privopt.network import walks
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.privacy.amplification import (AmplificationConstants, amplification_ratio,
                                               local_rho)
from mpi_privopt.privacy.events import AmplifiedGaussianEvent

sys.path.insert(0, str(Path(__file__).parents[1]))
from token_reference import records_of, run_chain, schedule  # noqa: E402

N_FEATURES, NOISE, RADIUS = 6, 0.01, 0.5
SETTINGS = dict(eta=1.0, beta=0.9, clip=4.0, x0=3.0)


def base(kind: str, topo: str, T: int, sigma: float, n_records: int, extra=()) -> list[str]:
    return [f"problem.name=singular", f"problem.samples={n_records}",
            f"problem.features={N_FEATURES}", f"problem.noise={NOISE}",
            f"problem.radius={RADIUS}", f"topology.kind={topo}", "topology.degree=3",
            "algorithm.name=token-admm", f"algorithm.schedule={kind}",
            f"algorithm.eta={SETTINGS['eta']}", f"algorithm.beta={SETTINGS['beta']}",
            f"algorithm.clip={SETTINGS['clip']}", f"algorithm.sigma={sigma}",
            f"algorithm.feature_bound={RADIUS}", f"run.iterations={T}", f"run.eval_every={T}",
            "run.evaluate=none", "run.seed=3", *extra]


class EventRecorder:
    """Every amplified (or non-private) event sent, with its receiver."""

    def __init__(self) -> None:
        self.events: list[tuple[int, int, int, int | None, str]] = []

    def on_release(self, release, receivers, phase, round):
        for event in release.events:
            if event.record is None:
                continue
            k = event.iterations_after if isinstance(event, AmplifiedGaussianEvent) else None
            for q in receivers:
                self.events.append((int(q), int(event.owner), int(event.record), k,
                                    type(event).__name__))


@pytest.fixture(scope="module")
def root():
    comm = MPI.COMM_WORLD
    path = comm.bcast(tempfile.mkdtemp(prefix="token-admm-") if comm.rank == 0 else None)
    yield Path(path)
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


def run_case(root: Path, name: str, overrides: list[str]):
    comm = MPI.COMM_WORLD
    recorder = EventRecorder()
    cfg = load_config(None, overrides)
    run(cfg, out=str(root / name), comm=comm, stream=None,
        on_setup=lambda agent, algorithm: agent.net.add_listener(recorder))
    comm.Barrier()
    events = [e for part in comm.allgather(recorder.events) for e in part]
    return root / name, events


def graph_of(topo: str, K: int):
    graph = topology.build_graph(topo, K, seed=3, params={"degree": 3.0})
    topology.validate_graph(graph, K)
    return graph


CASES = [("ring", "ring", 12, 0.0), ("ring", "ring", 12, 0.3), ("walk", "erdos-renyi", 15, 0.0),
         ("walk", "erdos-renyi", 15, 0.3), ("sample", "erdos-renyi", 15, 0.3),
         ("sample", "ring", 15, 0.0)]


@pytest.mark.mpi(min_size=4)
@pytest.mark.parametrize("kind,topo,T,sigma", CASES)
def test_mpi_run_equals_the_single_process_equations(root, kind, topo, T, sigma):
    comm = MPI.COMM_WORLD
    K, n_records = comm.size, 16 * comm.size
    chains = 2 if kind != "ring" else 1
    out, _ = run_case(root, f"eq-{kind}-{topo}-{sigma}",
                      base(kind, topo, T, sigma, n_records, [f"algorithm.chains={chains}"]))
    graph = graph_of(topo, K)
    expected = run_chain(kind, graph, T, 3, 0, n_records=n_records, n_features=N_FEATURES,
                         noise=NOISE, radius=RADIUS, sigma=sigma, **SETTINGS)
    with np.load(out / f"models-agent-{comm.rank}.npz") as z:
        got = z["w"]
    # every agent holds chain 0's released token
    np.testing.assert_allclose(got, expected[:N_FEATURES], rtol=0, atol=1e-12)
    if sigma > 0:  # the noise did something: the noiseless token is elsewhere
        clean = run_chain(kind, graph, T, 3, 0, n_records=n_records, n_features=N_FEATURES,
                          noise=NOISE, radius=RADIUS, sigma=0.0, **SETTINGS)
        assert np.abs(clean[:N_FEATURES] - got).max() > 1e-3


def expected_traffic(kind, graph, T, K, n_records, chains):
    """Token messages per (sender, receiver): the realised path's hops, then the tree."""
    hops = np.zeros((K, K), dtype=int)
    final = np.zeros((K, K), dtype=int)
    for c in range(chains):
        _, _, holders = schedule(kind, graph, T, records_of(n_records, K), 3, c)
        for a, b in zip(holders[:-1], holders[1:]):
            if a != b:
                hops[a, b] += 1
        for child, parent in walks.spanning_tree(graph, int(holders[-1])).items():
            final[parent, child] += 1
    return hops, final


@pytest.mark.mpi(min_size=4)
@pytest.mark.parametrize("kind,topo", [("ring", "ring"), ("walk", "erdos-renyi"),
                                       ("sample", "erdos-renyi")])
def test_traffic_is_the_realised_path_and_the_final_tree(root, kind, topo):
    comm = MPI.COMM_WORLD
    K, n_records, T, chains = comm.size, 16 * comm.size, 15, 2
    out, _ = run_case(root, f"traffic-{kind}",
                      base(kind, topo, T, 0.3, n_records, [f"algorithm.chains={chains}"]))
    if comm.rank != 0:
        return
    traffic = json.loads((out / "traffic.json").read_text())
    assert sorted(traffic["phases"]) == ["token", "token.final"], "nothing else travels"
    hops, final = expected_traffic(kind, graph_of(topo, K), T, K, n_records, chains)
    token_bytes = 2 * N_FEATURES * 8
    np.testing.assert_array_equal(traffic["phases"]["token"]["messages"], hops)
    np.testing.assert_array_equal(traffic["phases"]["token"]["bytes"], hops * token_bytes)
    np.testing.assert_array_equal(traffic["phases"]["token.final"]["messages"], final)
    np.testing.assert_array_equal(traffic["total"]["bytes"], (hops + final) * token_bytes)


def hand_observations():
    """The ring 0 -> 1 -> 2 -> 3 -> 0 with records 2j, 2j+1 on agent j, 8 iterations.

    Iteration i is done by agent i mod 4 with its record 2 (i mod 4) + i // 4. Agent q
    receives the token at steps q and q + 4 (agent 0 only at 4: it starts with the public
    initial token) and the final token from its tree parent (tree from agent 3: 3 -> 2,
    3 -> 0 -> 1). Each sighting shows the iterations since q's previous one; k = the
    iterations done after it up to the sighting. Written out by hand:
    """
    return {
        # observer 1: step 1 sees it. 0 (rec 0) k=0; step 5 sees it. 2, 3, 4 (rec 4, 6, 1)
        # k = 2, 1, 0; the final token sees it. 6, 7 (rec 5, 7) k = 1, 0
        1: {0: 0, 4: 2, 6: 1, 1: 0, 5: 1, 7: 0},
        # observer 2: step 2 sees 0, 1 (rec 0, 2) k = 1, 0; step 6: it. 3, 4, 5 (rec 6, 1, 3)
        # k = 2, 1, 0; final: it. 7 (rec 7) k = 0
        2: {0: 1, 2: 0, 6: 2, 1: 1, 3: 0, 7: 0},
        # observer 3: step 3 sees 0, 1, 2 (rec 0, 2, 4) k = 2, 1, 0; step 7 sees 4, 5, 6
        # (rec 1, 3, 5) k = 2, 1, 0; it holds the last token itself
        3: {0: 2, 2: 1, 4: 0, 1: 2, 3: 1, 5: 0},
        # observer 0: step 4 sees 1, 2, 3 (rec 2, 4, 6) k = 2, 1, 0; final: it. 5, 6, 7
        # (rec 3, 5, 7) k = 2, 1, 0
        0: {2: 2, 4: 1, 6: 0, 3: 2, 5: 1, 7: 0},
    }


@pytest.mark.mpi(min_size=4)
def test_observer_matrix_of_a_four_rank_ring(root):
    comm = MPI.COMM_WORLD
    if comm.size != 4:
        pytest.skip("the hand computation is for exactly 4 ranks")
    sigma, eta, clip = 0.3, SETTINGS["eta"], SETTINGS["clip"]
    out, events = run_case(root, "observers", base("ring", "ring", 8, sigma, 8))
    expected = hand_observations()
    got = defaultdict(dict)
    for q, owner, record, k, kind in events:
        assert kind == "AmplifiedGaussianEvent"
        assert owner == record // 2 and owner != q
        assert record not in got[q], f"observer {q} booked record {record} twice"
        got[q][record] = k
    assert dict(got) == expected
    if comm.rank != 0:
        return
    constants = AmplificationConstants(eta=eta, beta=SETTINGS["beta"], nu=2 * RADIUS ** 2,
                                       mu_g=0.2)
    # the paper's local bound over (1 + eta beta)^2: eq. (7) divides the gradient step
    local = local_rho(eta, 2 * clip, sigma) / (1 + eta * SETTINGS["beta"]) ** 2
    rho = json.loads((out / "privacy.json").read_text())["links"]["rho"]
    for q, seen in expected.items():
        for j in range(4):
            if j == q:
                continue
            worst = max(local * amplification_ratio(k, constants)
                        for record, k in seen.items() if record // 2 == j)
            # privacy.json rows: owner j; columns: observer q
            assert rho[j][q] == pytest.approx(worst, rel=1e-12), (q, j)


@pytest.mark.mpi(min_size=4)
def test_sigma_zero_is_unbounded_privacy(root):
    comm = MPI.COMM_WORLD
    out, events = run_case(root, "sigma0", base("ring", "ring", 8, 0.0, 8 * comm.size))
    assert events and all(kind == "NonPrivateEvent" for *_, kind in events)
    if comm.rank == 0:
        summary = json.loads((out / "summary.json").read_text())
        assert summary["worst_link_epsilon"] == float("inf")
        rho = json.loads((out / "privacy.json").read_text())["links"]["rho"]
        seen = [v for row in rho for v in row if v is not None]
        assert seen and all(v == float("inf") for v in seen)


def first_sightings(holders, steps, owners, records, K):
    """(observer, record) -> [k of each first sighting], by walking the schedule step by
    step: an agent sees the token when it receives it and with the final release; at each
    sighting, the iterations since its previous one, k = iterations after each up to then."""
    steps = list(steps)
    last = {int(holders[0]): 0}
    seen = defaultdict(list)

    def sight(q, at):
        before = last.get(q, -1)
        for i, s in enumerate(steps):
            if before < s <= at and owners[i] != q:
                seen[(q, int(records[i]))].append(sum(1 for t in steps if s < t <= at))

    for s in range(1, len(holders)):
        q = int(holders[s])
        if holders[s - 1] != q:
            sight(q, s - 1)
        last[q] = s
    for v in range(K):
        if v != holders[-1]:
            sight(v, len(holders) - 1)
    return seen


@pytest.mark.mpi(min_size=4)
def test_observer_matrix_of_a_walk_with_amplification(root):
    comm = MPI.COMM_WORLD
    # a walk on a star: a leaf may miss the token for many iterations
    K, n_records, T, sigma = comm.size, 40 * comm.size, 80, 0.3
    eta, beta, clip = 1.0, 1.5, SETTINGS["clip"]  # beta eta = 1.5: the convex C = 5
    out, events = run_case(root, "observers-walk", base(
        "walk", "star", T, sigma, n_records, [f"algorithm.beta={beta}"]))
    graph = graph_of("star", K)
    offsets = records_of(n_records, K)
    owners, records, holders = schedule("walk", graph, T, offsets, 3, 0)
    expected = first_sightings(holders, range(T), owners, records, K)
    got = defaultdict(list)
    for q, owner, record, k, _ in events:
        got[(q, record)].append(k)
    assert {key: sorted(v) for key, v in got.items()} == \
        {key: sorted(v) for key, v in expected.items()}
    constants = AmplificationConstants(eta=eta, beta=beta, nu=2 * RADIUS ** 2, mu_g=0.2)
    ratios = [amplification_ratio(k, constants) for ks in expected.values() for k in ks]
    assert min(ratios) < 1.0, "some record is seen many iterations later: amplified"
    if comm.rank != 0:
        return
    local = local_rho(eta, 2 * clip, sigma) / (1 + eta * beta) ** 2
    report = json.loads((out / "privacy.json").read_text())
    # every record's book, per observer: the sum of its sightings' amplified rho
    booked = defaultdict(float)
    for agent in report["agents"]:
        for group in agent["groups"]:
            if group["record"] is not None:
                for q in group["receivers"]:
                    booked[(q, group["record"])] += group["rho"]
    assert booked.keys() == expected.keys()
    for key, ks in expected.items():
        want = sum(local * amplification_ratio(k, constants) for k in ks)
        assert booked[key] == pytest.approx(want, rel=1e-12), key
    rho = report["links"]["rho"]
    for q in range(K):
        for j in range(K):
            mine = [sum(local * amplification_ratio(k, constants) for k in ks)
                    for (obs, r), ks in expected.items()
                    if obs == q and offsets[j] <= r < offsets[j + 1]]
            if not mine:
                assert rho[j][q] is None or j == q or rho[j][q] == 0
                continue
            assert rho[j][q] == pytest.approx(max(mine), rel=1e-12), (q, j)


@pytest.mark.mpi(min_size=4)
@pytest.mark.parametrize("problem,sigma", [("logistic", 0.2), ("ridge", 0.0)])
def test_a_users_records_from_a_data_file(root, problem, sigma):
    """Records from the data file users already give (.npz with an agent column), uneven
    blocks, the problem's own l1/l2 as c1/c2: the same equations to 1e-12."""
    comm = MPI.COMM_WORLD
    K, P, T = comm.size, 3, 14
    rng = np.random.default_rng(11)
    counts = np.array([4 + 2 * k for k in range(K)])
    A = rng.normal(size=(counts.sum(), P))
    b = np.sign(rng.normal(size=counts.sum())) if problem == "logistic" else rng.normal(size=counts.sum())
    agent = np.repeat(np.arange(K), counts)
    path = root / f"records-{problem}.npz"
    if comm.rank == 0:
        np.savez(path, X=A, y=b, agent=agent)
    comm.Barrier()
    out, _ = run_case(root, f"user-{problem}", [
        f"problem.name={problem}", f"problem.data={path}", "problem.l1=0.01",
        "problem.l2=0.1", "topology.kind=ring", "algorithm.name=token-admm",
        "algorithm.schedule=ring", "algorithm.eta=0.5", "algorithm.beta=0.9",
        f"algorithm.sigma={sigma}", "algorithm.clip=1.5", "algorithm.bound=local",
        "algorithm.x0=0.5", f"run.iterations={T}", f"run.eval_every={T}",
        "run.evaluate=none", "run.seed=3"])
    offsets = np.concatenate([[0], np.cumsum(counts)])
    expected = run_chain("ring", graph_of("ring", K), T, 3, 0, n_records=int(counts.sum()),
                         n_features=P, eta=0.5, beta=0.9, sigma=sigma, clip=1.5, x0=0.5,
                         data=(A, b, offsets), logistic=problem == "logistic")
    with np.load(out / f"models-agent-{comm.rank}.npz") as z:
        np.testing.assert_allclose(z["w"], expected[:P], rtol=0, atol=1e-12)

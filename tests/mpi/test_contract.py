"""The contract every registered algorithm meets, checked the same way for each under mpiexec.

For every name in ``mpi_privopt.methods.ALGORITHMS`` (a new method is picked up by
itself and fails until ``contract_cases.py`` has its case):

(a) noise off, it reaches its problem's solution (final error below the case's tolerance);
(b) bytes travel only on graph edges, and on each as many as the method's analytic count;
(c) the ledger equals the sum of its releases: per directed link, the number of releases a
    recorder on the send path saw, and their composed zCDP rho (inf once any release is
    non-private), equal ``privacy.json``'s ``links`` matrices;
(d) same seed, same bytes: a second run gives identical ``models.npz``, traffic and ledger.

Everything is read from the run directories (and the recorder), not from the engine's or
the ledger's internal classes.
"""
from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.privacy.accountants import resolve

sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import (BASE, CASES, CONVERGENCE_ITERATIONS, FEATURES,  # noqa: E402
                            NOISY_ITERATIONS, case_for)
from contract_cases import nominal_only as nominal_for  # noqa: E402

NAMES = sorted(ALGORITHMS)


def event_rho(event) -> float:
    """zCDP rho of one privacy event: its own ``rho`` when it states one, else derived from
    the mechanism's parameters (Gaussian D^2 / (2 sigma^2); pure eps^2 / 2; Laplace
    (D/b)^2 / 2), independently of the accountants."""
    rho = getattr(event, "rho", None)
    if rho is not None:
        return float(rho)
    if hasattr(event, "epsilon"):
        return event.epsilon ** 2 / 2.0
    if hasattr(event, "sigma"):
        return event.sensitivity ** 2 / (2.0 * event.sigma ** 2)
    return (event.sensitivity / event.scale) ** 2 / 2.0


def release_rho(release) -> float | None:
    """zCDP rho of one release: inf when it is non-private, None when it is public (free).

    Reads the release's ``kind`` ("private", "public", "nonprivate") when it has one, else
    the class name of its event (a public or non-private event), so that the check holds
    whichever of the two says it.
    """
    kind = getattr(release, "kind", None)
    if kind is None:
        event_name = type(release.event).__name__.lower()
        kind = ("public" if "public" in event_name else
                "nonprivate" if "nonprivate" in event_name else "private")
    if kind == "public":
        return None
    return math.inf if kind == "nonprivate" else event_rho(release.event)


class ReleaseRecorder:
    """Counts what an agent releases to each neighbour, with the releases' summed rho.

    Keyed by (owner, receiver): the owner is the agent whose data an event names (the
    sender unless the event says otherwise, e.g. a token carrying other agents' records).
    A release may carry several events (``release.events``), each counted as a release; an
    event wrapped for amplification is counted as what the privacy layer's transform
    resolves it to. rho is summed per (owner, receiver, record): events on one record
    compose, disjoint records in parallel (the ledger's rule; record None: every record).
    """

    def __init__(self) -> None:
        self.agent: int | None = None
        self.releases: dict[tuple[int, int, int | None], int] = defaultdict(int)
        self.rho: dict[tuple[int, int, int | None], float] = defaultdict(float)

    def on_release(self, release, receivers, phase: str, round: int) -> None:
        for event in getattr(release, "events", (release.event,)):
            rho = release_rho(_Single(resolve(event)))
            if rho is None:
                continue  # independent of the data: free, and not counted as a release
            owner = self.agent if event.owner is None else int(event.owner)
            for j in receivers:
                self.releases[(owner, int(j), event.record)] += 1
                self.rho[(owner, int(j), event.record)] += rho

    @staticmethod
    def composed(releases: dict, rhos: dict) -> dict[tuple[int, int], tuple[float, set]]:
        """Per (owner, receiver): the composed rho (every-record releases plus the worst
        single record) and the release counts that composition may have (the worst record
        may be any of those tied at the largest rho)."""
        by_pair: dict[tuple[int, int], dict] = defaultdict(dict)
        for (owner, j, record), rho in rhos.items():
            by_pair[(owner, j)][record] = (rho, releases[(owner, j, record)])
        out = {}
        for pair, records in by_pair.items():
            every_rho, every_count = records.pop(None, (0.0, 0))
            if not records:
                out[pair] = (every_rho, {every_count})
                continue
            worst = max(rho for rho, _ in records.values())
            out[pair] = (every_rho + worst, {every_count + count for rho, count in
                                             records.values() if rho == worst})
        return out


class _Single:
    """One event seen as a release of its own (its kind read from its class)."""

    def __init__(self, event) -> None:
        self.event = event


def nominal_only(overrides: list[str]) -> list[str]:
    """``privacy.accounting=nominal`` when the overrides name a baseline of NOMINAL_ONLY."""
    named = [o.split("=", 1)[1] for o in overrides if o.startswith("algorithm.name=")]
    return nominal_for(named[-1]) if named else []


class Runs:
    """The runs of one algorithm, made once and shared by the four checks."""

    def __init__(self, comm: MPI.Intracomm, root: Path, name: str) -> None:
        case = case_for(name)
        iterations = case.iterations or CONVERGENCE_ITERATIONS
        self.noiseless = self._run(comm, root / "noiseless", case.noiseless, iterations)
        if case.noisy is None:
            # No noise to switch on: the noiseless run is the method as it runs. (A run's
            # cost is mostly its setup, so the repeat is not shortened.)
            self.noisy = self.noiseless
            self.again = self._run(comm, root / "again", case.noiseless, iterations)
        else:
            self.noisy = self._run(comm, root / "noisy", case.noisy, NOISY_ITERATIONS)
            self.again = self._run(comm, root / "again", case.noisy, NOISY_ITERATIONS)

    @staticmethod
    def _run(comm, out: Path, overrides: list[str], iterations: int) -> dict:
        cfg = load_config(None, BASE + overrides + nominal_only(overrides)
                          + [f"run.iterations={iterations}", f"run.eval_every={iterations}"])
        recorder = ReleaseRecorder()

        def attach(agent, algorithm) -> None:
            recorder.agent = agent.id
            agent.net.add_listener(recorder)

        run(cfg, out=str(out), comm=comm, stream=None, on_setup=attach)
        comm.Barrier()  # rank 0 has written the run directory
        # merged over the senders: another agent may have carried this owner's data
        releases: dict = defaultdict(int)
        for part in comm.allgather(dict(recorder.releases)):
            for key, count in part.items():
                releases[key] += count
        rho: dict = defaultdict(float)
        for part in comm.allgather(dict(recorder.rho)):
            for key, value in part.items():
                rho[key] += value
        return {"dir": out, "iterations": iterations,
                "booked": ReleaseRecorder.composed(releases, rho)}


@pytest.fixture(scope="module")
def runs_root():
    comm = MPI.COMM_WORLD
    path = tempfile.mkdtemp(prefix="mpi_privopt-contract-") if comm.rank == 0 else None
    path = comm.bcast(path)
    yield Path(path)
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


_RUNS: dict[str, Runs] = {}


@pytest.fixture
def runs(runs_root, request) -> Runs:
    name = request.node.callspec.params["name"]
    if name not in _RUNS:
        _RUNS[name] = Runs(MPI.COMM_WORLD, runs_root / name, name)
    return _RUNS[name]


def _json(run: dict, name: str) -> dict:
    return json.loads((run["dir"] / name).read_text())


def _adjacency(run: dict) -> np.ndarray:
    """The run's graph, from its ``graph.edgelist`` (a ``# ... n=K directed=B`` header,
    then one ``u v`` line per edge; undirected edges stand for both arcs)."""
    lines = (run["dir"] / "graph.edgelist").read_text().splitlines()
    header = dict(field.split("=") for field in lines[0].split() if "=" in field)
    K, directed = int(header["n"]), header["directed"] == "True"
    A = np.zeros((K, K), dtype=np.int64)
    for line in lines[1:]:
        u, v = map(int, line.split())
        A[u, v] = 1
        if not directed:
            A[v, u] = 1
    return A


def test_every_registered_algorithm_has_a_contract_case():
    missing = sorted(set(ALGORITHMS) - set(CASES))
    for name in missing:
        with pytest.raises(LookupError):
            case_for(name)
    assert not missing, (f"registered algorithms without a contract case: {missing}; add "
                         f"them to tests/mpi/contract_cases.py")
    assert not sorted(set(CASES) - set(ALGORITHMS)), "contract cases of unregistered names"


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", NAMES)
def test_noise_off_reaches_the_solution(runs, name):
    case = case_for(name)
    tolerance, iterations = case.tolerance, case.iterations or CONVERGENCE_ITERATIONS
    summary = _json(runs.noiseless, "summary.json")
    assert summary["iterations"] == iterations
    assert summary["final_error"] < tolerance, (
        f"{name}, noise off: final error {summary['final_error']:.3e} after "
        f"{iterations} iterations, contract tolerance {tolerance:g}")


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", NAMES)
def test_bytes_only_on_graph_edges_and_as_counted(runs, name):
    count = case_for(name).messages
    for run_ in {id(r): r for r in (runs.noiseless, runs.noisy)}.values():
        A = _adjacency(run_)
        traffic = _json(run_, "traffic.json")["total"]
        messages, nbytes = np.array(traffic["messages"]), np.array(traffic["bytes"])
        assert not nbytes[A == 0].any() and not messages[A == 0].any(), "traffic off the graph"
        traffic_of = case_for(name).traffic
        if traffic_of is None:
            expected_messages, expected_bytes = count(run_["iterations"], FEATURES)
            expected_messages, expected_bytes = A * expected_messages, A * expected_bytes
        else:
            expected_messages, expected_bytes = traffic_of(A, run_["iterations"], FEATURES)
        np.testing.assert_array_equal(messages, expected_messages)
        np.testing.assert_array_equal(nbytes, expected_bytes)
        summary = _json(run_, "summary.json")
        assert summary["bytes_total"] == nbytes.sum()
        assert summary["bytes_busiest_link"] == np.max(expected_bytes)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", NAMES)
def test_ledger_equals_the_sum_of_its_releases(runs, name):
    carries_others = case_for(name).carries_others
    for run_ in {id(r): r for r in (runs.noiseless, runs.noisy)}.values():
        A = _adjacency(run_)
        links = _json(run_, "privacy.json")["links"]
        K = len(A)
        for k in range(K):
            for j in range(K):
                booked, rho = links["releases"][k][j], links["rho"][k][j]
                seen_rho, seen = run_["booked"].get((k, j), (0.0, {0}))
                if not A[k, j] and not (carries_others and (k, j) in run_["booked"]):
                    # off the graph, nothing of k's data may be booked for j (a token
                    # carrying k's records on may show them to a non-neighbour)
                    assert booked is None and rho is None, f"ledger entry off the graph {k}->{j}"
                    assert (k, j) not in run_["booked"], f"release off the graph {k}->{j}"
                    continue
                assert booked in seen, f"link {k}->{j}: ledger {booked}, released {seen}"
                assert rho == pytest.approx(seen_rho, rel=1e-12), \
                    f"link {k}->{j}: ledger rho {rho}, sum of its releases' rho"
    if ALGORITHMS[name].private:
        # With its noise on, a DP method's loss is finite on every link.
        rho = np.array(_json(runs.noisy, "privacy.json")["links"]["rho"], dtype=float)
        assert np.all(np.isfinite(rho[_adjacency(runs.noisy) == 1]))


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_bytes(runs, name):
    first, second = runs.noisy["dir"], runs.again["dir"]
    with np.load(first / "models.npz") as a, np.load(second / "models.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for key in a.files:
            assert a[key].tobytes() == b[key].tobytes(), key
    ta, tb = _json(runs.noisy, "traffic.json"), _json(runs.again, "traffic.json")
    assert ta["phases"].keys() == tb["phases"].keys()
    for phase in ta["phases"]:
        for unit in ("messages", "bytes"):
            assert ta["phases"][phase][unit] == tb["phases"][phase][unit], (phase, unit)
    assert _json(runs.noisy, "privacy.json") == _json(runs.again, "privacy.json")

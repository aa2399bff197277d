"""The contract every registered algorithm meets, checked the same way for each under mpiexec.

For every name in ``mpi_privopt.algorithms.ALGORITHMS`` (a new method is picked up by
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

from mpi_privopt.algorithms import ALGORITHMS
from mpi_privopt.config import load_config
from mpi_privopt.engine import run

sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import (BASE, CASES, CONVERGENCE_ITERATIONS, FEATURES,  # noqa: E402
                            NOISY_ITERATIONS, case_for)

NAMES = sorted(ALGORITHMS)


def event_rho(event) -> float:
    """zCDP rho of one privacy event: its own ``rho`` when it states one, else derived from
    the mechanism's parameters (Gaussian D^2 / (2 sigma^2); Laplace (D/b)^2 / 2)."""
    rho = getattr(event, "rho", None)
    if rho is not None:
        return float(rho)
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
    """Counts what an agent releases to each neighbour, with the releases' summed rho."""

    def __init__(self) -> None:
        self.releases: dict[int, int] = defaultdict(int)
        self.rho: dict[int, float] = defaultdict(float)

    def on_release(self, release, receivers, phase: str, round: int) -> None:
        rho = release_rho(release)
        if rho is None:
            return  # independent of the data: free, and not counted as a release
        for j in receivers:
            self.releases[int(j)] += 1
            self.rho[int(j)] += rho


class Runs:
    """The runs of one algorithm, made once and shared by the four checks."""

    def __init__(self, comm: MPI.Intracomm, root: Path, name: str) -> None:
        case = case_for(name)
        self.noiseless = self._run(comm, root / "noiseless", case.noiseless,
                                   CONVERGENCE_ITERATIONS)
        if case.noisy is None:
            # No noise to switch on: the noiseless run is the method as it runs. (A run's
            # cost is mostly its setup, so the repeat is not shortened.)
            self.noisy = self.noiseless
            self.again = self._run(comm, root / "again", case.noiseless, CONVERGENCE_ITERATIONS)
        else:
            self.noisy = self._run(comm, root / "noisy", case.noisy, NOISY_ITERATIONS)
            self.again = self._run(comm, root / "again", case.noisy, NOISY_ITERATIONS)

    @staticmethod
    def _run(comm, out: Path, overrides: list[str], iterations: int) -> dict:
        cfg = load_config(None, BASE + overrides + [f"run.iterations={iterations}",
                                                    f"run.eval_every={iterations}"])
        recorder = ReleaseRecorder()
        run(cfg, out=str(out), comm=comm, stream=None,
            on_setup=lambda agent, algorithm: agent.net.add_listener(recorder))
        comm.Barrier()  # rank 0 has written the run directory
        return {"dir": out, "iterations": iterations,
                "releases": comm.allgather(dict(recorder.releases)),
                "rho": comm.allgather(dict(recorder.rho))}


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
    tolerance = case_for(name).tolerance
    summary = _json(runs.noiseless, "summary.json")
    assert summary["iterations"] == CONVERGENCE_ITERATIONS
    assert summary["final_error"] < tolerance, (
        f"{name}, noise off: final error {summary['final_error']:.3e} after "
        f"{CONVERGENCE_ITERATIONS} iterations, contract tolerance {tolerance:g}")


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", NAMES)
def test_bytes_only_on_graph_edges_and_as_counted(runs, name):
    count = case_for(name).messages
    for run_ in {id(r): r for r in (runs.noiseless, runs.noisy)}.values():
        A = _adjacency(run_)
        traffic = _json(run_, "traffic.json")["total"]
        messages, nbytes = np.array(traffic["messages"]), np.array(traffic["bytes"])
        assert not nbytes[A == 0].any() and not messages[A == 0].any(), "traffic off the graph"
        expected_messages, expected_bytes = count(run_["iterations"], FEATURES)
        np.testing.assert_array_equal(messages, A * expected_messages)
        np.testing.assert_array_equal(nbytes, A * expected_bytes)
        summary = _json(run_, "summary.json")
        assert summary["bytes_total"] == nbytes.sum()
        assert summary["bytes_busiest_link"] == expected_bytes


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", NAMES)
def test_ledger_equals_the_sum_of_its_releases(runs, name):
    for run_ in {id(r): r for r in (runs.noiseless, runs.noisy)}.values():
        A = _adjacency(run_)
        links = _json(run_, "privacy.json")["links"]
        K = len(A)
        for k in range(K):
            for j in range(K):
                booked, rho = links["releases"][k][j], links["rho"][k][j]
                if not A[k, j]:
                    assert booked is None and rho is None, f"ledger entry off the graph {k}->{j}"
                    assert j not in run_["releases"][k], f"release off the graph {k}->{j}"
                    continue
                seen = run_["releases"][k].get(j, 0)
                assert booked == seen, f"link {k}->{j}: ledger {booked}, released {seen}"
                assert rho == pytest.approx(run_["rho"][k].get(j, 0.0), rel=1e-12), \
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

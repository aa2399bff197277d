"""Deployment and local evaluation: what leaves a rank, recorded on every communicator.

Every communicator the run creates is wrapped (tests/mpi/recording.py) and every payload
handed to MPI is recorded. With ``run.evaluate = "none"`` nothing but the algorithm's own
releases, setup agreement and end-of-run counters may leave a rank; with ``"local"`` the
monitor reduces per-agent scalars only.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from recording import CallLog, RecordingComm  # noqa: E402

from mpi_privopt import topology  # noqa: E402
from mpi_privopt.config import load_config  # noqa: E402
from mpi_privopt.engine import run  # noqa: E402
from mpi_privopt.privacy.accountants import HeadlineAccountant  # noqa: E402
from mpi_privopt.problems import load_agent_data, make_local_problem  # noqa: E402
from mpi_privopt.results import agent_model_path, read_metrics  # noqa: E402

P = 5
WORLD, EVAL, GRAPH = "world", "world/Dup", "world/Create_dist_graph_adjacent"


def recorded_run(comm, out, overrides):
    """Run zCDP-NFL (default experiment, l1 given) through a recording communicator."""
    cfg = load_config("default", [f"problem.features={P}", "problem.l1=0.01",
                                  "run.progress_every=0", *overrides])
    log = CallLog()
    releases, iterates = [], []

    def spy(agent, algorithm):
        class Releases:
            def on_release(self, release, receivers, phase, round):
                releases.append(np.array(release.payload, copy=True).tobytes())
        agent.net.add_listener(Releases())
        step = algorithm.step

        def recorded_step(n):
            step(n)
            iterates.append(np.array(algorithm.estimate, dtype=np.float64).tobytes())
        algorithm.step = recorded_step

    result = run(cfg, out=out, comm=RecordingComm(comm, log), stream=None, on_setup=spy)
    return cfg, comm.bcast(result), log, releases, iterates


def eight_byte_values(array):
    """Each float of ``array`` as bytes in both byte orders (pickle writes floats big-endian)."""
    values = np.asarray(array, dtype=np.float64).ravel()
    return [v.tobytes() for v in values] + [v.byteswap().tobytes() for v in values]


def assert_nothing_private_leaves(comm, cfg, log, iterates):
    payloads = log.payloads()
    for k in range(comm.size):  # every agent's raw data: no row, no label
        X, y = load_agent_data(cfg.problem, k, comm.size, cfg.run.seed)
        for row in X:
            assert not any(row.tobytes() in p for p in payloads), f"a row of agent {k}'s X left"
        for value in eight_byte_values(y):
            assert not any(value in p for p in payloads), f"a label of agent {k} left"
    for w in iterates:  # this agent's clean iterates, whole or coordinate by coordinate
        assert not any(w in p for p in payloads), "a clean iterate left the rank"


@pytest.mark.mpi(min_size=3)
def test_deployment_sends_only_releases_setup_agreement_and_counters(comm, shared_dir):
    T = 6
    out = f"{shared_dir}/none"
    cfg, result, log, releases, iterates = recorded_run(
        comm, out, [f"run.iterations={T}", "run.evaluate=none"])

    # The algorithm's communicator carries its releases and nothing else.
    graph_sends = [r for r in log.on(GRAPH) if r.payload is not None]
    assert graph_sends and all(r.payload in releases for r in graph_sends)
    assert len(graph_sends) == T  # zCDP-NFL: one broadcast of w + noise per iteration
    # The world itself carries nothing; the evaluation communicator a fixed handful of
    # setup agreements and end-of-run counters, independent of the number of iterations.
    assert log.payloads(WORLD) == []
    eval_calls = [r.call for r in log.on(EVAL) if r.payload is not None]
    assert set(eval_calls) <= {"allgather", "bcast", "gather"}, eval_calls
    assert not log.unknown
    assert_nothing_private_leaves(comm, cfg, log, iterates)

    # The same run, longer: not one more message on the evaluation communicator.
    _, _, longer, _, _ = recorded_run(comm, f"{shared_dir}/none-longer",
                                      [f"run.iterations={2 * T}", "run.evaluate=none"])
    assert [r.call for r in longer.on(EVAL) if r.payload is not None] == eval_calls

    # Each agent wrote its own model, and no one gathered them.
    comm.Barrier()
    own = np.load(agent_model_path(out, comm.rank))["w"]
    assert own.tobytes() == iterates[-1]
    assert not Path(out, "models.npz").exists() and not Path(out, "metrics.csv").exists()

    # The traffic matrix is the analytic count: T broadcasts of P doubles per directed edge.
    if comm.rank == 0:
        graph = topology.build_graph(cfg.topology.kind, comm.size, seed=cfg.run.seed,
                                     params={"degree": cfg.topology.degree})
        adjacency = (topology.adjacency(graph) != 0).astype(np.int64)
        np.testing.assert_array_equal(np.array(result.traffic["total"]["bytes"]),
                                      adjacency * T * P * 8)
        s = result.summary
        assert s.evaluate == "none" and s.final_metrics == {} and s.final_error is None
        assert s.reference_method is None and result.models is None
        assert 0 < s.worst_link_epsilon < float("inf")


@pytest.mark.mpi(min_size=3)
def test_local_evaluation_reduces_scalars_only(comm, shared_dir):
    T = 5
    out = f"{shared_dir}/local"
    cfg, result, log, releases, iterates = recorded_run(
        comm, out, [f"run.iterations={T}", "run.evaluate=local"])
    columns = ("objective", "training_loss")
    # Every buffer the monitor sends is this agent's terms: one scalar per column, plus
    # its two cost counters (bytes sent; its worst link's accounting totals, from which
    # rank 0 converts the epsilon: HeadlineAccountant.EXPOSURE); nothing else.
    buffers = [r for r in log.on(EVAL) if r.call in ("Gather", "Igather", "Bcast", "Allreduce")]
    assert len(buffers) == T + 1  # one per evaluation, row 0 included
    assert all(r.call == "Igather" for r in buffers)
    width = len(columns) + 1 + len(HeadlineAccountant.EXPOSURE)
    assert all(len(r.payload) == 8 * width for r in buffers)
    assert all(r.payload in releases for r in log.on(GRAPH) if r.payload is not None)
    assert_nothing_private_leaves(comm, cfg, log, iterates)

    comm.Barrier()
    final = np.load(agent_model_path(out, comm.rank))["w"]
    X, y = load_agent_data(cfg.problem, comm.rank, comm.size, cfg.run.seed)
    mine = make_local_problem(cfg.problem, X, y, comm.size, 0.01)
    values = comm.gather((mine.value(np.zeros(P)), mine.value(final), mine.data_value(final)))
    if comm.rank == 0:
        metrics = read_metrics(out)
        assert tuple(metrics)[1:3] == columns
        assert metrics["objective"][0] == pytest.approx(sum(v[0] for v in values), rel=1e-12)
        assert metrics["objective"][-1] == pytest.approx(sum(v[1] for v in values), rel=1e-12)
        assert metrics["training_loss"][-1] == pytest.approx(
            np.mean([v[2] for v in values]), rel=1e-12)
        # the cost columns: cumulative bytes and the worst link's epsilon, both growing
        bytes_ = metrics["bytes_total"]
        assert bytes_[0] == 0 and bytes_[-1] == result.summary.bytes_total
        assert np.all(np.diff(bytes_) > 0) and np.all(np.diff(metrics["worst_link_epsilon"]) > 0)
        assert metrics["worst_link_epsilon"][-1] == pytest.approx(
            result.summary.worst_link_epsilon, rel=1e-12)
        assert result.summary.final_metrics["objective"] == metrics["objective"][-1]
        assert not Path(out, "models.npz").exists()

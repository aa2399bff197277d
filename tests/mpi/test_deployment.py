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
from recording import TIMING, CallLog, RecordingComm  # noqa: E402

from mpi_privopt import topology  # noqa: E402
from mpi_privopt.config import load_config  # noqa: E402
from mpi_privopt.engine import run  # noqa: E402
from mpi_privopt.network.link_time import boot_id  # noqa: E402
from mpi_privopt.network.wait import BARRIER_SIGNAL  # noqa: E402
from mpi_privopt.privacy.accountants import HeadlineAccountant  # noqa: E402
from mpi_privopt.problems import load_agent_data, make_local_problem  # noqa: E402
from mpi_privopt.results import agent_model_path, read_metrics  # noqa: E402

P = 5
WORLD, EVAL, GRAPH = "world", "world/Dup", "world/Create_dist_graph_adjacent"


def is_stop_agreement(record) -> bool:
    """The signal agreement of services.stop_signal.StopOnSignal (on its own duplicate of the world,
    which the recorder names like the evaluation channel): an Iallreduce of two int64, a
    signal number and an iteration stride; no data of any agent."""
    if record.call != "Iallreduce" or len(record.payload) != 16:
        return False
    signum, stride = np.frombuffer(record.payload, dtype=np.int64)
    return 0 <= signum < 65 and stride >= 0


def is_barrier_signal(record) -> bool:
    """A message of the barriers of set-up and the end (network.sleeping_barrier): one
    constant byte to or from rank 0, no data of any agent."""
    return record.call == "Isend" and record.payload == BARRIER_SIGNAL


def algorithm_sends(log) -> list:
    """What the algorithm's communicator carried, less the link timer's own messages
    (network/link_time.py), checked here: one set-up exchange of the kernel's boot id
    (which neighbours read one clock) and sampled 8-byte clock readings under its tags."""
    sends = [r for r in log.on(GRAPH) if r.payload is not None]
    clock = [r for r in sends if r.payload == boot_id()]
    timing = [r for r in sends if TIMING in r.call]
    assert len(clock) == 1 and timing and all(len(r.payload) == 8 for r in timing)
    return [r for r in sends if r not in clock and r not in timing]


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

    # The algorithm's communicator carries its releases and nothing else (beside the link
    # timer's clock readings, algorithm_sends).
    graph_sends = algorithm_sends(log)
    assert graph_sends and all(r.payload in releases for r in graph_sends)
    assert len(graph_sends) == T  # zCDP-NFL: one broadcast of w + noise per iteration
    # The world itself carries nothing; the evaluation communicator a fixed handful of
    # setup agreements and end-of-run counters, independent of the number of iterations.
    assert log.payloads(WORLD) == []
    eval_calls = [r.call for r in log.on(EVAL) if r.payload is not None
                  and not is_stop_agreement(r) and not is_barrier_signal(r)]
    assert set(eval_calls) <= {"allgather", "bcast", "gather"}, eval_calls
    assert not log.unknown
    assert_nothing_private_leaves(comm, cfg, log, iterates)

    # The same run, longer: not one more message on the evaluation communicator (the
    # signal agreement beside it runs about every 20 ms, so its count follows the clock).
    _, _, longer, _, _ = recorded_run(comm, f"{shared_dir}/none-longer",
                                      [f"run.iterations={2 * T}", "run.evaluate=none"])
    assert [r.call for r in longer.on(EVAL) if r.payload is not None
            and not is_stop_agreement(r) and not is_barrier_signal(r)] == eval_calls

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
    assert all(r.payload in releases for r in algorithm_sends(log))
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


# -- every registered method --------------------------------------------------------------

sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import BASE, case_for, nominal_only  # noqa: E402

from mpi_privopt.methods import ALGORITHMS  # noqa: E402

#: iterations per method: a few (token-admm: steps of the token)
FEW = 3
#: the largest payload a set-up agreement on the algorithm's communicator may carry (a
#: token schedule's digests: three int64)
AGREEMENT_BYTES = 64


def private_values(problem):
    """What of an agent's problem must never leave it: every row (2 or more floats) of its
    float arrays, and every non-integral float of its vectors, as bytes in both byte
    orders (integral values such as labels +-1 or zeros would match anything)."""
    pieces = set()
    for value in vars(problem).values():
        if not (isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size):
            continue
        array = np.asarray(value, dtype=np.float64)
        rows = array.reshape(-1, array.shape[-1]) if array.ndim > 1 else array[np.newaxis]
        for row in rows:
            if row.size >= 2 and np.unique(row).size > 1:
                pieces.update((row.tobytes(), row.byteswap().tobytes()))
        values = array.ravel()
        for v in values[values != np.round(values)]:
            pieces.update((v.tobytes(), v.byteswap().tobytes()))
    return pieces


def deployment_run(comm, out, name, mode):
    """``name``'s contract configuration (with its noise) for FEW iterations in ``mode``,
    through a recording communicator. Returns the log, the booked releases' payloads, this
    agent's private pieces and clean iterates, and the log index range of the iterations."""
    case = case_for(name)
    cfg = load_config(None, BASE + (case.noisy or case.noiseless) + nominal_only(name)
                      + [f"run.iterations={FEW}", "run.eval_every=1", f"run.evaluate={mode}",
                         "run.progress_every=0"])
    log = CallLog()
    seen = {"releases": set(), "iterates": [], "window": [None, None]}

    def spy(agent, algorithm):
        class Releases:
            def on_release(self, release, receivers, phase, round):
                seen["releases"].add(np.array(release.payload, copy=True).tobytes())
        agent.net.add_listener(Releases())
        seen["private"] = private_values(agent.problem)
        seen["n_out"] = agent.net.n_out
        step = algorithm.step

        def recorded_step(n):
            if n == 1:
                seen["window"][0] = len(log.records)
            step(n)
            w = np.array(algorithm.estimate, dtype=np.float64)
            if np.any(w != np.round(w)):  # not still a public start such as zeros
                seen["iterates"].append(w.tobytes())
            seen["window"][1] = len(log.records)
        algorithm.step = recorded_step

    run(cfg, out=out, comm=RecordingComm(comm, log), stream=None, on_setup=spy)
    return log, seen


@pytest.mark.mpi(min_size=3)
@pytest.mark.parametrize("mode", ["none", "local"])
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_no_raw_data_leaves_any_rank_in_any_method(comm, shared_dir, name, mode):
    out = f"{shared_dir}/{name}-{mode}"
    log, seen = deployment_run(comm, out, name, mode)
    comm.Barrier()
    # every rank checks its own log; the ranks then agree on the findings (a failure on
    # one rank alone would leave the others waiting in the next test's collective)
    problems = deployment_problems(comm, out, name, mode, log, seen)
    found = {k: p for k, p in enumerate(comm.allgather(problems)) if p}
    assert not found, found


def deployment_problems(comm, out, name, mode, log, seen) -> list[str]:
    """What this rank's recorded run shows that a deployment must not do."""
    problems = []
    first, last = seen["window"]
    if first is None or log.unknown:
        return [f"no iteration recorded, or unknown calls {log.unknown}"]
    inside = log.records[first:last]
    outside = log.records[:first] + log.records[last:]

    # The world itself carries nothing.
    if log.payloads(WORLD):
        problems.append(f"{len(log.payloads(WORLD))} payloads on the world communicator")
    # The algorithm's communicator: during the iterations, only what the privacy layer
    # booked; around them, only the set-up agreement of a schedule (a few integers).
    during = [r for r in inside if r.comm == GRAPH and r.payload is not None
              and TIMING not in r.call]
    # the link-time markers and token hop stamps: one float (a clock reading) each
    problems += [f"{r.call} of {len(r.payload)} bytes" for r in log.records
                 if TIMING in r.call and r.payload is not None and len(r.payload) != 8]
    if not sum(comm.allgather(len(during))):  # a token's agent may hold no step of a few
        problems.append("nothing sent")
    for r in during:
        # a scatter hands MPI one release per out-neighbour, stacked
        parts = seen["n_out"] if r.call in ("Neighbor_alltoall", "Ineighbor_alltoall") else 1
        size = len(r.payload) // max(parts, 1)
        if any(r.payload[i * size:(i + 1) * size] not in seen["releases"] for i in range(parts)):
            problems.append(f"unbooked {r.call} of {len(r.payload)} bytes")
    problems += [f"{r.call} of {len(r.payload)} bytes around the iterations" for r in outside
                 if r.comm == GRAPH and r.payload is not None
                 and len(r.payload) > AGREEMENT_BYTES]

    # The evaluation communicator: set-up agreement and end-of-run counters (pickled
    # objects of the agreement calls) and, in "local" mode, one buffer of this agent's
    # scalars per evaluation; in "none" mode nothing at all during the iterations.
    scalars = ()
    if mode == "local":
        # metrics.csv: iteration, the metric columns, elapsed_seconds, the two cost columns;
        # each agent sends one row per evaluation: one float per metric column, its bytes
        # sent and its worst link's accounting totals (HeadlineAccountant.EXPOSURE, from
        # which rank 0 converts the epsilon column); and an aggregative problem's scalar
        # aggregate (its share gathered, the sum broadcast)
        header = comm.bcast(len(read_metrics(out)) if comm.rank == 0 else None)
        scalars = (8, 8 * (header - 3 + len(HeadlineAccountant.EXPOSURE)))
    during_loop = {id(r) for r in inside}
    for record in log.on(EVAL):
        if record.payload is None or is_stop_agreement(record) or is_barrier_signal(record):
            continue
        if record.call in ("allgather", "bcast", "gather"):  # agreement and counters
            if id(record) in during_loop:
                problems.append(f"{record.call} on the evaluation channel while iterating")
        elif mode != "local" or record.call not in ("Gather", "Igather", "Bcast", "Allreduce",
                                                    "Reduce") \
                or len(record.payload) not in scalars:
            problems.append(f"{record.call} of {len(record.payload)} bytes on the evaluation "
                            f"channel ({mode}; scalars are {scalars} bytes)")

    # No piece of any agent's data, on any communicator; no clean iterate beside the
    # algorithm's own (booked) releases.
    private = comm.allgather(seen["private"])
    payloads = log.payloads()
    for k, pieces in enumerate(private):
        leaked = sum(any(p in payload for payload in payloads) for p in pieces)
        if leaked:
            problems.append(f"{leaked} pieces of agent {k}'s data left")
    evaluation = log.payloads(EVAL) + log.payloads(WORLD)
    if any(w in p for w in seen["iterates"] for p in evaluation):
        problems.append("a clean iterate left on the evaluation channel")
    return problems


@pytest.mark.mpi(min_size=3)
def test_the_deployment_check_finds_a_leak(comm, shared_dir):
    # the checker itself: one run, then planted records it must find
    from recording import Record
    out = f"{shared_dir}/planted"
    log, seen = deployment_run(comm, out, "zcdp-nfl", "none")
    comm.Barrier()
    assert deployment_problems(comm, out, "zcdp-nfl", "none", log, seen) == []
    first, _ = seen["window"]
    row = next(iter(seen["private"]))
    planted = [Record(EVAL, "gather", b"counters" + row),          # data on the monitor
               Record(GRAPH, "Send", b"\x01" * 40),                 # an unbooked message
               Record(EVAL, "Gather", np.ones(3).tobytes())]        # a buffer in "none"
    log.records[first:first] = planted
    seen["window"][1] += len(planted)
    problems = " | ".join(deployment_problems(comm, out, "zcdp-nfl", "none", log, seen))
    assert "data left" in problems and "unbooked Send of 40 bytes" in problems
    assert "gather on the evaluation channel while iterating" in problems
    assert "Gather of 24 bytes on the evaluation channel (none" in problems

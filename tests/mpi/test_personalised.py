"""The personalised task under mpiexec: one agent per rank equals the single-process run.

Each rank builds only its own agent (its data and draws depend on (seed, rank) alone); the
exact aggregate and average y-gradient are reduced with MPI. The result must equal
:func:`centralised_descent` over every agent built in one process, and the real Monitor's
metrics must equal the evaluator's terms combined by hand.
"""
import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt.monitor import Monitor
from mpi_privopt.problems.aggregative.centralised import centralised_descent
from mpi_privopt.problems.metrics import LOCAL, REFERENCE
from mpi_privopt.methods.chen2025.problems.personalised import build_personalised

OPTIONS = {"dataset": "digits", "lambda_pen": 0.5, "batch": 2}
SEED, T = 3, 40


def _step(t):
    return 0.2 * (t + 1) ** -0.55


def _mean(comm, v):
    out = np.empty_like(v)
    comm.Allreduce(np.ascontiguousarray(v), out, op=MPI.SUM)
    return out / comm.size


@pytest.mark.mpi(min_size=2)
def test_distributed_descent_equals_the_single_process_one(comm):
    task = build_personalised(OPTIONS, comm.rank, comm.size, SEED)
    x = task.initial_block()
    for t in range(T):
        task.observe()
        y = _mean(comm, task.aggregate(x))
        z = _mean(comm, task.grad_y(x, y))
        x = x - _step(t) * (task.grad_x(x, y) + task.aggregate_vjp(x, z))
    blocks = comm.gather(x, root=0)
    if comm.rank == 0:
        tasks = [build_personalised(OPTIONS, k, comm.size, SEED) for k in range(comm.size)]
        expected = centralised_descent(tasks, [t.initial_block() for t in tasks], T, _step)
        for k in range(comm.size):
            assert np.allclose(blocks[k], expected[k], rtol=0, atol=1e-10), k
        assert np.max(np.abs(blocks[0] - tasks[0].initial_block())) > 1e-3   # it moved


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("mode", [REFERENCE, LOCAL])
def test_monitor_metrics_equal_the_terms_combined_by_hand(comm, mode):
    task = build_personalised(OPTIONS, comm.rank, comm.size, SEED)
    x = 0.3 * np.random.default_rng(comm.rank).standard_normal(task.block_size)
    monitor = Monitor(comm.Dup(), task.evaluator(mode), mode)
    rows = monitor.evaluate(0, x, 0.0, 0, None) + monitor.flush()  # rank 0's row, or none
    row = rows[0] if rows else None
    xs = comm.gather(x, root=0)
    if comm.rank == 0:
        tasks = [build_personalised(OPTIONS, k, comm.size, SEED) for k in range(comm.size)]
        evs = [t.evaluator(mode) for t in tasks]
        G = np.mean([e.aggregate_share(v) for e, v in zip(evs, xs)], axis=0)
        expected = evs[0].combine(np.array([e.terms(v, G) for e, v in zip(evs, xs)]))
        assert set(row.values) == set(expected) == set(evs[0].columns)
        for name, value in expected.items():
            assert np.isclose(row.values[name], value, rtol=1e-12, atol=0), name

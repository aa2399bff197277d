"""The monitor's reductions, on a one-agent communicator (the MPI tests run several)."""
import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt.monitor import Monitor
from mpi_privopt.problems.metrics import AgentMetrics, Metric


def _aggregative(size):
    # F(x) = ||x - g||^2 + 1 with g the average of the agents' x: one agent, g = x
    return AgentMetrics([Metric("cost", "sum")],
                        lambda x, g: (float(np.sum((x - g) ** 2)) + 1.0,),
                        aggregate=lambda x: x[:size], aggregate_size=size)


def test_a_row_carries_the_metrics_then_the_cost_counters():
    monitor = Monitor(MPI.COMM_SELF, _aggregative(2), "reference")
    row = monitor.evaluate(3, np.array([1.0, 2.0]), 0.5, bytes_sent=96, worst_link_epsilon=0.7)
    assert row.iteration == 3 and row.values == {"cost": 1.0}
    assert row["cost"] == row.cost == 1.0
    assert row.bytes_total == 96 and row.worst_link_epsilon == 0.7
    with pytest.raises(AttributeError):
        row.error


def test_local_mode_reduces_scalars_only():
    with pytest.raises(ValueError, match="only scalars"):
        Monitor(MPI.COMM_SELF, _aggregative(2), "local")
    scalar = Monitor(MPI.COMM_SELF, _aggregative(1), "local")  # a scalar aggregate is fine
    # g = x[0] = 1: F = (1 - 1)^2 + (5 - 1)^2 + 1
    assert scalar.evaluate(0, np.array([1.0, 5.0]), 0.0, 0, 0.0).values == {"cost": 17.0}


def test_nothing_is_evaluated_in_a_deployment():
    monitor = Monitor(MPI.COMM_SELF, None, "none")
    assert not monitor.active and monitor.columns == ()
    assert monitor.evaluate(1, np.zeros(2), 0.0, 0, 0.0) is None

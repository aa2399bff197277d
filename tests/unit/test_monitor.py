"""The monitor's reductions, on a one-agent communicator (the MPI tests run several)."""
import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt.monitor import Monitor
from mpi_privopt.privacy.accountants import HeadlineAccountant, most_exposed
from mpi_privopt.privacy.events import GaussianEvent, LaplaceEvent, NonPrivateEvent
from mpi_privopt.problems.metrics import AgentMetrics, ConsensusToReference, Metric


def _aggregative(size):
    # F(x) = ||x - g||^2 + 1 with g the average of the agents' x: one agent, g = x
    return AgentMetrics([Metric("cost", "sum")],
                        lambda x, g: (float(np.sum((x - g) ** 2)) + 1.0,),
                        aggregate=lambda x: x[:size], aggregate_size=size)


def _gaussian(*pairs):
    acc = HeadlineAccountant()
    for sensitivity, sigma in pairs:
        acc.add(GaussianEvent(sensitivity=sensitivity, sigma=sigma))
    return acc


def _one(monitor, *args):
    """The row of a one-agent evaluation (rank 0 completes it by the flush at the latest)."""
    rows = monitor.evaluate(*args) + monitor.flush()
    assert len(rows) == 1
    return rows[0]


def test_a_row_carries_the_metrics_then_the_cost_counters():
    monitor = Monitor(MPI.COMM_SELF, _aggregative(2), "reference")
    link = _gaussian((1.0, 2.0), (1.0, 3.0))
    row = _one(monitor, 3, np.array([1.0, 2.0]), 0.5, 96, link.exposure())
    assert row.iteration == 3 and row.values == {"cost": 1.0} and row.elapsed == 0.5
    assert row["cost"] == row.cost == 1.0
    # the epsilon rank 0 converts from the exposure is the link's own
    assert row.bytes_total == 96 and row.worst_link_epsilon == link.epsilon(1e-5)["best"]
    with pytest.raises(AttributeError):
        row.error
    assert _one(monitor, 4, np.array([1.0, 2.0]), 0.5, 96, None).worst_link_epsilon == 0.0


def test_rows_complete_in_order_and_all_by_the_flush():
    monitor = Monitor(MPI.COMM_SELF, _aggregative(1), "local")
    rows = []
    for n in range(5):
        rows += monitor.evaluate(n, np.array([float(n), 1.0]), 0.0, n, None)
    rows += monitor.flush()
    assert [r.iteration for r in rows] == list(range(5))
    assert [r.bytes_total for r in rows] == list(range(5))
    assert monitor.flush() == []


def test_local_mode_reduces_scalars_only():
    with pytest.raises(ValueError, match="only scalars"):
        Monitor(MPI.COMM_SELF, _aggregative(2), "local")
    scalar = Monitor(MPI.COMM_SELF, _aggregative(1), "local")  # a scalar aggregate is fine
    # g = x[0] = 1: F = (1 - 1)^2 + (5 - 1)^2 + 1
    assert _one(scalar, 0, np.array([1.0, 5.0]), 0.0, 0, None).values == {"cost": 17.0}


def test_nothing_is_evaluated_in_a_deployment():
    monitor = Monitor(MPI.COMM_SELF, None, "none")
    assert not monitor.active and monitor.columns == ()
    assert monitor.evaluate(1, np.zeros(2), 0.0, 0, None) == [] and monitor.flush() == []


def test_the_consensus_metrics_in_one_round_are_the_two_rounds_numbers():
    rng = np.random.default_rng(3)
    W, w_c = rng.normal(size=(6, 4)), rng.normal(size=4)
    metrics = ConsensusToReference(lambda w: float(w @ w), w_c, 1.5)
    mean = W.mean(axis=0)  # what the two rounds broadcast
    two_rounds = metrics.combine(np.array([metrics.terms(w, mean) for w in W]))
    one_round = metrics.combine_gathered(W, np.array([metrics.local_terms(w) for w in W]))
    assert one_round == two_rounds  # bitwise


@pytest.mark.parametrize("seed", range(40))
def test_the_most_exposed_link_has_the_largest_epsilon(seed):
    rng = np.random.default_rng(seed)

    def accountant():
        acc = HeadlineAccountant()
        kind = rng.choice(["gaussian", "laplace", "mixed"])
        for _ in range(int(rng.integers(0, 5))):
            if kind != "laplace":
                acc.add(GaussianEvent(sensitivity=float(rng.uniform(0.5, 1.5)),
                                      sigma=float(rng.uniform(1, 5))))
            if kind != "gaussian":
                acc.add(LaplaceEvent(sensitivity=1.0, scale=float(rng.uniform(1, 5))))
        return acc

    links = [accountant() for _ in range(int(rng.integers(1, 7)))]
    links += links[:1]  # a repeated total (a broadcast's links)
    if seed % 10 == 0:
        links[-1].add(NonPrivateEvent())
    exposures = [a.exposure() for a in links]
    worst = most_exposed(exposures, 1e-5)
    expected = max(a.epsilon(1e-5)["best"] for a in links)
    assert HeadlineAccountant.from_exposure(exposures[worst]).epsilon(1e-5)["best"] == expected
    assert most_exposed([], 1e-5) is None


def test_a_broadcasts_links_need_no_conversion():
    links = [_gaussian((1.0, 2.0))] * 3
    calls = []
    assert most_exposed([a.exposure() for a in links], 1e-5,
                        lambda acc: calls.append(acc) or 0.0) == 0
    assert calls == []

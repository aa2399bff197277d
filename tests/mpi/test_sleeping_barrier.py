"""The barrier of one rank's one-off work (network.sleeping_barrier): nobody leaves before
the last has arrived, consecutive barriers do not mix, and a waiting rank sleeps."""
import time

import pytest
from mpi4py import MPI

from mpi_privopt.network import sleeping_barrier


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("late", ["root", "last"])
def test_no_rank_leaves_before_the_last_has_arrived(comm, late):
    slow = 0 if late == "root" else comm.size - 1
    comm.Barrier()
    if comm.rank == slow:
        time.sleep(0.3)
    arrived = time.time()
    sleeping_barrier(comm)
    left = time.time()
    arrivals, leaves = zip(*comm.allgather((arrived, left)))
    # one machine's clock (the ranks of one host): every rank left after the slow arrived
    assert min(leaves) >= max(arrivals) == arrivals[slow]


@pytest.mark.mpi(min_size=2)
def test_consecutive_barriers_keep_their_order(comm):
    """Twenty barriers in a row, a different rank late each time: after each, every rank
    has passed the same number."""
    for n in range(20):
        if comm.rank == n % comm.size:
            time.sleep(0.01)
        sleeping_barrier(comm)
        assert comm.allgather(n) == [n] * comm.size


@pytest.mark.mpi(min_size=2)
def test_a_rank_waiting_at_the_barrier_sleeps(comm):
    """While rank 0 works 0.5 s, the others use a few percent of a core (an MPI barrier
    polls: a whole core each)."""
    comm.Barrier()
    cpu = time.process_time()
    if comm.rank == 0:
        end = time.perf_counter() + 0.5
        while time.perf_counter() < end:
            pass
    sleeping_barrier(comm)
    used = time.process_time() - cpu
    if comm.rank != 0:
        assert used < 0.1, used


def test_a_world_of_one_passes_at_once():
    sleeping_barrier(MPI.COMM_SELF)

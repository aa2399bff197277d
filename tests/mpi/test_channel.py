"""The channel's mix and average under mpiexec: the weighted neighbour average of what
each neighbour really sent, on every topology, persistent or MPI-3 fallback."""
import numpy as np
import pytest

from mpi_privopt import topology
from mpi_privopt.network import Network
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("kind", ["ring", "erdos-renyi", "star"])
def test_mix_is_the_weighted_average_of_what_the_neighbours_sent(comm, kind, persistent,
                                                                 channel_path):
    graph = topology.build_graph(kind, comm.size, seed=2)
    in_nbrs, out_nbrs = topology.neighbors(graph, comm.rank)
    net = Network(comm, in_nbrs, out_nbrs)
    ledger = Ledger(comm.rank, net.out_neighbors, 1e-5)
    net.add_listener(ledger)
    with channel_path(net, persistent):
        channel = net.broadcast_channel("x", 3, buffers=2)
    assert channel.persistent == persistent
    self_weight, weights = topology.metropolis_row(comm.rank, net.in_neighbors,
                                                   dict(graph.degree()), "standard")
    def message(agent, n):
        return np.array([agent, n, agent * n], dtype=float)

    for n in range(1, 6):
        channel.outgoing[:] = message(comm.rank, n)
        mixed = channel.mix(Release.nonprivate(channel.outgoing), self_weight, weights)
        expected = self_weight * message(comm.rank, n) + sum(
            w * message(source, n) for w, source in zip(weights, net.in_neighbors))
        np.testing.assert_allclose(mixed, expected, rtol=1e-15, atol=1e-15)
        np.testing.assert_array_equal(channel.average(self_weight, weights), mixed)
        np.testing.assert_array_equal(channel.last_sent, message(comm.rank, n))
    counters = net.meter.counters("x")
    assert counters.all_messages == 5 and counters.all_bytes == 5 * 3 * 8
    assert all(ledger.links[v].nonprivate == 5 for v in net.out_neighbors)
    net.free()

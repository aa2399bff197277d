"""Network under mpiexec: neighbour collectives, channels, point to point, and the meter."""
import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt import topology
from mpi_privopt.network import Network, NotANeighbourError
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release
from mpi_privopt.network.traffic import assemble_matrices


def make_network(comm, kind="ring", directed=False, seed=0, **params):
    graph = topology.build_graph(kind, comm.size, seed=seed, directed=directed, params=params)
    topology.validate_graph(graph, comm.size)
    in_nbrs, out_nbrs = topology.neighbors(graph, comm.rank)
    return graph, Network(comm, in_nbrs, out_nbrs)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("kind", ["ring", "complete", "erdos-renyi", "star"])
def test_broadcast_delivers_each_neighbours_payload(comm, kind):
    graph, net = make_network(comm, kind)
    payload = np.arange(5, dtype=np.float64) + 100 * comm.rank
    got = net.broadcast(Release.public(payload), "x")
    assert got.shape == (len(net.in_neighbors), 5)
    for row, source in zip(got, net.in_neighbors):
        np.testing.assert_array_equal(row, np.arange(5) + 100 * source)
    net.free()


@pytest.mark.mpi(min_size=2)
def test_nonblocking_broadcast_equals_blocking(comm):
    _, net = make_network(comm, "erdos-renyi")
    payload = np.full(7, float(comm.rank))
    pending = net.ibroadcast(Release.public(payload), "x")
    got = pending.wait()
    np.testing.assert_array_equal(got[:, 0], np.array(net.in_neighbors, dtype=float))
    net.free()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("nonblocking", [False, True])
def test_scatter_sends_a_different_payload_on_each_link(comm, nonblocking):
    _, net = make_network(comm, "complete")
    releases = [Release.public(np.array([1000.0 * comm.rank + dest, dest]))
                for dest in net.out_neighbors]
    if nonblocking:
        got = net.iscatter(releases, "s").wait()
    else:
        got = net.scatter(releases, "s")
    for row, source in zip(got, net.in_neighbors):
        assert row[0] == 1000.0 * source + comm.rank
        assert row[1] == comm.rank
    net.free()


@pytest.mark.mpi(min_size=3)
def test_directed_ring_sends_forward_only(comm):
    _, net = make_network(comm, "ring", directed=True)
    assert net.out_neighbors == [(comm.rank + 1) % comm.size]
    assert net.in_neighbors == [(comm.rank - 1) % comm.size]
    got = net.broadcast(Release.public(np.array([float(comm.rank)])), "x")
    assert got[0, 0] == (comm.rank - 1) % comm.size
    net.free()


@pytest.mark.mpi(min_size=2)
def test_token_travels_around_the_ring(comm):
    _, net = make_network(comm, "ring", directed=True)
    token = np.zeros(3)
    nxt, prev = net.out_neighbors[0], net.in_neighbors[0]
    if comm.rank == 0:
        net.send(nxt, Release.public(token + 1), "token")
        net.recv(prev, token, "token")
        assert token[0] == comm.size
    else:
        net.recv(prev, token, "token")
        pending = net.isend(nxt, Release.public(token + 1), "token")
        pending.wait()
    net.free()


@pytest.mark.mpi(min_size=4)
def test_sending_to_a_non_neighbour_is_impossible(comm):
    _, net = make_network(comm, "ring")
    stranger = (comm.rank + 2) % comm.size
    assert stranger not in net.out_neighbors
    with pytest.raises(NotANeighbourError, match="not an out-neighbour"):
        net.send(stranger, Release.public(np.zeros(1)), "x")
    with pytest.raises(NotANeighbourError):
        net.recv(stranger, np.zeros(1), "x")
    net.free()


@pytest.mark.mpi(min_size=2)
def test_raw_arrays_are_refused(comm):
    _, net = make_network(comm, "ring")
    with pytest.raises(TypeError, match="Release"):
        net.broadcast(np.zeros(3), "x")
    net.free()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("kind,directed", [("erdos-renyi", False), ("ring", True), ("star", False)])
def test_metered_bytes_equal_the_analytic_count(comm, kind, directed):
    graph, net = make_network(comm, kind, directed=directed, seed=3)
    dims, rounds = {"w": (8, np.float64), "s": (3, np.float32), "c": (6, np.float32)}, 11
    out = np.empty((net.n_in, 8))
    channel = net.broadcast_channel("c", 6, dtype=np.float32, buffers=2)
    for n in range(rounds):
        net.broadcast(Release.public(np.ones(8)), "w", out=out)
        net.scatter([Release.public(np.ones(3, dtype=np.float32))] * net.n_out, "s")
        channel.exchange(Release.public(channel.sends[n % 2]))
    rows = comm.gather(net.meter.rows(comm.size))
    net.free()
    if comm.rank != 0:
        return
    adjacency = (topology.adjacency(graph) != 0).astype(np.int64)
    matrices = assemble_matrices(rows, comm.size)
    expected_total = np.zeros_like(adjacency)
    for phase, (dim, dtype) in dims.items():
        expected = adjacency * dim * np.dtype(dtype).itemsize * rounds
        np.testing.assert_array_equal(matrices["phases"][phase]["bytes"], expected)
        np.testing.assert_array_equal(matrices["phases"][phase]["messages"], adjacency * rounds)
        expected_total += expected
    np.testing.assert_array_equal(matrices["total"]["bytes"], expected_total)
    assert np.all(matrices["total"]["seconds"][adjacency == 0] == 0)
    assert np.all(matrices["total"]["seconds"][adjacency == 1] > 0)


class Recorder:
    def __init__(self):
        self.seen = []

    def on_receive(self, data, sources, phase, round):
        self.seen.append((phase, round, list(sources), data.copy()))


@pytest.mark.mpi(min_size=2)
def test_receive_listeners_see_exactly_what_arrives(comm):
    _, net = make_network(comm, "ring", directed=True)
    recorder = Recorder()
    net.receive_listeners.append(recorder)
    net.round = 4
    got = net.broadcast(Release.public(np.array([float(comm.rank)])), "x")
    net.round = 5
    got_nb = net.ibroadcast(Release.public(np.array([2.0 * comm.rank])), "y").wait()
    assert [(p, r, s) for p, r, s, _ in recorder.seen] == [
        ("x", 4, net.in_neighbors), ("y", 5, net.in_neighbors)]
    np.testing.assert_array_equal(recorder.seen[0][3], got)
    np.testing.assert_array_equal(recorder.seen[1][3], got_nb)
    net.free()


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("kind,directed", [("ring", False), ("complete", False),
                                           ("erdos-renyi", False), ("star", False),
                                           ("ring", True)])
def test_channel_delivers_what_broadcast_delivers(comm, kind, directed, persistent, channel_path):
    _, net = make_network(comm, kind, directed=directed)
    with channel_path(net, persistent):
        channel = net.broadcast_channel("x", 5, buffers=2)
    assert channel.persistent == persistent
    releases = [Release.public(send) for send in channel.sends]
    for n in range(6):  # alternating buffers, new contents every round
        send = channel.sends[n % 2]
        send[:] = np.arange(5) + 100 * comm.rank + 1000 * n
        got = channel.exchange(releases[n % 2])
        expected = net.broadcast(Release.public(send.copy()), "check")
        np.testing.assert_array_equal(got, expected)
        for row, source in zip(got, net.in_neighbors):
            np.testing.assert_array_equal(row, np.arange(5) + 100 * source + 1000 * n)
    net.free()


@pytest.mark.mpi(min_size=2)
def test_channel_books_and_shows_every_exchange(comm):
    _, net = make_network(comm, "erdos-renyi", seed=5)
    ledger = Ledger(comm.rank, net.out_neighbors, 1e-5)
    net.add_listener(ledger)
    recorder = Recorder()
    net.receive_listeners.append(recorder)
    channel = net.broadcast_channel("c", 2, buffers=2)
    for n in range(5):
        net.round = n
        channel.sends[n % 2][:] = [comm.rank, n]
        got = channel.exchange(Release.nonprivate(channel.sends[n % 2]))
        np.testing.assert_array_equal(recorder.seen[-1][3], got)
    assert [(p, r, s) for p, r, s, _ in recorder.seen] == [
        ("c", n, net.in_neighbors) for n in range(5)]
    assert all(ledger.links[v].nonprivate == 5 for v in net.out_neighbors)
    net.free()

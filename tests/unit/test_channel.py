"""BroadcastChannel in one process: what it accepts, what it books, and its MPI-3 fallback.

The multi-rank behaviour (delivery, metered bytes on every link) is in tests/mpi.
"""
from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpi_privopt.bench import persistent_collectives
from mpi_privopt.network import BroadcastChannel, Network
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release


class Refuse:
    """A send guard that refuses everything (an exhausted budget)."""

    def admit(self, outgoing, phase):
        raise RuntimeError(f"refused {len(outgoing)} release(s) in phase {phase}")


@pytest.fixture
def net():
    network = Network(MPI.COMM_SELF, [], [])
    yield network
    network.free()


def test_a_channel_owns_fixed_buffers_and_sets_up_a_persistent_request(net):
    channel = net.broadcast_channel("x", 4, buffers=2)
    # persistent where the library has MPI-4 persistent collectives (not Open MPI 4.1)
    assert isinstance(channel, BroadcastChannel)
    assert channel.persistent == persistent_collectives(MPI.COMM_SELF)
    assert [s.shape for s in channel.sends] == [(4,), (4,)]
    assert channel.sends[0] is not channel.sends[1]
    assert channel.received.shape == (0, 4)
    other = net.broadcast_channel("y", (2, 3), dtype=np.float32)
    assert other.sends[0].shape == (2, 3) and other.sends[0].dtype == np.float32
    assert other.received.shape == (0, 2, 3)


def test_only_a_release_of_the_channels_own_buffer_goes_out(net):
    channel = net.broadcast_channel("x", 4)
    send = channel.sends[0]
    with pytest.raises(TypeError, match="Release"):
        channel.exchange(send)
    for foreign in (send.copy(), send[:], np.zeros(4)):
        with pytest.raises(ValueError, match="own buffers"):
            channel.exchange(Release.public(foreign))
    assert "x" not in net.meter.by_phase                  # nothing was sent


def test_every_exchange_is_metered_and_booked(net):
    ledger = Ledger(0, [], 1e-5)
    net.add_listener(ledger)
    channel = net.broadcast_channel("x", 4, buffers=2)
    releases = [Release.nonprivate(s) for s in channel.sends]
    for n in range(5):
        assert channel.exchange(releases[n % 2]) is channel.received
    counters = net.meter.counters("x")
    assert counters.all_messages == 5 and counters.all_bytes == 5 * 4 * 8
    assert ledger.total.releases == ledger.total.nonprivate == 5


class NeighbourGone(Exception):
    """What a wait that never completes ends with (a stall, a killed neighbour)."""


def _failing_wait(request, status=None):
    raise NeighbourGone


class _NeverDone:
    """A persistent request whose exchange never completes."""

    def Start(self):  # noqa: N802 (the mpi4py names)
        pass

    def Test(self, status=None):  # noqa: N802
        return False

    def Free(self):  # noqa: N802
        pass


@pytest.mark.parametrize("via", ["channel", "broadcast"])
def test_a_release_is_booked_before_it_can_leave(net, monkeypatch, via):
    # a release MPI may already have delivered stays booked when its wait fails
    import mpi_privopt.network.channels as channels
    import mpi_privopt.network.dist_graph as dist_graph
    ledger = Ledger(0, [], 1e-5)
    net.add_listener(ledger)
    channel = net.broadcast_channel("x", 4)
    release = Release.nonprivate(channel.sends[0])
    channel.exchange(release)                    # once through (the request started once)
    monkeypatch.setattr(channels, "wait_exchange", _failing_wait)
    monkeypatch.setattr(dist_graph, "wait_exchange", _failing_wait)
    channel.free()
    channel._requests = [_NeverDone()]
    with pytest.raises(NeighbourGone):
        if via == "channel":
            channel.exchange(release)
        else:
            net.broadcast(release, "x", out=np.empty((0, 4)))
    counters = net.meter.counters("x")
    assert counters.all_messages == 2 and counters.all_bytes == 2 * 4 * 8
    assert ledger.total.releases == ledger.total.nonprivate == 2


def test_a_guard_refuses_before_anything_is_sent(net):
    channel = net.broadcast_channel("x", 3)
    net.guards.append(Refuse())
    with pytest.raises(RuntimeError, match="refused 1 release"):
        channel.exchange(Release.public(channel.sends[0]))
    assert "x" not in net.meter.by_phase


def test_without_persistent_collectives_the_channel_falls_back_to_the_blocking_call(
        net, as_mpi3):
    with as_mpi3(net):
        channel = net.broadcast_channel("x", 3, buffers=2)
    assert not channel.persistent
    for n in range(3):
        channel.exchange(Release.public(channel.sends[n % 2]))
    assert net.meter.counters("x").all_messages == 3


def test_free_releases_the_requests(net):
    channel = net.broadcast_channel("x", 3)
    net.free()
    assert not channel.persistent
    net.free()                                            # twice is harmless


# -- what an algorithm asks for: outgoing, last_sent, mix, average, wrap ----------------------

def test_the_channel_keeps_its_double_buffering_to_itself(net):
    channel = net.broadcast_channel("x", 3, buffers=2)
    assert channel.outgoing is not channel.last_sent
    np.testing.assert_array_equal(channel.last_sent, 0.0)     # a zero initial message
    seen = []
    for n in range(4):
        outgoing = channel.outgoing
        outgoing[:] = n
        channel.exchange(Release.public(outgoing))
        assert channel.last_sent is outgoing                   # what was sent stays readable
        assert channel.outgoing is not outgoing                # the next one goes elsewhere
        np.testing.assert_array_equal(channel.last_sent, n)
        seen.append(id(outgoing))
    assert len(set(seen)) == 2 and seen[0] == seen[2]          # two fixed buffers, alternating
    single = net.broadcast_channel("y", 3)
    assert single.outgoing is single.last_sent is single.sends[0]
    single.exchange(Release.public(single.outgoing))
    assert single.outgoing is single.last_sent


def test_mix_sends_and_returns_the_weighted_average(net):
    channel = net.broadcast_channel("x", 3, buffers=2)
    channel.outgoing[:] = [1.0, 2.0, 4.0]
    # no neighbours in one process: the average is the own weighted term
    mixed = channel.mix(Release.public(channel.outgoing), 0.25, np.zeros(0))
    np.testing.assert_array_equal(mixed, [0.25, 0.5, 1.0])
    assert mixed is not channel.last_sent                      # a new array, not a buffer
    assert net.meter.counters("x").all_messages == 1
    np.testing.assert_array_equal(channel.average(0.5, np.zeros(0)), [0.5, 1.0, 2.0])
    assert net.meter.counters("x").all_messages == 1           # average sends nothing


def test_wrapped_buffers_follow_the_outgoing_one_without_new_releases(net):
    ledger = Ledger(0, [], 1e-5)
    net.add_listener(ledger)
    channel = net.broadcast_channel("x", 2, buffers=2)
    assert channel.outgoing_release is None
    channel.wrap(lambda buffer: Release.nonprivate(buffer, "clear"))
    made = set()
    for n in range(5):
        release = channel.outgoing_release
        assert release.payload is channel.outgoing and release.event.note == "clear"
        made.add(id(release))
        channel.mix(release, 1.0, np.zeros(0))
    assert len(made) == 2                                       # one release per buffer
    assert ledger.total.nonprivate == 5


def test_mix_and_average_fall_back_like_exchange(net, as_mpi3):
    with as_mpi3(net):
        channel = net.broadcast_channel("x", 2, buffers=2)
    assert not channel.persistent
    channel.outgoing[:] = [3.0, 5.0]
    np.testing.assert_array_equal(channel.mix(Release.public(channel.outgoing), 2.0,
                                              np.zeros(0)), [6.0, 10.0])
    np.testing.assert_array_equal(channel.last_sent, [3.0, 5.0])

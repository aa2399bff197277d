"""BroadcastChannel in one process: what it accepts, what it books, and its MPI-3 fallback.

The multi-rank behaviour (delivery, metered bytes on every link) is in tests/mpi.
"""
from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

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
    assert isinstance(channel, BroadcastChannel) and channel.persistent
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

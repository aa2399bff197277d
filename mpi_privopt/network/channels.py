"""Exchanges in flight and repeated: :class:`PendingExchange` (a nonblocking call's
handle) and :class:`BroadcastChannel` (a broadcast on fixed buffers, run as an MPI-4
persistent neighbour allgather).

Both are made by :class:`~mpi_privopt.network.dist_graph.Network` and wait through
:func:`~mpi_privopt.network.wait.wait_exchange`.
"""
from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter

import numpy as np
from mpi4py import MPI

from ..privacy.release import Release
from .protocols import payload_of
from . import traffic
from .traffic import TrafficMeter
from .wait import wait_exchange, wait_sleeping


class PendingExchange:
    """A nonblocking exchange in flight; :meth:`wait` completes it and returns the data."""

    __slots__ = ("_request", "_out", "_meter", "_phase", "_links", "_keep", "_on_done")

    def __init__(self, request: MPI.Request, out: np.ndarray | None, meter: TrafficMeter,
                 phase: str, links: Sequence[int] | None, keep: object = None,
                 on_done=None) -> None:
        self._request = request
        self._out = out
        self._meter = meter
        self._phase = phase
        # links=None: the time belongs to all out-links; [] marks a receive.
        self._links = links
        # A send buffer MPI still reads from must stay alive until completion.
        self._keep = keep
        # Shows received data to the receive listeners once it has arrived.
        self._on_done = on_done

    def wait(self, *, sleeping: bool = False) -> np.ndarray | None:
        """Block until the exchange is complete; return the receive buffer.

        An exchange spins briefly, then sleeps (:func:`wait_exchange`);
        ``sleeping=True`` sleeps from the first failed test (:func:`wait_sleeping`, for a
        wait that is expected to be long).
        """
        start = perf_counter()
        if sleeping:
            wait_sleeping(self._request)
        else:
            wait_exchange(self._request)
        elapsed = perf_counter() - start
        if self._links == []:
            self._meter.record_receive(self._phase, elapsed)
        else:
            self._meter.record_time(self._phase, elapsed, self._links)
        self._keep = None
        if self._on_done is not None:
            self._on_done(self._out)
            self._on_done = None
        return self._out

    def test(self) -> bool:
        """True when the exchange has completed (never loop on this: call :meth:`wait`)."""
        return bool(self._request.Test())


def _started(request):
    """``request`` after its ``Start`` (what :meth:`LinkTimer.timed` waits on)."""
    request.Start()
    return request


class _OneOffAllgather:
    """A persistent request's ``Start``/``Test`` done by a one-off ``Ineighbor_allgather``
    on the same buffers (MPI-3 libraries: no persistent collectives)."""

    __slots__ = ("_comm", "_send", "_received", "_request")

    def __init__(self, comm: MPI.Topocomm, send: np.ndarray, received: np.ndarray) -> None:
        self._comm, self._send, self._received = comm, send, received
        self._request = MPI.REQUEST_NULL

    def Start(self) -> None:  # noqa: N802 (the mpi4py name)
        self._request = self._comm.Ineighbor_allgather(self._send, self._received)

    def Test(self, status: MPI.Status | None = None) -> bool:  # noqa: N802
        return self._request.Test(status)

    def Wait(self, status: MPI.Status | None = None) -> None:  # noqa: N802
        self._request.Wait(status)

    def Free(self) -> None:  # noqa: N802
        pass


class BroadcastChannel:
    """A broadcast repeated on fixed buffers, run as an MPI-4 persistent neighbour allgather.

    Made by :meth:`Network.broadcast_channel`. The channel owns its send buffers and its
    receive buffer, so an algorithm asks for what the method needs and never swaps
    buffers itself::

        compute the next message into  channel.outgoing     (or: mechanism.release(..., out=channel.outgoing))
        channel.exchange(release)   -> received              row i from in_neighbors[i]
        channel.mix(release, a_kk, a_k) -> a_kk * sent + a_k @ received   (send, then average)
        channel.average(a_kk, a_k)  -> the same average of the last exchange (no send)
        channel.last_sent                                    what the last exchange sent

    With two buffers (``buffers=2``, double buffering) the message sent last stays
    readable in :attr:`last_sent` while the next one is computed into :attr:`outgoing`:
    each exchange makes the buffer it sent :attr:`last_sent` and the other one
    :attr:`outgoing`. Before the first exchange :attr:`last_sent` is a zero buffer (a
    method whose state starts at 0 reads it as its initial message). With one buffer
    both name it.

    Because the buffers never change, the neighbour allgather is set up once
    (``MPI_Neighbor_allgather_init``) and each exchange only starts and completes it:
    MPICH then skips building the collective's schedule on every call, which is most of
    a small exchange's cost (see docs/performance.md). Metering, booking, guards and
    receive listeners are exactly those of :meth:`Network.broadcast`. With an MPI library
    older than MPI 4 (no persistent collectives) the channel falls back to a one-off
    ``Ineighbor_allgather`` per exchange on the same buffers, waited on alike.
    """

    __slots__ = ("_net", "phase", "sends", "received", "outgoing", "last_sent",
                 "outgoing_release", "_index", "_following", "_wrapped", "_requests",
                 "_nbytes", "_counters")

    def __init__(self, net, phase: str, shape: tuple[int, ...], dtype,
                 buffers: int) -> None:
        if buffers < 1:
            raise ValueError(f"a channel needs at least one send buffer, got {buffers}")
        self._net = net
        self.phase = phase
        #: the send buffers (a release must wrap one of them itself, not a copy or a view)
        self.sends = tuple(np.zeros(shape, dtype=dtype) for _ in range(buffers))
        #: row i holds what ``in_neighbors[i]`` sent in the last exchange
        self.received = np.zeros((net.n_in,) + tuple(shape), dtype=dtype)
        #: where to write the next message
        self.outgoing = self.sends[0]
        #: what the last exchange sent (a zero buffer before the first)
        self.last_sent = self.sends[-1]
        #: the release of :attr:`outgoing` when the buffers are wrapped (:meth:`wrap`)
        self.outgoing_release: Release | None = None
        self._wrapped: tuple[Release, ...] | None = None
        # The sends live as long as the channel, so no other object can share their ids.
        self._index = {id(send): i for i, send in enumerate(self.sends)}
        # after sending buffer i, buffer _following[i] is the outgoing one
        self._following = tuple((i + 1) % buffers for i in range(buffers))
        self._nbytes = self.sends[0].nbytes
        self._counters = None  # the phase's meter counters, made by the first exchange
        self._requests = []
        self.reopen()

    @property
    def persistent(self) -> bool:
        """Whether exchanges run as a persistent collective (False: MPI-3 fallback)."""
        requests = self._requests
        return bool(requests) and not isinstance(requests[0], _OneOffAllgather)

    def wrap(self, make) -> None:
        """Wrap each send buffer in a release once, for a message whose kind never changes.

        ``make(buffer)`` returns the release of ``buffer`` (e.g. ``Release.nonprivate``);
        from then on :attr:`outgoing_release` is the release of :attr:`outgoing`, so a
        method that sends its state in the clear makes no release per iteration.
        """
        self._wrapped = tuple(make(send) for send in self.sends)
        self.outgoing_release = self._wrapped[self._index[id(self.outgoing)]]

    def exchange(self, release: Release) -> np.ndarray:
        """Send ``release`` to every out-neighbour; return :attr:`received`.

        ``release.payload`` must be one of the channel's buffers itself (normally
        :attr:`outgoing`). Afterwards it is :attr:`last_sent`, and :attr:`outgoing` is the
        next buffer.
        """
        payload = release.payload if release.__class__ is Release else payload_of(release)
        index = self._index.get(id(payload))
        if index is None:
            raise ValueError(
                f"channel {self.phase!r} sends only from its own buffers: compute the "
                "message into channel.outgoing and wrap that array in the release")
        net = self._net
        if net.guards:
            net._admit([(release, net.out_neighbors)], self.phase)
        request = self._requests[index]
        counters = self._counters
        if counters is None:
            counters = self._counters = net.meter.counters(self.phase)
        every = traffic.every_n  # every N-th exchange is timed per in-link
        timed = every and not counters.all_messages % every
        # booked before the release can leave, so a wait that ends in an exception
        # cannot leave it out of the ledger
        net._sent_broadcast(release, self.phase, counters, self._nbytes)
        start = perf_counter()
        if timed:
            net.link_timer.timed(net.comm, self.phase, lambda: _started(request))
        else:
            request.Start()
            # a message already there is taken without the wait's two calls
            if not request.Test():
                wait_exchange(request)
        net._completed_broadcast(self.received, self.phase, counters, perf_counter() - start)
        following = self._following[index]
        self.last_sent = payload
        self.outgoing = self.sends[following]
        if self._wrapped is not None:
            self.outgoing_release = self._wrapped[following]
        return self.received

    def mix(self, release: Release, self_weight: float,
            neighbour_weights: np.ndarray) -> np.ndarray:
        """Send ``release``, then return the weighted neighbour average
        ``self_weight * payload + neighbour_weights @ received``.

        ``neighbour_weights[i]`` weighs ``in_neighbors[i]`` (e.g. a row of Metropolis
        weights, :meth:`~mpi_privopt.agent.Agent.mixing_row`).
        """
        received = self.exchange(release)
        return self_weight * release.payload + neighbour_weights @ received

    def average(self, self_weight: float, neighbour_weights: np.ndarray) -> np.ndarray:
        """The weighted average of the last exchange, ``self_weight * last_sent +
        neighbour_weights @ received``, without sending (zero before the first exchange)."""
        return self_weight * self.last_sent + neighbour_weights @ self.received

    def free(self) -> None:
        """Release the persistent requests (done by :meth:`Network.free`)."""
        for request in self._requests:
            request.Free()
        self._requests = []

    # -- checkpoints (mpi_privopt/services/checkpoint.py) --------------------------------

    def __getstate__(self) -> dict:
        # Saved: the buffers (which one is outgoing, which last sent, by identity), the
        # wrapped releases, the counters. Not saved: MPI requests and the id-keyed index,
        # which belong to this process; reopen() rebuilds them.
        return {name: getattr(self, name) for name in self.__slots__
                if name not in ("_requests", "_index")}

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)
        self._index = {id(send): i for i, send in enumerate(self.sends)}
        self._requests = []

    def reopen(self) -> None:
        """Set up the persistent requests again on this channel's (restored) buffers.

        Collective, like the channel's creation: every agent reopens its channels in the
        same order (:meth:`Network.reopen`).
        """
        net = self._net
        try:
            self._requests = [net.comm.Neighbor_allgather_init(send, self.received)
                              for send in self.sends]
        except NotImplementedError:  # an MPI-3 library: no persistent collectives
            self._requests = [_OneOffAllgather(net.comm, send, self.received)
                              for send in self.sends]

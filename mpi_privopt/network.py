"""One agent's view of the network: neighbour-only messaging on an MPI dist-graph.

The communicator is built with ``Create_dist_graph_adjacent`` from the agent's in- and
out-neighbours, with rank == agent id (no reordering). Every way to send goes to
out-neighbours only: the neighbour collectives address exactly the graph's links, and the
point-to-point calls refuse a rank that is not a neighbour. So a message to a non-neighbour
cannot be expressed through this API.

Everything sent is a :class:`~mpi_privopt.privacy.release.Release`. The network reads only
its payload, meters the bytes and the time on each link, and hands the release to its
listeners (the privacy ledger), so traffic and privacy are booked by the same send path.
Receive listeners see every block that arrives (used to model a curious neighbour).

Hot-path rules: payloads are contiguous numpy buffers handed to the upper-case
(buffer-based) mpi4py calls, never pickled; receive buffers can be passed in (``out=``) and
reused; waiting is done inside MPI, except where a rank may wait long (a token receive:
see :func:`wait_sleeping`). A broadcast repeated
every iteration can go through a :class:`BroadcastChannel` (:meth:`Network.broadcast_channel`):
fixed buffers and an MPI-4 persistent neighbour collective set up once, which is cheaper
per exchange than the one-off call; it offers what a method asks for (an exchange, a
weighted neighbour average ``mix``) and keeps its double buffering to itself.
"""
from __future__ import annotations

import zlib
from collections.abc import Sequence
from time import perf_counter, sleep
from typing import Protocol

import numpy as np
from mpi4py import MPI

from .privacy.release import Release
from .traffic import TrafficMeter


class ReleaseListener(Protocol):
    """Something told about every release that leaves the agent (the privacy ledger)."""

    def on_release(self, release: Release, receivers: Sequence[int], phase: str, round: int) -> None:
        ...


class ReceiveListener(Protocol):
    """Something told about every block an agent receives (an honest-but-curious observer)."""

    def on_receive(self, data: np.ndarray, sources: Sequence[int], phase: str, round: int) -> None:
        ...


class SendGuard(Protocol):
    """Something that may refuse a send before anything leaves the agent (a budget)."""

    def admit(self, outgoing: Sequence[tuple[Release, Sequence[int]]], phase: str) -> None:
        ...


class NotANeighbourError(ValueError):
    """Raised when a point-to-point message names a rank that is not a neighbour."""


def _phase_tag(phase: str) -> int:
    # Point-to-point messages of different phases must not match each other; every rank
    # derives the same tag from the phase name, so no agreement round is needed.
    return zlib.crc32(phase.encode()) % 32000 + 1


#: tags per chain: chain c of a phase uses tag ``c * _CHAIN_STRIDE + _phase_tag(phase)``
_CHAIN_STRIDE = 32768

#: longest sleep (seconds) between two tests of a request in :func:`wait_sleeping`
BACKOFF_CAP = 1e-3
# The first sleep; doubled after each failed test, so a message that arrives soon is
# seen soon, and a long wait costs one test per BACKOFF_CAP. 31 us, not 1 us: Linux sleeps
# at least its ~60 us timer slack anyway, and the five extra wake-ups of a start at 1 us
# cost a 2 ms wait 4.3-5.0% of a core against 2.5-3.6% (tests/bench/wait_policy.py,
# docs/performance.md "Waiting"), without seeing the message sooner.
_BACKOFF_FIRST = BACKOFF_CAP / 32
_BACKOFF_GROWTH = 2.0


def wait_sleeping(request: MPI.Request, status: MPI.Status | None = None) -> None:
    """Complete ``request`` without keeping a core busy.

    MPICH's blocking calls (``Wait``, ``Recv``) poll at 100% CPU. That is right for a
    short exchange, but with a token K - 1 ranks wait at any time and the machine may
    have fewer cores than ranks. So: test the request, and while it is not complete sleep,
    doubling the sleep from ``BACKOFF_CAP / 32`` up to ``BACKOFF_CAP`` (the backoff of
    ``mpi4py.futures``, started where the kernel's timer slack makes shorter sleeps moot). A rank that waits long then costs one test per millisecond, and
    a message is seen at most ``BACKOFF_CAP`` after it arrives (docs/token.md has the
    measured CPU time and latency).
    """
    if request.Test(status):
        return
    pause = _BACKOFF_FIRST
    while not request.Test(status):
        sleep(pause)
        pause = min(_BACKOFF_GROWTH * pause, BACKOFF_CAP)


_max_chain: int | None = None


def max_chain() -> int:
    """The largest chain number the MPI library's tag range allows (16383 with MPICH)."""
    global _max_chain
    if _max_chain is None:
        _max_chain = (int(MPI.COMM_WORLD.Get_attr(MPI.TAG_UB)) - 32000) // _CHAIN_STRIDE
    return _max_chain


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

        ``sleeping=True`` waits with :func:`wait_sleeping` instead of inside MPI (for a
        wait that may be long, where MPI's polling would keep a core busy).
        """
        start = perf_counter()
        if sleeping:
            wait_sleeping(self._request)
        else:
            self._request.Wait()
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


class _BlockingAllgather:
    """A persistent request's ``Start``/``Wait`` done by a blocking call (MPI-3 libraries)."""

    __slots__ = ("_comm", "_send", "_received")

    def __init__(self, comm: MPI.Topocomm, send: np.ndarray, received: np.ndarray) -> None:
        self._comm, self._send, self._received = comm, send, received

    def Start(self) -> None:  # noqa: N802 (the mpi4py name)
        self._comm.Neighbor_allgather(self._send, self._received)

    def Wait(self) -> None:  # noqa: N802
        pass

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
    older than MPI 4 (no persistent collectives) the channel falls back to the blocking
    ``Neighbor_allgather`` on the same buffers.
    """

    __slots__ = ("_net", "phase", "sends", "received", "outgoing", "last_sent",
                 "outgoing_release", "_index", "_following", "_wrapped", "_requests",
                 "_nbytes", "_counters")

    def __init__(self, net: "Network", phase: str, shape: tuple[int, ...], dtype,
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
        return bool(requests) and not isinstance(requests[0], _BlockingAllgather)

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
        payload = release.payload if release.__class__ is Release else Network._payload(release)
        index = self._index.get(id(payload))
        if index is None:
            raise ValueError(
                f"channel {self.phase!r} sends only from its own buffers: compute the "
                "message into channel.outgoing and wrap that array in the release")
        net = self._net
        if net.guards:
            net._admit([(release, net.out_neighbors)], self.phase)
        request = self._requests[index]
        start = perf_counter()
        request.Start()
        request.Wait()
        elapsed = perf_counter() - start
        counters = self._counters
        if counters is None:
            counters = self._counters = net.meter.counters(self.phase)
        net._account_broadcast(release, self.received, self.phase, counters, self._nbytes,
                               elapsed)
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
            self._requests = [_BlockingAllgather(net.comm, send, self.received)
                              for send in self.sends]


class Network:
    """Neighbour-only communication of one agent, with a traffic meter.

    Parameters
    ----------
    comm : MPI.Intracomm
        The communicator whose ranks are the agents (normally ``COMM_WORLD``).
    in_neighbors, out_neighbors : sequence of int
        Agents this one receives from and sends to, sorted. Received blocks are stacked
        in ``in_neighbors`` order; scatter payloads are given in ``out_neighbors`` order.

    Attributes
    ----------
    round : int
        The iteration the engine is in; listeners book releases under it.
    meter : TrafficMeter
        Outgoing messages, bytes and seconds per link and phase.
    """

    def __init__(self, comm: MPI.Intracomm, in_neighbors: Sequence[int],
                 out_neighbors: Sequence[int]) -> None:
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.in_neighbors = [int(v) for v in in_neighbors]
        self.out_neighbors = [int(v) for v in out_neighbors]
        self.comm = comm.Create_dist_graph_adjacent(
            self.in_neighbors, self.out_neighbors, reorder=False)
        self._out_index = {v: i for i, v in enumerate(self.out_neighbors)}
        self._n_in = len(self.in_neighbors)
        self._in_set = frozenset(self.in_neighbors)
        self.meter = TrafficMeter(self.out_neighbors)
        # One receiver tuple per out-neighbour, reused by every single-link booking, so
        # listeners can recognise a receiver set by identity instead of rebuilding it.
        self._single = {v: (v,) for v in self.out_neighbors}
        self._listeners: list[ReleaseListener] = []
        # What a broadcast calls to book its release with every listener: made once
        # (see _broadcast_books), since a broadcast always goes to the same receivers.
        self._books: tuple | None = None
        self.receive_listeners: list[ReceiveListener] = []
        self.guards: list[SendGuard] = []
        self.round = 0
        self._channels: list[BroadcastChannel] = []
        # The phase behind each point-to-point tag used so far (two phases whose names
        # hash to one tag would match each other's messages: refused, see message_tag).
        self._tag_phases: dict[int, str] = {}

    @property
    def listeners(self) -> tuple[ReleaseListener, ...]:
        """Who is told of every release (:meth:`add_listener` adds one)."""
        return tuple(self._listeners)

    def add_listener(self, listener: ReleaseListener) -> None:
        """Tell ``listener`` of every release from now on (the privacy ledger, a recorder)."""
        self._listeners.append(listener)
        self._books = None

    def _broadcast_books(self) -> tuple:
        """One booking function per listener for releases to all out-neighbours.

        A listener with a ``booker(receivers)`` method hands out a function that books a
        release to those receivers directly (the ledger: the add of the receivers'
        group), which saves the per-release lookup of ``on_release``. When some
        listener has none, the result is empty and broadcasts call ``on_release``.
        """
        if self._books is None:
            listeners = self._listeners
            self._books = (tuple(l.booker(self.out_neighbors) for l in listeners)
                           if all(hasattr(l, "booker") for l in listeners) else ())
        return self._books

    @property
    def n_in(self) -> int:
        return self._n_in

    @property
    def n_out(self) -> int:
        return len(self.out_neighbors)

    # -- helpers -----------------------------------------------------------------------

    @staticmethod
    def _payload(release: Release) -> np.ndarray:
        if not isinstance(release, Release):
            raise TypeError(
                "the network sends only Release objects; wrap the array with a mechanism, "
                "Release.public(...) or Release.nonprivate(...)")
        return release.payload

    def _admit(self, outgoing: Sequence[tuple[Release, Sequence[int]]], phase: str) -> None:
        for guard in self.guards:
            guard.admit(outgoing, phase)

    def _book(self, release: Release, receivers: Sequence[int], phase: str) -> None:
        round_ = self.round
        for listener in self._listeners:
            listener.on_release(release, receivers, phase, round_)

    def _observe(self, data: np.ndarray, sources: Sequence[int], phase: str,
                 round_: int | None = None) -> None:
        round_ = self.round if round_ is None else round_
        for listener in self.receive_listeners:
            listener.on_receive(data, sources, phase, round_)

    def _observer_for(self, sources: Sequence[int], phase: str):
        """What a nonblocking exchange calls with its data once it has arrived."""
        if not self.receive_listeners:
            return None
        round_ = self.round  # the round it was posted in, not the one it completes in
        return lambda data: self._observe(data, sources, phase, round_)

    def _gather_buffer(self, payload: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        if out is None:
            return np.empty((self._n_in,) + payload.shape, dtype=payload.dtype)
        # Cheap checks only: this runs on every exchange. MPI itself refuses a
        # non-contiguous buffer.
        if out.size != self._n_in * payload.size or out.dtype != payload.dtype:
            raise ValueError(f"out must be a {payload.dtype} array of shape "
                             f"{(self._n_in,) + payload.shape}")
        return out

    def _stack(self, releases: Sequence[Release]) -> np.ndarray:
        if len(releases) != self.n_out or self.n_out == 0:
            raise ValueError(f"scatter needs one release per out-neighbour "
                             f"({self.n_out}), got {len(releases)}")
        return np.stack([self._payload(r) for r in releases])

    def _book_each(self, releases: Sequence[Release], phase: str) -> None:
        single = self._single
        for release, dest in zip(releases, self.out_neighbors):
            self._book(release, single[dest], phase)

    def _link(self, dest: int) -> int:
        try:
            return self._out_index[dest]
        except KeyError:
            raise NotANeighbourError(
                f"agent {self.rank} cannot send to agent {dest}: it is not an out-neighbour "
                f"(out-neighbours: {self.out_neighbors})") from None

    def message_tag(self, phase: str, chain: int = 0) -> int:
        """The MPI tag of point-to-point messages of ``phase`` on chain ``chain``.

        Messages match only within one phase and one chain. Refuses (ValueError) a chain
        beyond the MPI library's tag range, and a phase whose tag another phase already
        used on this agent.
        """
        tag = _phase_tag(phase)
        if chain:
            if not 0 < chain <= max_chain():
                raise ValueError(f"chain {chain} is out of range: the MPI library allows "
                                 f"chains 0..{max_chain()}")
            tag += chain * _CHAIN_STRIDE
        seen = self._tag_phases.setdefault(tag, phase)
        if seen != phase:
            raise ValueError(f"point-to-point phases {seen!r} and {phase!r} share a message "
                             "tag and would receive each other's messages; rename one")
        return tag

    def _check_source(self, source: int) -> None:
        if source not in self._in_set:
            raise NotANeighbourError(
                f"agent {self.rank} cannot receive from agent {source}: it is not an "
                f"in-neighbour (in-neighbours: {self.in_neighbors})")

    def _account_broadcast(self, release: Release, out: np.ndarray, phase: str,
                           counters, nbytes: int, elapsed: float) -> None:
        """Meter, book and show a completed broadcast (shared by broadcast and channels).

        ``counters``: the meter's counters of ``phase``, looked up by the caller (a
        channel keeps them).
        """
        # TrafficMeter.record_all, written out: one call less on every iteration
        counters.all_messages += 1
        counters.all_bytes += nbytes
        counters.all_seconds += elapsed
        books = self._books
        if books is None:
            books = self._broadcast_books()
        if books:
            for book in books:
                book(release)
        elif self._listeners:
            self._book(release, self.out_neighbors, phase)
        if self.receive_listeners:
            self._observe(out, self.in_neighbors, phase)

    # -- one message to all out-neighbours ---------------------------------------------

    def broadcast(self, release: Release, phase: str, out: np.ndarray | None = None) -> np.ndarray:
        """Send one release to every out-neighbour; receive one from every in-neighbour.

        Returns an array of shape ``(n_in, *payload.shape)``, row i from ``in_neighbors[i]``.
        """
        # The hot path of every iteration, so the helpers are inlined: the checks below
        # are the cheap forms of _payload and _gather_buffer, which run only when a
        # cheap check fails (and then raise, or allocate the buffer).
        payload = release.payload if release.__class__ is Release else self._payload(release)
        if (out is None or out.dtype is not payload.dtype
                or out.size != self._n_in * payload.size):
            out = self._gather_buffer(payload, out)
        receivers = self.out_neighbors
        if self.guards:
            self._admit([(release, receivers)], phase)
        start = perf_counter()
        self.comm.Neighbor_allgather(payload, out)
        self._account_broadcast(release, out, phase,
                                self.meter.by_phase.get(phase) or self.meter.counters(phase),
                                payload.nbytes, perf_counter() - start)
        return out

    def broadcast_channel(self, phase: str, shape: int | tuple[int, ...],
                          dtype: np.dtype | type = np.float64,
                          buffers: int = 1) -> BroadcastChannel:
        """A :class:`BroadcastChannel` for a broadcast repeated every iteration.

        Collective: every agent must make the same channels in the same order (an
        algorithm's ``__init__`` does), since MPI sets up persistent collectives together.

        Parameters
        ----------
        phase : str
            The phase its exchanges are metered and booked under.
        shape : int or tuple of int
            The shape of one message.
        dtype : numpy dtype, optional
            The message's element type (float64).
        buffers : int, optional
            How many send buffers: 2 keeps the last message readable in
            ``channel.last_sent`` while the next one is written into ``channel.outgoing``.
        """
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
        channel = BroadcastChannel(self, phase, shape, np.dtype(dtype), buffers)
        self._channels.append(channel)
        return channel

    def ibroadcast(self, release: Release, phase: str, out: np.ndarray | None = None) -> PendingExchange:
        """Nonblocking :meth:`broadcast`; compute, then call ``.wait()`` for the data.

        The payload buffer must not change until the exchange completes.
        """
        payload = self._payload(release)
        out = self._gather_buffer(payload, out)
        if self.guards:
            self._admit([(release, self.out_neighbors)], phase)
        start = perf_counter()
        request = self.comm.Ineighbor_allgather(payload, out)
        self.meter.record_all(phase, payload.nbytes, perf_counter() - start)
        self._book(release, self.out_neighbors, phase)
        return PendingExchange(request, out, self.meter, phase, None, keep=payload,
                               on_done=self._observer_for(self.in_neighbors, phase))

    # -- a different message to each out-neighbour --------------------------------------

    def scatter(self, releases: Sequence[Release], phase: str,
                out: np.ndarray | None = None) -> np.ndarray:
        """Send ``releases[i]`` to ``out_neighbors[i]``; receive one block per in-neighbour.

        All payloads must have the same shape and dtype. Returns ``(n_in, *shape)``.
        """
        sendbuf = self._stack(releases)
        out = self._gather_buffer(sendbuf[0], out)
        if self.guards:
            self._admit([(r, (d,)) for r, d in zip(releases, self.out_neighbors)], phase)
        start = perf_counter()
        self.comm.Neighbor_alltoall(sendbuf, out)
        self.meter.record_all(phase, sendbuf[0].nbytes, perf_counter() - start)
        self._book_each(releases, phase)
        if self.receive_listeners:
            self._observe(out, self.in_neighbors, phase)
        return out

    def iscatter(self, releases: Sequence[Release], phase: str,
                 out: np.ndarray | None = None) -> PendingExchange:
        """Nonblocking :meth:`scatter`."""
        sendbuf = self._stack(releases)
        out = self._gather_buffer(sendbuf[0], out)
        if self.guards:
            self._admit([(r, (d,)) for r, d in zip(releases, self.out_neighbors)], phase)
        start = perf_counter()
        request = self.comm.Ineighbor_alltoall(sendbuf, out)
        self.meter.record_all(phase, sendbuf[0].nbytes, perf_counter() - start)
        self._book_each(releases, phase)
        return PendingExchange(request, out, self.meter, phase, None, keep=sendbuf,
                               on_done=self._observer_for(self.in_neighbors, phase))

    # -- one neighbour (a token that travels) ---------------------------------------------

    def send(self, dest: int, release: Release, phase: str, chain: int = 0) -> None:
        """Send a release to one out-neighbour.

        ``chain`` keeps independent tokens of one phase apart: a message matches only a
        receive of the same phase and chain.
        """
        link = self._link(dest)
        payload = self._payload(release)
        if self.guards:
            self._admit([(release, self._single[dest])], phase)
        start = perf_counter()
        self.comm.Send(payload, dest=dest, tag=self.message_tag(phase, chain))
        self.meter.record_link(phase, link, payload.nbytes, perf_counter() - start)
        self._book(release, self._single[dest], phase)

    def isend(self, dest: int, release: Release, phase: str, chain: int = 0) -> PendingExchange:
        """Nonblocking :meth:`send`."""
        link = self._link(dest)
        payload = self._payload(release)
        if self.guards:
            self._admit([(release, self._single[dest])], phase)
        start = perf_counter()
        request = self.comm.Isend(payload, dest=dest, tag=self.message_tag(phase, chain))
        self.meter.record_link(phase, link, payload.nbytes, perf_counter() - start)
        self._book(release, self._single[dest], phase)
        return PendingExchange(request, None, self.meter, phase, [link], keep=payload)

    def recv(self, source: int, out: np.ndarray, phase: str, chain: int = 0) -> np.ndarray:
        """Receive one message from in-neighbour ``source`` into ``out``."""
        self._check_source(source)
        start = perf_counter()
        self.comm.Recv(out, source=source, tag=self.message_tag(phase, chain))
        self.meter.record_receive(phase, perf_counter() - start)
        if self.receive_listeners:
            self._observe(out[np.newaxis], (source,), phase)
        return out

    def irecv(self, source: int, out: np.ndarray, phase: str, chain: int = 0) -> PendingExchange:
        """Nonblocking :meth:`recv`."""
        self._check_source(source)
        request = self.comm.Irecv(out, source=source, tag=self.message_tag(phase, chain))
        observe = self._observer_for((source,), phase)
        return PendingExchange(request, out, self.meter, phase, [],
                               on_done=None if observe is None else
                               (lambda data: observe(data[np.newaxis])))

    def recv_any(self, out: np.ndarray, phase: str, chain: int = 0) -> int:
        """Receive one message from whichever in-neighbour sends it (a token).

        Waits with :func:`wait_sleeping`, so a rank waiting for the token does not keep a
        core busy. The wait is recorded as receive time of ``phase``; receive listeners
        see the block with its source.

        Parameters
        ----------
        out : numpy.ndarray
            Receives the payload; the message must fill it exactly.
        phase : str
            Only a message sent under this phase ...
        chain : int
            ... and this chain matches.

        Returns
        -------
        int
            The sender's rank (an in-neighbour; anything else is refused).
        """
        status = MPI.Status()
        start = perf_counter()
        tag = self.message_tag(phase, chain)
        request = self.comm.Irecv(out, source=MPI.ANY_SOURCE, tag=tag)
        wait_sleeping(request, status)
        self.meter.record_receive(phase, perf_counter() - start)
        source = status.Get_source()
        self._check_source(source)
        if status.Get_count(MPI.BYTE) != out.nbytes:
            raise ValueError(f"agent {self.rank} received {status.Get_count(MPI.BYTE)} bytes "
                             f"from agent {source} in phase {phase!r}, expected {out.nbytes}")
        if self.receive_listeners:
            self._observe(out[np.newaxis], (source,), phase)
        return source

    def __getstate__(self) -> dict:
        # The broadcast bookers are closures made from the listeners (not picklable):
        # a restored network makes them again on its first broadcast.
        return {**self.__dict__, "_books": None}

    def reopen(self) -> None:
        """After a restore from a checkpoint: set up the channels' persistent requests
        again (collective: every agent restores the same channels in the same order)."""
        for channel in self._channels:
            channel.reopen()

    @property
    def collective_path(self) -> str:
        """How this agent's broadcast channels exchange: ``"persistent"`` (MPI-4
        ``Neighbor_allgather_init``), ``"blocking"`` (the MPI-3 fallback) or ``"none"``
        (no channel made since the last :meth:`free`)."""
        if not self._channels:
            return "none"
        return "persistent" if all(c.persistent for c in self._channels) else "blocking"

    def free(self) -> None:
        """Release the channels' persistent requests and the dist-graph communicator."""
        for channel in self._channels:
            channel.free()
        self._channels = []
        if self.comm != MPI.COMM_NULL:
            self.comm.Free()

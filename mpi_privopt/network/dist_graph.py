"""The :class:`Network`: one agent's neighbour-only messaging on an MPI dist-graph
communicator (the package's overview: :mod:`mpi_privopt.network`)."""
from __future__ import annotations

from collections.abc import Sequence
from time import perf_counter

import numpy as np
from mpi4py import MPI

from ..privacy.release import Release
from .channels import BroadcastChannel, PendingExchange
from .link_time import LinkTimer
from .protocols import (NotANeighbourError, ReceiveListener, ReleaseListener, SendGuard,
                        payload_of)
from .tags import CHAIN_STRIDE, max_chain, phase_tag
from .traffic import TrafficMeter
from .wait import wait_exchange, wait_sleeping


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
        self.meter = TrafficMeter(self.out_neighbors, self.in_neighbors)
        #: times sampled exchanges and token hops per in-link, into the meter
        self.link_timer = LinkTimer(self.comm, self.in_neighbors, self.out_neighbors,
                                    self.meter)
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

    _payload = staticmethod(payload_of)

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
        tag = phase_tag(phase)
        if chain:
            if not 0 < chain <= max_chain():
                raise ValueError(f"chain {chain} is out of range: the MPI library allows "
                                 f"chains 0..{max_chain()}")
            tag += chain * CHAIN_STRIDE
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

    def _sent_broadcast(self, release: Release, phase: str, counters, nbytes: int) -> None:
        """Meter and book a broadcast about to start (shared by broadcast and channels):
        booked before MPI has the send buffer, so a wait that ends in an exception cannot
        leave out of the ledger a release that may have been delivered.

        ``counters``: the meter's counters of the broadcast's phase, looked up by the
        caller (a channel keeps them).
        """
        # TrafficMeter.record_all, written out: one call less on every iteration
        counters.all_messages += 1
        counters.all_bytes += nbytes
        books = self._books
        if books is None:
            books = self._broadcast_books()
        if books:
            for book in books:
                book(release)
        elif self._listeners:
            self._book(release, self.out_neighbors, phase)

    def _completed_broadcast(self, out: np.ndarray, phase: str, counters,
                             elapsed: float) -> None:
        """Time a completed broadcast (``elapsed`` seconds in MPI) and show its received
        data ``out`` to the receive listeners."""
        counters.all_seconds += elapsed
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
        counters = self.meter.by_phase.get(phase) or self.meter.counters(phase)
        timed = self.link_timer.due(counters.all_messages)
        # booked before the release can leave (see BroadcastChannel.exchange)
        self._sent_broadcast(release, phase, counters, payload.nbytes)
        start = perf_counter()
        if timed:
            self.link_timer.timed(self.comm, phase,
                                  lambda: self.comm.Ineighbor_allgather(payload, out))
        else:
            wait_exchange(self.comm.Ineighbor_allgather(payload, out))
        elapsed = perf_counter() - start
        self._completed_broadcast(out, phase, counters, elapsed)
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
        self._book_each(releases, phase)  # before they can leave (BroadcastChannel.exchange)
        start = perf_counter()
        counters = self.meter.counters(phase)
        if self.link_timer.due(counters.all_messages):
            self.link_timer.timed(self.comm, phase,
                                  lambda: self.comm.Ineighbor_alltoall(sendbuf, out))
        else:
            wait_exchange(self.comm.Ineighbor_alltoall(sendbuf, out))
        self.meter.record_all(phase, sendbuf[0].nbytes, perf_counter() - start)
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
        self._book(release, self._single[dest], phase)  # before it can leave
        start = perf_counter()
        wait_exchange(self.comm.Isend(payload, dest=dest, tag=self.message_tag(phase, chain)))
        self.meter.record_link(phase, link, payload.nbytes, perf_counter() - start)

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
        wait_exchange(self.comm.Irecv(out, source=source, tag=self.message_tag(phase, chain)))
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
        # a message already there when the receive was posted arrived at an unknown time
        waited = not request.Test(status)
        if waited:
            wait_sleeping(request, status)
        now = perf_counter()
        #: when the last recv_any saw its message arrive, None when it was already there
        #: (a token hop's arrival time, mpi_privopt/network/link_time.py)
        self.arrived = now if waited else None
        self.meter.record_receive(phase, now - start)
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
        again (collective: every agent restores the same channels in the same order), and
        learn again which neighbours share this agent's clock (the restore may run on other
        machines)."""
        for channel in self._channels:
            channel.reopen()
        if "link_timer" not in self.__dict__:  # saved before link times were measured
            self.meter.in_neighbors = self.in_neighbors
            self.link_timer = LinkTimer(self.comm, self.in_neighbors, self.out_neighbors,
                                        self.meter)
        else:
            self.link_timer.agree_clocks(self.comm)

    @property
    def collective_path(self) -> str:
        """How this agent's broadcast channels exchange: ``"persistent"`` (MPI-4
        ``Neighbor_allgather_init``), ``"one-off"`` (the MPI-3 fallback: a one-off
        ``Ineighbor_allgather`` per exchange) or ``"none"``
        (no channel made since the last :meth:`free`)."""
        if not self._channels:
            return "none"
        return "persistent" if all(c.persistent for c in self._channels) else "one-off"

    def free(self) -> None:
        """Release the channels' persistent requests and the dist-graph communicator."""
        for channel in self._channels:
            channel.free()
        self._channels = []
        self.link_timer.free()
        if self.comm != MPI.COMM_NULL:
            self.comm.Free()

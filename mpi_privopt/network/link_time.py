"""Time per directed link, measured on the receiver's side (docs/performance.md "Time per link").

A neighbour collective completes as one request, so MPI cannot say which in-neighbour's
block the receiver waited for. Every :func:`sample_every`-th exchange of a phase
(the same exchanges on every rank: the phase's exchange count decides) is therefore
*timed*: each agent sends every out-neighbour a marker just before it starts the
exchange, and waits for its in-neighbours' markers one by one, stamping each as it
completes. Two figures per in-link come from one marker:

``wait``
    arrival of the marker minus the moment the receiver started the exchange (0 when
    it was already there): how long this receiver waited for this in-neighbour. A slow
    sender, or a slow link into the receiver, makes it large; on the critical path of a
    synchronous method the wait moves along with the lateness (docs/performance.md).
``transit``
    arrival minus the sender's own stamp of the marker's send: the link's one-way time
    (latency, queueing, the sender's MPI progress). Only on links whose two ends read the
    same clock (``CLOCK_MONOTONIC`` of one kernel: the same ``boot_id``); elsewhere it is
    not measured (samples 0), never estimated.

A token hop (:class:`~mpi_privopt.network.TokenChannel`) sends such a stamp with every
token message, so its *transit* is the hop's latency as the holder's sleeping wait sees
it (up to :data:`~mpi_privopt.network.wait.BACKOFF_CAP` late).

What a marker is: 8 bytes (the sender's clock reading, a float64) on the network's own
communicator under tags no phase uses (:data:`MARKER_TAG`, :data:`HOP_TAG`), never a
payload: it is not metered in the traffic matrices (their bytes are the algorithm's
messages exactly), not booked by any listener (it carries no data of any agent), and it
tells the receiver only when the sender sent, which the data's own arrival already
tells it. Exchanges not sampled run exactly as without the timer: the common path costs
one modulo of an integer the meter already keeps.
"""
from __future__ import annotations

from array import array
from collections.abc import Sequence
from time import perf_counter

import numpy as np
from mpi4py import MPI

from . import traffic
from .traffic import SAMPLE_EVERY, sample_every, set_sample_every  # noqa: F401 (re-exported)
from .wait import (_YIELD_EVERY, BACKOFF_CAP, EXCHANGE_SPIN, Backoff, _yield, wait_exchange,
                   wait_sleeping)

#: the tag of exchange markers and of token-hop stamps on the dist-graph communicator:
#: phase tags are ``c * 32768 + 1 .. c * 32768 + 32000`` (:mod:`.tags`), so these match
#: no phase's message
MARKER_TAG = 32767
HOP_TAG = 32766

#: the tests, back to back, that find the markers already there (:func:`_wait_each`)
_FIRST_TESTS = 4


def boot_id() -> bytes:
    """16 bytes naming this kernel's boot (Linux ``boot_id``): agents with the same one
    read the same ``CLOCK_MONOTONIC`` (:func:`time.perf_counter`); zeros where unknown."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return bytes.fromhex(handle.read().strip().replace("-", ""))[:16].ljust(16, b"\0")
    except (OSError, ValueError):
        return bytes(16)


class LinkTimer:
    """Times sampled exchanges and token hops of one agent (made by ``Network``).

    Collective (a neighbour allgather of the agents' boot ids on ``comm``).

    Parameters
    ----------
    comm : MPI.Topocomm
        The network's dist-graph communicator.
    in_neighbors, out_neighbors : sequence of int
        As the network's.
    meter : TrafficMeter
        Where the times are booked (:meth:`TrafficMeter.record_link_time`).
    """

    def __init__(self, comm, in_neighbors: Sequence[int], out_neighbors: Sequence[int],
                 meter) -> None:
        self.in_neighbors = [int(v) for v in in_neighbors]
        self.out_neighbors = [int(v) for v in out_neighbors]
        self.meter = meter
        self._in_index = {v: i for i, v in enumerate(self.in_neighbors)}
        self._buffers()
        self.agree_clocks(comm)

    def _buffers(self) -> None:
        # the markers' buffers: what each in-neighbour sent, what this agent sends
        self._received = [array("d", [0.0]) for _ in self.in_neighbors]
        self._stamp = array("d", [0.0])
        self._requests: tuple | None = None  # persistent, made by the first timed exchange

    def __getstate__(self) -> dict:
        # MPI requests and their buffers belong to this process: a restored timer makes
        # them again (and a checkpoint holds only numpy and the package's own classes)
        return {key: value for key, value in self.__dict__.items()
                if key not in ("_received", "_stamp", "_requests")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._buffers()

    def agree_clocks(self, comm) -> None:
        """Learn which in-neighbours read this agent's clock (collective; again after a
        restore, which may run on other machines)."""
        mine = np.frombuffer(boot_id(), dtype=np.uint8).copy()
        theirs = np.zeros((len(self.in_neighbors), 16), dtype=np.uint8)
        comm.Neighbor_allgather(mine, theirs)
        known = bool(mine.any())
        #: per in-link: whether the two ends read one clock (transit is measured)
        self.same_clock = [known and bool(np.array_equal(row, mine)) for row in theirs]

    def due(self, exchanges: int) -> bool:
        """Whether the exchange after ``exchanges`` earlier ones of its phase is timed."""
        every = traffic.every_n
        return every > 0 and exchanges % every == 0

    def timed(self, comm, phase: str, start):
        """Run one exchange timed: send markers, ``start()`` it, stamp each in-neighbour's
        marker as it arrives, then complete the exchange. Returns ``start()``'s request.

        ``start`` starts the exchange and returns its request (a persistent request's
        ``Start`` then the request, or a nonblocking collective's call).
        """
        requests = self._requests
        if requests is None:
            requests = self._requests = (
                [comm.Recv_init(buf, source=v, tag=MARKER_TAG)
                 for buf, v in zip(self._received, self.in_neighbors)],
                [comm.Send_init(self._stamp, dest=v, tag=MARKER_TAG)
                 for v in self.out_neighbors])
        receives, sends = requests
        began = perf_counter()
        MPI.Prequest.Startall(receives)
        self._stamp[0] = perf_counter()
        for send in sends:  # one by one: a communicator wrapper (a test's) may wrap them
            send.Start()
        request = start()
        arrived, present = _wait_each(receives)
        wait_exchange(request)
        for send in sends:
            send.Wait()
        # a marker found by the first tests arrived at an unknown earlier time: no transit
        self.meter.record_link_time(
            phase, [max(t - began, 0.0) for t in arrived],
            [t - buf[0] if same and not there else None
             for t, buf, same, there in zip(arrived, self._received, self.same_clock,
                                            present)])
        return request

    def free(self) -> None:
        """Release the markers' persistent requests (before the communicator goes)."""
        if self._requests is not None:
            for request in self._requests[0] + self._requests[1]:
                request.Free()
            self._requests = None

    # -- a token's hops ---------------------------------------------------------------------

    def stamp_hops(self, comm, receivers: Sequence[int], sent_at: float) -> list:
        """Send each receiver of a token message ``sent_at``, the sender's clock read just
        before the message's own send (call right after it); returns the sends' requests
        and their buffer (complete them with :func:`complete_stamps`)."""
        stamp = np.array([sent_at])  # alive in the returned list until completed
        return [comm.Isend(stamp, dest=v, tag=HOP_TAG) for v in receivers] + [stamp]

    def hop_arrived(self, comm, source: int, phase: str, arrived: float | None) -> None:
        """Book the hop from ``source`` that arrived at ``arrived`` (perf_counter; None:
        it was there before the receive was posted, so its arrival is unknown): its
        transit where the two ends share a clock."""
        stamp = np.zeros(1, dtype=np.float64)
        # sent right after the token; asleep meanwhile, as the token's own wait
        wait_sleeping(comm.Irecv(stamp, source=source, tag=HOP_TAG))
        i = self._in_index[source]
        if arrived is not None and self.same_clock[i]:
            self.meter.record_hop(phase, i, arrived - float(stamp[0]))


def complete_stamps(pending: list) -> None:
    """Complete the sends :meth:`LinkTimer.stamp_hops` returned (8-byte eager sends)."""
    MPI.Request.Waitall([r for r in pending if isinstance(r, MPI.Request)])


def _wait_each(requests: list) -> tuple[list[float], list[bool]]:
    """Complete ``requests``; return the :func:`perf_counter` at which each was seen
    complete, and whether it was among those seen by the first :data:`_FIRST_TESTS`
    tests, made back to back: those had arrived before the wait began (an MPI library
    matches a message that is already there only when a test drives its progress, so one
    test is not enough to tell), at a time nobody saw.

    Tested in a loop for :data:`EXCHANGE_SPIN` seconds (the core handed over after every
    few tests, as :func:`~.wait.wait_request` does), then with sleeps of a
    :class:`Backoff` between.
    """
    n = len(requests)
    arrived, present = [0.0] * n, [False] * n
    tests = 0
    pending = list(range(n))
    deadline = perf_counter() + EXCHANGE_SPIN
    backoff = None
    while pending:
        done = MPI.Request.Testsome([requests[i] for i in pending])
        now = perf_counter()
        tests += 1
        if done:
            for k in done:
                arrived[pending[k]] = now
                present[pending[k]] = tests <= _FIRST_TESTS
            pending = [i for k, i in enumerate(pending) if k not in done]
        elif now < deadline:
            if tests % _YIELD_EVERY == 0:  # as wait_request: the core handed over at times
                _yield()
        else:
            backoff = backoff or Backoff(BACKOFF_CAP)
            backoff.sleep()
    return arrived, present

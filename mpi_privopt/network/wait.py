"""How a rank waits for a request: spin briefly, then sleep with backoff.

One helper for every wait of the package (:func:`wait_request`): the token's receive and
sends sleep from the first failed test (:func:`wait_sleeping`), an exchange tests for its
first milliseconds and then sleeps (:func:`wait_exchange`, by the policy
:func:`set_exchange_wait` chooses), the barriers of set-up and end sleep longer
(:func:`sleeping_barrier`).
docs/performance.md "Waiting" has the measurements behind every constant here.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import perf_counter, sleep

from mpi4py import MPI

#: longest sleep (seconds) between two tests of a request (:class:`Backoff`)
BACKOFF_CAP = 1e-3
#: the same in a wait for one rank's one-off work (set-up, the end: :func:`sleeping_barrier`)
ONE_OFF_CAP = 0.05
# K ranks waiting with BACKOFF_CAP wake K / BACKOFF_CAP times a second between them, and
# on a few cores those wake-ups take the cores from the one rank that works: at 200 ranks
# on 2 cores rank 0's writing of traffic.json and privacy.json, 0.6 s alone, took 42 s of
# the run's end (docs/performance.md, "The end of a run at 200 ranks"). A doubling
# backoff oversleeps by at most the time already waited, so a longer cap costs a short
# wait nothing and a long one-off wait at most ONE_OFF_CAP.
# The first sleep; doubled after each failed test, so a message that arrives soon is
# seen soon, and a long wait costs one test per BACKOFF_CAP. 31 us, not 1 us: Linux sleeps
# at least its ~60 us timer slack anyway, and the five extra wake-ups of a start at 1 us
# cost a 2 ms wait 4.3-5.0% of a core against 2.5-3.6% (tests/bench/wait_policy.py,
# docs/performance.md "Waiting"), without seeing the message sooner.
_BACKOFF_FIRST = BACKOFF_CAP / 32
_BACKOFF_GROWTH = 2.0

#: how long an exchange wait tests its request before it starts sleeping (seconds)
EXCHANGE_SPIN = 2e-3
# While spinning, the core is handed over (sched_yield) after every few tests: with more
# ranks than cores the neighbour being waited for may need this very core. A spin that
# never yields made an 8-rank exchange on 2 cores 75-100x slower; a yield after every
# test cost 2 ranks 2x against every 4th (docs/performance.md "Waiting").
_YIELD_EVERY = 4

try:
    from os import sched_yield as _yield
except ImportError:  # not on every platform; a zero sleep also gives the core up
    def _yield() -> None:
        sleep(0)


#: work a rank does before each sleep of a wait (:func:`while_sleeping`)
_sleeping_work: Callable[[], None] | None = None


@contextmanager
def while_sleeping(work: Callable[[], None] | None) -> Iterator[None]:
    """Within this context, every sleeping wait calls ``work()`` before each of its sleeps.

    A rank that sleeps is waiting for another, which may never come: an agent that stopped
    the run (its budget, a divergence) aborts the job while its neighbours wait for its
    message. Rank 0 of a run writes meanwhile the metrics rows every agent has posted
    (``mpi_privopt.engine``), so they are kept. ``work`` must not wait itself; it costs
    nothing to a wait that ends while it spins.
    """
    global _sleeping_work
    before, _sleeping_work = _sleeping_work, work
    try:
        yield
    finally:
        _sleeping_work = before


class Backoff:
    """Sleeps that double, from ``first`` up to ``cap`` seconds.

    The pattern of ``mpi4py.futures``' ``Backoff`` (``reset``, then ``sleep`` after each
    failed test), started at ``first`` rather than at zero: the kernel's timer slack
    makes shorter sleeps moot. Each sleep is preceded by the work of
    :func:`while_sleeping`, if any.
    """

    __slots__ = ("first", "cap", "pause")

    def __init__(self, cap: float = BACKOFF_CAP, first: float | None = None) -> None:
        self.cap = float(cap)
        self.first = self.cap / 32 if first is None else float(first)
        self.pause = self.first

    def reset(self) -> None:
        """Start again from the first sleep."""
        self.pause = self.first

    def sleep(self) -> None:
        """Sleep once, and make the next sleep longer (up to ``cap``)."""
        if _sleeping_work is not None:
            _sleeping_work()
        sleep(self.pause)
        self.pause = min(_BACKOFF_GROWTH * self.pause, self.cap)


def wait_request(request: MPI.Request, status: MPI.Status | None = None,
                 spin: float = 0.0) -> None:
    """Complete ``request``: test it for about ``spin`` seconds, then sleep between tests.

    The one wait of the package (token, exchange, sleeping barrier). MPICH's own ``Wait``
    polls at 100% of a core for as long as it waits. Here the first ``spin`` seconds
    test the request in a loop that yields the core every few tests (an exchange between
    ranks on their own cores completes within them, and in fewer microseconds than
    MPICH's ``Wait``); after that the rank sleeps between tests with a :class:`Backoff`,
    so a rank waiting long, for a stopped neighbour or for the token, costs one test per
    ``BACKOFF_CAP`` (docs/performance.md "Waiting" has the measurements).

    The stall watchdog's thread and signal handlers run meanwhile as they do in MPI's
    ``Wait`` (a signal handler only sets a flag, read after the wait).
    """
    if request.Test(status):
        return
    if spin > 0.0:
        deadline = perf_counter() + spin
        tests = 0
        while not request.Test(status):
            tests += 1
            if tests % _YIELD_EVERY == 0:
                if perf_counter() >= deadline:
                    break
                _yield()
        else:
            return
    sleep_until(lambda: request.Test(status))


def sleep_until(done: Callable[[], bool], cap: float = BACKOFF_CAP) -> None:
    """Call ``done`` until it is true, sleeping between calls (a :class:`Backoff` from 31 us
    doubling up to ``cap`` seconds)."""
    backoff = Backoff(cap, _BACKOFF_FIRST)
    while not done():
        backoff.sleep()


def wait_sleeping(request: MPI.Request, status: MPI.Status | None = None) -> None:
    """Complete ``request`` by sleeping from the first failed test (no spin): for a wait
    that is expected to be long (the token, a barrier before rank 0's one-off work).

    A message is seen at most ``BACKOFF_CAP`` after it arrives (docs/token.md has the
    measured CPU time and latency).
    """
    wait_request(request, status, 0.0)


#: the tag of :func:`sleeping_barrier`'s messages (point to point: no collective matches
#: them); at most 32767, the least upper bound on tags an MPI library may have
BARRIER_TAG = 32_001
#: the one byte each of its messages carries
BARRIER_SIGNAL = b"\x00"


def sleeping_barrier(comm: MPI.Intracomm, root: int = 0) -> None:
    """A barrier in which every wait sleeps (up to :data:`ONE_OFF_CAP` between tests): each
    rank tells ``root`` it is here, ``root`` then tells each to go.

    For the waits on one rank's one-off work (set-up, the run's end). MPI's ``Ibarrier``
    with sleeping waits was tried: its algorithm runs in rounds, and a round advances only
    when its ranks test it, so each round waited for a sleeping rank's next test (at 50
    ranks the set-up took 3.0 s instead of 2.0 with a 10 ms cap; docs/performance.md,
    "The end of a run at 200 ranks"). Here a rank waits for one message, which is
    complete when it arrives.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    if size == 1:
        return
    signal = bytearray(BARRIER_SIGNAL)  # a constant: the barrier carries nothing else
    if rank == root:
        others = [r for r in range(size) if r != root]
        _wait_all_one_off([comm.Irecv(bytearray(1), source=r, tag=BARRIER_TAG)
                           for r in others])
        _wait_all_one_off([comm.Isend(signal, dest=r, tag=BARRIER_TAG) for r in others])
        return
    go = comm.Irecv(bytearray(1), source=root, tag=BARRIER_TAG)
    _wait_all_one_off([comm.Isend(signal, dest=root, tag=BARRIER_TAG), go])


def _wait_all_one_off(requests: list[MPI.Request]) -> None:
    # a test that completed some requests is followed by another at once: MPICH receives
    # one or a few queued messages per test, so sleeping after each (up to the cap) made
    # the root's 49 receives of a 50-rank barrier take 2 s
    pending = list(requests)
    backoff = Backoff(ONE_OFF_CAP, _BACKOFF_FIRST)
    while pending:
        done = MPI.Request.Testsome(pending)
        if done:
            finished = set(done)
            pending = [r for i, r in enumerate(pending) if i not in finished]
        else:
            backoff.sleep()


#: how exchanges wait: ``"backoff"`` (spin, then sleep: :func:`wait_request` with
#: :data:`EXCHANGE_SPIN`) or ``"poll"`` (MPI's own ``Wait``, the behaviour before); set
#: with :func:`set_exchange_wait` (``mpi_privopt bench --wait`` compares them)
EXCHANGE_WAITS = ("backoff", "poll")
_exchange_spin: float | None = EXCHANGE_SPIN


def set_exchange_wait(policy: str) -> None:
    """Choose how exchanges wait from now on (one of :data:`EXCHANGE_WAITS`)."""
    global _exchange_spin
    if policy not in EXCHANGE_WAITS:
        raise ValueError(f"exchange wait {policy!r} is not one of {', '.join(EXCHANGE_WAITS)}")
    _exchange_spin = EXCHANGE_SPIN if policy == "backoff" else None


def exchange_wait() -> str:
    """The current exchange wait policy (see :func:`set_exchange_wait`)."""
    return "poll" if _exchange_spin is None else "backoff"


def wait_exchange(request: MPI.Request, status: MPI.Status | None = None) -> None:
    """Complete the request of a neighbour exchange by the exchange wait policy."""
    spin = _exchange_spin
    if spin is None:
        request.Wait(status)
    else:
        wait_request(request, status, spin)

"""How a rank waits for a request: spin briefly, then sleep with backoff.

One helper for every wait of the package (:func:`wait_request`): the token's receive and
sends sleep from the first failed test (:func:`wait_sleeping`), an exchange tests for its
first milliseconds and then sleeps (:func:`wait_exchange`, by the policy
:func:`set_exchange_wait` chooses), the sleeping barriers of set-up and end sleep too.
docs/performance.md "Waiting" has the measurements behind every constant here.
"""
from __future__ import annotations

from time import perf_counter, sleep

from mpi4py import MPI

#: longest sleep (seconds) between two tests of a request (:class:`Backoff`)
BACKOFF_CAP = 1e-3
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


class Backoff:
    """Sleeps that double, from ``first`` up to ``cap`` seconds.

    The pattern of ``mpi4py.futures``' ``Backoff`` (``reset``, then ``sleep`` after each
    failed test), started at ``first`` rather than at zero: the kernel's timer slack
    makes shorter sleeps moot.
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
    backoff = Backoff(BACKOFF_CAP, _BACKOFF_FIRST)
    while not request.Test(status):
        backoff.sleep()


def wait_sleeping(request: MPI.Request, status: MPI.Status | None = None) -> None:
    """Complete ``request`` by sleeping from the first failed test (no spin): for a wait
    that is expected to be long (the token, a barrier before rank 0's one-off work).

    A message is seen at most ``BACKOFF_CAP`` after it arrives (docs/token.md has the
    measured CPU time and latency).
    """
    wait_request(request, status, 0.0)


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

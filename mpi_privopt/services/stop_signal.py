"""The stop on SIGTERM / SIGINT, agreed by every agent at an iteration they all know.

SIGTERM and SIGINT only set a flag. Every agent learns every flag through a nonblocking
``Iallreduce`` started after iteration n and completed after iteration n + 1 (or a stride
later), so all ranks stop after the same iteration without a blocking collective per
iteration (docs/performance.md has the measured cost). The checkpoint service then writes
the stop's checkpoint (mpi_privopt/services/checkpoint.py) and the engine ends the loop.
"""
from __future__ import annotations

import os
import signal
import threading

import numpy as np

from . import faults

__all__ = ["STOP_SIGNALS", "StopOnSignal", "mark_interrupted"]

#: the signals that stop a run at the next agreed iteration
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopOnSignal:
    """SIGTERM / SIGINT set a flag; the agents agree on it at iterations they all know.

    Use as a context manager around the loop and call :meth:`agreed` after every
    iteration; it returns the signal number every agent agrees to stop on (0: go on).
    Only the main thread runs Python signal handlers, and they only store the number.

    The agreement is a nonblocking ``Iallreduce`` (MAX) of ``[signal, stride]`` started
    after one iteration and completed ``stride`` iterations later; the next one starts
    there. An Iallreduce after every iteration cost as much as a blocking Allreduce in the
    exchange benchmark (about a third of a small DGD iteration at 2 to 4 ranks), so rank 0
    proposes the stride in the same reduction: as many iterations as take about
    :data:`AGREE_SECONDS` (1 to :data:`MAX_STRIDE`). Every rank gets the same stride from
    the reduction, so all complete it, and stop, after the same iteration; a signal is
    acted on within about two strides (tens of milliseconds) plus one iteration.
    """

    #: the time between two agreements rank 0 aims at (seconds; the environment variable
    #: MPI_PRIVOPT_AGREE_SECONDS overrides it, 0: agree after every iteration)
    AGREE_SECONDS = 0.02
    MAX_STRIDE = 1024

    def __init__(self, comm, enabled: bool = True) -> None:
        from time import perf_counter
        #: False for a method that cannot be checkpointed: signals keep their default
        #: effect (the run ends without a checkpoint) and nothing is agreed
        self.enabled = enabled
        self._comm = comm.Dup()  # its own channel: never mixed with evaluation traffic
        self._proposes = comm.Get_rank() == 0
        self._aim = float(os.environ.get("MPI_PRIVOPT_AGREE_SECONDS", self.AGREE_SECONDS))
        self._local = np.zeros(2, dtype=np.int64)     # [signal, proposed stride]
        self._agreed = np.zeros(2, dtype=np.int64)
        self._request = None
        self._count = 0        # iterations since the pending agreement started
        self._stride = 1       # ... and how many it spans (agreed)
        self._clock = perf_counter
        self._started = 0.0
        self._previous: dict = {}
        self.received = threading.Event()

    def _handle(self, signum, frame) -> None:
        self._local[0] = max(int(self._local[0]), int(signum))
        self.received.set()

    def __enter__(self) -> "StopOnSignal":
        faults.wake_faults_on(self)
        for sig in STOP_SIGNALS if self.enabled else ():
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def after_iteration(self, ctx, loop, n: int) -> None:
        """The run service: ``loop.stop_signal`` is the signal every agent agreed to stop
        on after iteration ``n`` (none is asked after the last: it ends the run anyway)."""
        if n < ctx.cfg.run.iterations:
            loop.stop_signal = self.agreed()

    def at_end(self, ctx, loop) -> str:
        return ""

    def agreed(self) -> int:
        """After an iteration: the agreed stop signal (0 until every agent knows one)."""
        if not self.enabled:
            return 0
        self._count += 1
        if self._request is not None and self._count < self._stride:
            return 0
        stop = 0
        if self._request is not None:
            # a neighbour's stop would hold every rank here too: wait like an exchange
            # (spin, then sleep), not in MPI's polling Wait
            from ..network import wait_exchange
            wait_exchange(self._request)
            stop, self._stride = int(self._agreed[0]), max(1, int(self._agreed[1]))
        if not stop:
            self._start()
        return stop

    def _start(self) -> None:
        from mpi4py import MPI
        now = self._clock()
        if self._proposes and self._count:
            per_iteration = (now - self._started) / self._count
            self._local[1] = min(self.MAX_STRIDE,
                                 max(1, int(self._aim / max(per_iteration, 1e-9))))
        self._started, self._count = now, 0
        # a copy: the handler may change the flag while the reduction reads its buffer;
        # kept until the request completes (Open MPI reads it at Wait: a temporary was
        # freed and reused first, and the agreed signal came back as garbage)
        self._sent = self._local.copy()
        self._request = self._comm.Iallreduce(self._sent, self._agreed, op=MPI.MAX)

    def hand_over(self) -> dict:
        """The handlers from before the loop, for a successor that installs its own in
        place of this one's (run_commit.SignalHold); this one then puts none back."""
        previous, self._previous = self._previous, {}
        return previous

    def __exit__(self, *exc) -> None:
        faults.forget(self)
        everywhere = exc[0] is None or getattr(exc[1], "collective", False)
        if self._request is not None and everywhere:
            self._request.Wait()  # every rank posted it: completes
        self._request = None
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if everywhere:
            self._comm.Free()


def mark_interrupted(summary, signum: int, stopped_at: int | None) -> None:
    """An interrupted run's summary says so, with the iteration it reached (``signum``
    0: not interrupted, nothing changes)."""
    if signum:
        summary.status = "interrupted"
        summary.stopped_at_iteration = stopped_at
        summary.stop_signal = signal.Signals(signum).name

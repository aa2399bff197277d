"""Fault injection for the fault tests: a kill, a signal or a pause at a named point.

Read only when the environment variable :data:`FAULT_ENV` is set (the tests set it on the
launched job); otherwise :func:`fault` returns at once and :class:`FaultInjection` is not
among the loop's services.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["FAULT_ENV", "FaultInjection", "armed", "fault", "wake_faults_on"]

#: a test hook (read only by the fault tests): ``ACTION@POINT:RANK:ITERATION[:FILE]``,
#: several separated by commas
FAULT_ENV = "MPI_PRIVOPT_TEST_FAULT"

Fault = tuple[str, str, int, int, str]


def _parse_one(text: str) -> Fault:
    action, _, rest = text.partition("@")
    point, rank, iteration, *file = rest.split(":", 3)
    return action, point, int(rank), int(iteration), (file[0] if file else "")


def _parse_faults(text: str) -> tuple[Fault, ...]:
    return tuple(_parse_one(part) for part in text.split(",") if part)


_FAULTS = _parse_faults(os.environ.get(FAULT_ENV, ""))
#: what a paused fault wakes on: anything with a ``received`` Event (the loop's
#: StopOnSignal, then the end's SignalHold)
_stopper: Any = None


def armed() -> bool:
    """Whether a fault is asked for (tests only)."""
    return bool(_FAULTS)


def wake_faults_on(holder: Any) -> None:
    """Make a paused test fault wake when ``holder.received`` is set (None: nothing)."""
    global _stopper
    _stopper = holder


def forget(holder: Any) -> None:
    """``holder`` no longer wakes a paused fault (if it was the one)."""
    global _stopper
    if _stopper is holder:
        _stopper = None


def fault(point: str, rank: int, iteration: int) -> None:
    """Inject the fault ``MPI_PRIVOPT_TEST_FAULT`` names, if this is its place (tests only).

    ``kill@POINT:R:N``  rank R kills itself (SIGKILL) at POINT of iteration N;
    ``term@POINT:R:N``, ``int@...``  rank R sends itself SIGTERM (SIGINT) there;
    ``pause@POINT:R:N:FILE``  rank R creates FILE, then waits (sleeping) until a stop
    signal arrives or ``FILE.go`` exists, and then writes ``FILE.woke``;
    ``raise@POINT:R:N``  rank R raises a RuntimeError there (a bug, not bad input).
    POINT: ``iteration`` (after the step),
    ``checkpoint-begin`` (before writing) or ``checkpoint-write`` (file written, not yet
    renamed); at the run's end (mpi_privopt/run_commit.py, ITERATION is the end's):
    ``commit-begin`` (before the final checkpoint), ``commit-results`` (final checkpoint
    written, no result yet), ``commit-summary`` (rank 0: every result written, not the
    summary) and ``commit-end`` (every file written, the ranks about to return); in the
    collective protocols (mpi_privopt/mpiutil.py, ITERATION the call's number on that rank,
    from 1): ``computed-once`` (inside the step rank R computes for all); in the audit
    (ITERATION 0): ``audit-summary`` (rank R summarising the records).
    ``slow@POINT:R:N:SECONDS``  rank R sleeps SECONDS at POINT of every iteration from N
    on (a slow agent: its out-links stand out in traffic.json's link times).
    Several faults, separated by commas, are all injected.
    """
    for one in _FAULTS:
        _inject(one, point, rank, iteration)


def _inject(one: Fault, point: str, rank: int, iteration: int) -> None:
    action, file = one[0], one[4]
    if action == "slow":
        if one[1:3] == (point, rank) and iteration >= one[3]:
            time.sleep(float(file))
        return
    if one[1:4] != (point, rank, iteration):
        return
    sent = {"kill": signal.SIGKILL, "term": signal.SIGTERM, "int": signal.SIGINT}
    if action in sent:  # SIGKILL, or SIGTERM / SIGINT to this rank alone
        os.kill(os.getpid(), sent[action])
    if action == "raise":
        raise RuntimeError(f"a test's fault at {point} (iteration {iteration})")
    if action == "pause":
        Path(file).write_text(f"{os.getpid()}\n")  # the test may kill this rank by pid
        go = Path(file + ".go")
        event = _stopper.received if _stopper is not None else threading.Event()
        while not go.exists() and not event.wait(0.05):
            pass
        # the test may wait for this: a stop signal has reached this rank
        Path(file + ".woke").write_text("signal\n" if event.is_set() else "go\n")


class FaultInjection:
    """The loop's service for the ``iteration`` point (first among the services, so that
    a signal it sends is agreed on after the same iteration)."""

    def after_iteration(self, ctx, loop, n: int) -> None:
        fault("iteration", ctx.rank, n)

    def at_end(self, ctx, loop) -> str:
        return ""

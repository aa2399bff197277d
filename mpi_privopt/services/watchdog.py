"""The stall watchdog: a rank that stops answering ends the job with one message naming it.

A rank stopped with SIGSTOP, or on a hung node, does not exit: its neighbours wait for it in
their next exchange, forever. The launcher cannot tell, and a neighbour collective cannot
say which peer is missing. So every rank runs a sleeping thread during the iteration loop
(``run.stall_timeout`` seconds; armed after set-up, disarmed after the end-of-loop barrier):

* **heartbeats.** Every ``period`` seconds (``min(timeout / 20, 1 s)``) the thread writes
  ``heartbeats/agent-K.json`` in the run directory (atomically: a temporary file, then a
  rename): its host, pid, the iteration it last finished, a beat counter, and for how long
  its own iteration has not advanced. The main thread only stores the iteration number
  and the time (:meth:`Watchdog.progress`, two attribute stores per iteration); a
  stopped rank's thread is stopped with it, so its beat counter stops.
* **detection.** A rank whose own iteration has not advanced for ``timeout`` seconds reads
  every rank's heartbeat twice, ``CONFIRM_PERIODS`` periods apart (publishing its own
  meanwhile, so that two ranks diagnosing at once do not take each other for silent). A
  rank whose beat counter did not change, or that never wrote one, is *silent*. Clock
  differences between hosts do not matter: only this rank's clock measures the window.
* **verdict.** Some rank silent: the job ends. Nobody silent but nobody progressing either
  (every agent stalled for at least half the timeout and none in an evaluation): a
  deadlock, or an agent stuck in its own computation; the job ends too, naming the agent
  furthest behind. Otherwise someone is progressing (a token holder while the others
  wait, an agent still iterating while the others wait at the end): check again next
  period.
* **one message.** The diagnosing ranks race to create ``stall.json`` with ``O_EXCL``; the
  winner writes the record (silent agents, each agent's last heartbeat), prints one
  message and aborts the job (``MPI_Abort``, exit status :data:`STALL_STATUS`), which
  kills every process, the stopped one too (the launcher sends SIGKILL). The others stay
  silent and abort only if that abort has not come after ``QUIET_SECONDS``.

Evaluation may legitimately take longer than an iteration (rank 0 writes the row, others
wait in the monitor's reduction): the engine runs it under :meth:`Watchdog.paused`, during
which this rank counts as progressing. Set-up (data loading, a big reference solve) and the
end-of-run gathers are outside the armed window.

The files need the run directory on a filesystem every rank sees (as the other run files
do). Aborting from the thread needs ``MPI_THREAD_MULTIPLE`` (what mpi4py asks for); with a
lower thread level the thread ends its own process instead (``os._exit``), and the
launcher ends the others with its own banner.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = ["DEFAULT_STALL_TIMEOUT", "STALL_RECORD", "STALL_STATUS", "Watchdog", "arm",
           "archive_stall_record", "stall_timeout_seconds", "heartbeat_path"]

#: run.stall_timeout's default (seconds); see docs/config.md for why this value
DEFAULT_STALL_TIMEOUT = 600.0
#: the exit status of a job ended by the watchdog (2: bad input, 3: diverged)
STALL_STATUS = 4
#: the record the speaking rank writes in the run directory
STALL_RECORD = "stall.json"
HEARTBEATS = "heartbeats"
#: longest period between two heartbeats (seconds)
MAX_PERIOD = 1.0
#: the confirmation window, in periods: a live rank writes at least twice in it
CONFIRM_PERIODS = 3
#: pause between the message and the abort, so the launcher forwards the message
ABORT_GRACE_SECONDS = 0.5
#: how long a rank that lost the race to speak waits for the speaker's abort
QUIET_SECONDS = 10.0


def stall_timeout_seconds(value: float | str) -> float | None:
    """``run.stall_timeout`` in seconds, or None when the watchdog is off (0 or "off").

    Raises ValueError for anything else than a number >= 0 or "off".
    """
    if isinstance(value, str):
        if value.strip().lower() == "off":
            return None
        raise ValueError(value)
    if not value >= 0:  # also refuses nan
        raise ValueError(value)
    return None if value == 0 else float(value)


def heartbeat_path(run_dir: str | Path, rank: int) -> Path:
    """Where agent ``rank`` publishes its heartbeat."""
    return Path(run_dir) / HEARTBEATS / f"agent-{rank}.json"


def abort_job(status: int) -> None:
    """End the whole job from the watchdog thread (see the module docstring)."""
    from mpi4py import MPI
    sys.stdout.flush()
    sys.stderr.flush()
    if MPI.Query_thread() >= MPI.THREAD_MULTIPLE and MPI.COMM_WORLD.Get_size() > 1:
        MPI.COMM_WORLD.Abort(status)
    os._exit(status)


class Watchdog:
    """One rank's heartbeat publisher and stall detector (see the module docstring).

    Parameters
    ----------
    run_dir : str or Path
        The run directory (on a filesystem every rank sees).
    rank, size : int
        This agent and the number of agents.
    timeout : float
        Seconds without progress of this rank before it looks for a silent one.
    host : str
        This rank's host name (for the message).
    abort : callable, optional
        ``abort(status)`` ends the job (:func:`abort_job`); a test may pass its own.
    stream : file, optional
        Where the one message goes (stderr).
    """

    def __init__(self, run_dir: str | Path, rank: int, size: int, timeout: float, host: str,
                 abort: Callable[[int], None] = abort_job, stream: TextIO | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.rank, self.size, self.timeout, self.host = rank, size, float(timeout), host
        self.period = min(self.timeout / 20.0, MAX_PERIOD)
        self._abort = abort
        self._stream = stream
        self._iteration = 0
        #: the iteration the thread last saw, and when it first saw it
        self._seen_iteration = 0
        self._last_progress = time.monotonic()
        self._paused = 0
        self._beat = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="mpi_privopt-watchdog",
                                        daemon=True)
        #: the verdict this rank reached (None while nothing is wrong), for tests
        self.verdict: dict | None = None

    # -- the main thread's side: cheap ------------------------------------------------------

    def start(self) -> "Watchdog":
        """Publish a first heartbeat and start the thread."""
        (self.run_dir / HEARTBEATS).mkdir(parents=True, exist_ok=True)
        self._last_progress = time.monotonic()
        self._publish()
        self._thread.start()
        return self

    def progress(self, iteration: int) -> None:
        """This rank finished ``iteration`` (called once per iteration).

        One store: the thread notes when the number changed (to within its period), so
        the loop pays no clock read (docs/performance.md section 9)."""
        self._iteration = iteration

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """A legitimately long stretch (an evaluation): this rank counts as progressing."""
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1
            self._last_progress = time.monotonic()

    def stop(self) -> None:
        """Disarm: stop the thread and leave a last heartbeat saying so."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._publish(done=True)

    # -- the thread ---------------------------------------------------------------------------

    def _stalled_for(self) -> float:
        now = time.monotonic()
        iteration = self._iteration
        if iteration != self._seen_iteration:
            self._seen_iteration, self._last_progress = iteration, now
        return 0.0 if self._paused else now - self._last_progress

    def _publish(self, done: bool = False) -> None:
        self._beat += 1
        record = {"agent": self.rank, "host": self.host, "pid": os.getpid(),
                  "iteration": self._iteration, "beat": self._beat,
                  "stalled_seconds": round(self._stalled_for(), 3),
                  "evaluating": bool(self._paused), "done": done}
        path = heartbeat_path(self.run_dir, self.rank)
        temporary = path.with_suffix(".tmp")
        try:
            temporary.write_text(json.dumps(record))
            os.replace(temporary, path)
        except OSError:
            pass  # a full or vanished disk must not kill the run; silence is judged by others

    def _read(self) -> dict[int, dict | None]:
        beats: dict[int, dict | None] = {}
        for k in range(self.size):
            try:
                beats[k] = json.loads(heartbeat_path(self.run_dir, k).read_text())
            except (OSError, ValueError):
                beats[k] = None
        return beats

    def _watch(self) -> None:
        while not self._stop.wait(self.period):
            self._publish()
            if self._stalled_for() < self.timeout:
                continue
            verdict = self._diagnose()
            if verdict is not None and not self._stop.is_set():
                self.verdict = verdict
                self._end(verdict)
                return

    def _diagnose(self) -> dict | None:
        """Read every heartbeat twice; the verdict, or None when someone progresses."""
        first = self._read()
        for _ in range(CONFIRM_PERIODS):
            if self._stop.wait(self.period):
                return None
            self._publish()
        second = self._read()
        silent = [k for k in range(self.size) if k != self.rank and not
                  (second[k] is not None and second[k].get("done")) and
                  (second[k] is None or first[k] is None
                   or second[k]["beat"] == first[k]["beat"])]
        last = {k: second[k] or first[k] for k in range(self.size)}
        if silent:
            return {"kind": "silent", "silent_agents": silent, "heartbeats": last}
        alive = [b for b in second.values() if b is not None and not b.get("done")]
        progressing = any(b["evaluating"] or b["stalled_seconds"] < self.timeout / 2
                          or b["iteration"] != (first[b["agent"]] or {}).get("iteration")
                          for b in alive)
        if progressing:
            return None
        return {"kind": "stuck", "silent_agents": [], "heartbeats": last}

    def _end(self, verdict: dict) -> None:
        record_path = self.run_dir / STALL_RECORD
        try:
            fd = os.open(record_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            time.sleep(QUIET_SECONDS)  # another rank speaks and aborts the job
            self._abort(STALL_STATUS)
            return
        message, fix = self.message(verdict)
        record = {"status": "stalled", "detected_by": self.rank, "stall_timeout": self.timeout,
                  "message": message, **verdict}
        with os.fdopen(fd, "w") as out:
            json.dump(record, out, indent=2)
        stream = self._stream or sys.stderr
        try:
            print(f"mpi_privopt: error: {message}\n  how to fix: {fix}", file=stream, flush=True)
        except (OSError, ValueError):
            pass
        time.sleep(ABORT_GRACE_SECONDS)
        self._abort(STALL_STATUS)

    def message(self, verdict: dict) -> tuple[str, str]:
        """The one message of ``verdict`` and its fix."""
        beats = verdict["heartbeats"]
        timeout = f"{self.timeout:g} s"
        if verdict["kind"] == "silent":
            silent = verdict["silent_agents"]
            parts = [_describe(k, beats.get(k)) for k in silent]
            waiting = sorted({b["iteration"] + 1 for k, b in beats.items()
                              if b is not None and k not in silent})
            at = ("" if not waiting else f" in iteration {waiting[0]}" if len(waiting) == 1
                  else f" in iterations {waiting[0]}-{waiting[-1]}")
            what = (f"{'; '.join(parts)}; the other agents waited{at} for {timeout} "
                    f"(run.stall_timeout) without progress, so the job was ended")
            fix = ("check the named host (a stopped or hung process, a failed node); the run "
                   "directory keeps what was written so far and stall.json; raise "
                   "run.stall_timeout if an iteration legitimately takes longer")
            return what, fix
        behind = min((b for b in beats.values() if b is not None and not b.get("done")),
                     key=lambda b: b["iteration"], default=None)
        where = ("" if behind is None else
                 f"; agent {behind['agent']} (host {behind['host']}, pid {behind['pid']}) is "
                 f"furthest behind at iteration {behind['iteration']}")
        what = (f"no agent made progress for {timeout} (run.stall_timeout) although every agent "
                f"still answers (a deadlock, or an agent stuck in its own computation){where}; "
                "the job was ended")
        fix = ("raise run.stall_timeout if an iteration legitimately takes longer, or set it "
               'to "off"')
        return what, fix


def _describe(k: int, beat: dict[str, Any] | None) -> str:
    if beat is None:
        return f"agent {k} stopped answering before its first heartbeat"
    return (f"agent {k} (host {beat['host']}, pid {beat['pid']}) stopped answering (its last "
            f"heartbeat: iteration {beat['iteration']} done)")


class _Off:
    """The watchdog when it is off (``run.stall_timeout = 0`` or ``"off"``, one agent)."""

    def progress(self, iteration: int) -> None:
        pass

    def paused(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def stop(self) -> None:
        pass


def archive_stall_record(run_dir: str | Path) -> Path | None:
    """Move an earlier stall's record aside (``stall.json`` -> ``stall-N.json``, the first
    free N) and return where it went; None when there was none.

    A resumed run starts with the record of the stall it resumes from; left in place, it
    would make a new stall look already reported (the record is created exclusively, and
    a rank that finds it leaves the message to another) and end the job without one.
    """
    record = Path(run_dir) / STALL_RECORD
    if not record.exists():
        return None
    n = 1
    while (archived := record.with_name(f"stall-{n}.json")).exists():
        n += 1
    os.replace(record, archived)
    return archived


def arm(run_dir: str | Path, comm, stall_timeout: float | str) -> Watchdog | _Off:
    """The started watchdog of this rank of ``comm`` (a do-nothing one when it is off).

    Rank 0 first moves an earlier stall's record aside (:func:`archive_stall_record`):
    every watchdog fires only after ``stall_timeout``, long after this.
    """
    if comm.Get_rank() == 0:
        archive_stall_record(run_dir)
    timeout = stall_timeout_seconds(stall_timeout)
    if timeout is None or comm.Get_size() == 1:
        return _Off()
    from mpi4py import MPI
    return Watchdog(run_dir, comm.Get_rank(), comm.Get_size(), timeout,
                    MPI.Get_processor_name()).start()

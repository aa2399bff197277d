"""What every program started under mpiexec does at its edges: load the config all ranks
agree on, and leave on a user error with one message and no hang.

Shared by the command line (:mod:`mpi_privopt.cli`) and the attack runner
(``python -m mpi_privopt.methods.gade2017.attacks``), so that neither imports the other.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from .errors import UserError

#: what an interrupt before the loop stopped (``run`` sets it: nothing was run)
EARLY_INTERRUPT = ""
#: seconds task 0 gives the launcher to forward its line before it aborts the job, on an
#: interrupt before the loop (the other tasks wait twice as long for that abort)
INTERRUPT_GRACE_SECONDS = 0.5

#: seconds a rank whose error another rank reports waits for that rank's abort
QUIET_WAIT_SECONDS = 10.0

#: set to 1 to see an internal error's traceback (errors.InternalError) before its message
TRACEBACK_ENV = "MPI_PRIVOPT_TRACEBACK"

#: what launchers set to say how many tasks they started, and which one a process is
#: (MPICH's hydra and PMI, Open MPI, PMIx, Slurm's srun)
LAUNCHER_SIZES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "SLURM_STEP_NUM_TASKS")
LAUNCHER_RANKS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")


class LaunchError(UserError):
    """The launcher and the MPI library do not agree on the job."""


def lone_copy_error(environ: dict, world_size: int) -> LaunchError | None:
    """The error for a process that runs alone although its launcher started K tasks.

    A launcher whose process-management interface the MPI library cannot read (``srun``
    without ``--mpi=``, an Open MPI ``mpirun`` for an MPICH build) starts K processes that
    each see a world of one rank: K one-agent copies of the run, writing over each other.
    None when nothing is wrong.
    """
    if world_size != 1:
        return None
    for name in LAUNCHER_SIZES:
        try:
            announced = int(environ.get(name, "1"))
        except ValueError:
            continue
        if announced > 1:
            return LaunchError(
                f"the launcher started {announced} tasks ({name}={announced}) but MPI sees a "
                "world of 1 rank: every task would run alone, as "
                f"{announced} copies of a one-agent run",
                "launch with the mpiexec of the MPI library mpi4py loaded (python -m mpi4py "
                "--mpi-library names it); under Slurm use srun --mpi=pmi2 for MPICH or "
                "srun --mpi=pmix for Open MPI")
    return None


def announced_size(environ: dict) -> int:
    """The number of tasks the launcher announced (1 when it announced none)."""
    sizes = []
    for name in LAUNCHER_SIZES:
        try:
            sizes.append(int(environ[name]))
        except (KeyError, ValueError):
            continue
    return max(sizes, default=1)


def announced_rank(environ: dict) -> int:
    """The task number the launcher gave this process (0 when it gave none)."""
    for name in LAUNCHER_RANKS:
        if environ.get(name, "").isdigit():
            return int(environ[name])
    return 0


def refuse_lone_copies() -> None:
    """Leave (status 2) before anything runs if this process is one of K lone copies.

    The copies cannot talk to each other, so only the launcher's task 0 prints the message.
    """
    err = lone_copy_error(dict(os.environ), _world().Get_size())
    if err is None:
        return
    if announced_rank(os.environ) == 0:
        print(f"mpi_privopt: error: {err}", file=sys.stderr, flush=True)
    sys.exit(2)


def load_agreed_config(config: str | None, overrides: Sequence[str]):
    """``config`` with ``overrides``, loaded once every rank agrees it is valid.

    Refuses first to run as one of K lone copies (:func:`refuse_lone_copies`). Raises the
    same :class:`UserError` on every rank when any rank finds the config invalid.
    """
    from mpi4py import MPI

    from .mpiutil import agree
    from .config import load_config
    refuse_lone_copies()
    return agree(MPI.COMM_WORLD, lambda: load_config(config, list(overrides)))


def _world():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def fail_user(err: UserError) -> NoReturn:
    """Print a user error once and exit non-zero on every rank without a hang.

    The status is the error's ``status`` (3 for a diverged run, 1 for an internal error),
    2 for bad input.
    """
    comm = _world()
    collective = getattr(err, "collective", False)
    if getattr(err, "quiet", False):
        # Another rank speaks for this one (services/budget_stop.py) and aborts the job; speak
        # only if that abort never comes.
        time.sleep(QUIET_WAIT_SECONDS)
    if not collective or comm.Get_rank() == 0:
        detail = getattr(err, "detail", "")  # an InternalError's traceback, when asked for
        if detail and os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
            print(detail, file=sys.stderr, end="", flush=True)
        where = ("" if collective or getattr(err, "for_all", False) or comm.Get_size() == 1
                 else f"[agent {comm.Get_rank()}] ")
        print(f"mpi_privopt: error: {where}{err}", file=sys.stderr, flush=True)
    status = getattr(err, "status", 2)
    if not collective:
        # Only this rank knows; the others may be waiting in a collective call.
        from .mpiutil import abort_others
        abort_others(status)
        sys.exit(status)
    leave_together(status)  # every rank knows


def leave_together(status: int) -> NoReturn:
    """Every rank leaves with ``status``, cleanly, without MPI_Abort's banner.

    Call it on every rank of a job whose ranks all know the status (after a collective
    decision). Under ``python -m mpi4py`` a non-zero exit would make each rank call
    MPI_Abort; MPI is finalised first so that it does not. A normal exit after
    MPI_Finalize (sys.exit: ranks leaving through os._exit made hydra kill the others and
    report 9 in about half the runs, see cli._interrupted).
    """
    from mpi4py import MPI
    sys.stdout.flush()
    sys.stderr.flush()
    MPI.Finalize()
    sys.exit(status)



def leave_on_early_interrupt() -> None:
    """Until a run's loop takes the signals over, SIGINT (Ctrl-C) ends the job at once.

    The launcher sends SIGINT to every rank, each anywhere in its start (an import, the
    set-up, a collective wait): they cannot agree on a stop as the loop does
    (services/stop_signal.py), and a KeyboardInterrupt is not a way out either (each rank
    printed its traceback, and one raised inside an import's callback is swallowed: that
    rank went on into the set-up and waited for ever for the others). So the handler
    ends the job from the rank it runs on (:func:`interrupted_before_the_loop`). The
    loop's handlers replace it and put it back when the loop ends; after the loop the
    run's end holds the signals (run_commit.SignalHold).
    """
    signal.signal(signal.SIGINT, lambda signum, frame: interrupted_before_the_loop())


def interrupted_before_the_loop() -> NoReturn:
    """End the job on SIGINT that came before a run's loop handles signals: one line from
    the launcher's task 0, and no rank left waiting.

    Task 0 says it, releases a claim of a run directory it holds (removing the directory
    if nothing was written there yet), lets the launcher forward the line
    (:data:`INTERRUPT_GRACE_SECONDS`) and aborts the job (MPI_Abort, status 130 and the
    launcher's one ``Abort(130)`` line). The other tasks wait for that abort, and end by
    the signal if it does not come (task 0 was already in its loop). A task without MPI
    started also ends by the signal: one that left normally before MPI_Init would leave
    the others inside MPI_Init waiting for it for ever (the launcher ends the job only for
    a task a signal killed), and none may finalise while the others are in a collective.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C changes nothing now
    root = announced_rank(os.environ) == 0
    if root:
        print(f"mpi_privopt: interrupted by SIGINT {EARLY_INTERRUPT}".rstrip(),
              file=sys.stderr, flush=True)
        lock = sys.modules.get("mpi_privopt.run_lock")
        if lock is not None:
            lock.release_all()
    sys.stdout.flush()
    time.sleep(INTERRUPT_GRACE_SECONDS * (1 if root else 2))
    mpi = sys.modules.get("mpi4py.MPI")
    try:
        started = mpi.Is_initialized() and not mpi.Is_finalized()
    except AttributeError:  # MPI not imported, or interrupted while it was imported
        started = False
    if root and started:
        mpi.COMM_WORLD.Abort(130)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
    os._exit(130)  # not reached: the signal ends the process

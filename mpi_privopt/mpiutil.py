"""The MPI protocols every part of a run shares: fail together, compute once, abort.

* :func:`agree`: a setup step run on every rank; if any rank raises a
  :class:`UserError`, every rank raises the same error (the lowest failing rank's), so all
  ranks stop together with one clear message instead of some ranks waiting forever in the
  next collective call.
* :func:`computed_once`: rank 0 computes, every rank gets the result (or its error).

In both, any other exception a step raises (a bug, not the user's input) reaches every
rank as an :class:`~mpi_privopt.errors.InternalError` naming the failing rank and the
exception: the others never wait for a rank that has left the protocol, and the command
line says it once (tests/mpi/test_collective_errors.py).
* :func:`abort_others`: the job ends from one rank that alone knows it failed (the others
  may be waiting on it in a collective call).
"""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import TypeVar

from mpi4py import MPI

from .errors import InternalError, UserError
from .services import faults
from .network import sleeping_barrier

T = TypeVar("T")

#: seconds a failing rank gives the launcher to forward its message before aborting
ABORT_GRACE_SECONDS = 0.5


def agree(comm: MPI.Intracomm, step: Callable[[], T]) -> T:
    """Call ``step()`` on every rank; raise everywhere if it raised a UserError anywhere.

    A step may be long on one rank (rank 0's reference solve, loading a big shard): the
    others wait for it at a barrier that sleeps instead of MPI's polling
    (:func:`~mpi_privopt.network.sleeping_barrier`), then exchange the outcomes.
    """
    failure = cause = None
    result = None
    try:
        result = step()
    except Exception as err:  # noqa: BLE001  (every rank must learn it, a bug too)
        failure, cause = _failure(err, comm.Get_rank()), err
    sleeping_barrier(comm)
    failures = comm.allgather(failure)
    for rank, failed in enumerate(failures):
        if failed is not None:
            raise _collective(failed, rank) from (cause if rank == comm.Get_rank() else None)
    return result  # type: ignore[return-value]


def computed_once(comm: MPI.Intracomm, step: Callable[[], T], root: int = 0) -> T:
    """``step()`` on ``root`` only, its result on every rank (or its error on every rank).

    For a pure computation that every rank would otherwise repeat, loading its libraries
    (a calibration's root finder: scipy) on every rank, and for one that needs every rank's
    data (the reference solution). Collective, so every rank calls it at the same point.
    The other ranks wait without keeping a core busy (an MPI wait polls), since with more
    ranks than cores rank 0's computation needs the cores they would take.
    """
    global _once_calls
    payload = cause = None
    if comm.Get_rank() == root:
        _once_calls += 1
        try:
            faults.fault("computed-once", comm.Get_rank(), _once_calls)  # tests only
            payload = (True, step())
        except Exception as err:  # noqa: BLE001  (the others wait for this rank: a bug too)
            payload, cause = (False, _failure(err, root)), err
    sleeping_barrier(comm)
    ok, value = comm.bcast(payload, root=root)
    if ok:
        return value
    raise _collective(value, root) from cause


#: computed_once's calls on this process (the fault tests name one by its number)
_once_calls = 0


def _failure(err: Exception, rank: int) -> tuple:
    """What the other ranks are told of the exception ``err`` raised on ``rank``."""
    if isinstance(err, UserError):
        return (type(err), err.what, err.fix,
                err.detail if isinstance(err, InternalError) else "")
    frame = traceback.extract_tb(err.__traceback__)[-1] if err.__traceback__ else None
    where = (f" (in {frame.name}, {frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
             if frame is not None else "")
    return (InternalError,
            f"internal error on agent {rank}: {type(err).__name__}: {err}{where}",
            "this is a bug in mpi_privopt, not in your input: please report it with this "
            "message and the command; MPI_PRIVOPT_TRACEBACK=1 prints its traceback",
            "".join(traceback.format_exception(err)))


def _collective(failure: tuple, rank: int) -> UserError:
    """The error every rank raises for ``failure`` (:func:`_failure`) on ``rank``."""
    cls, what, fix, detail = failure
    err = cls(what, fix, detail) if cls is InternalError else cls(what, fix)
    err.collective = True
    err.rank = rank
    return err


def abort_others(code: int) -> None:
    """Abort the whole MPI job with ``code`` (a no-op in a single-process job)."""
    comm = MPI.COMM_WORLD
    if comm.Get_size() > 1:
        # The launcher forwards each rank's output asynchronously, and MPI_Abort makes it
        # kill every process at once: on a loaded machine the message just printed was
        # sometimes dropped. One pause on this fatal path lets it reach the user.
        time.sleep(ABORT_GRACE_SECONDS)
        comm.Abort(code)

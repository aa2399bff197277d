"""The MPI protocols every part of a run shares: fail together, compute once, abort.

* :func:`agree`: a setup step run on every rank; if any rank raises a
  :class:`UserError`, every rank raises the same error (the lowest failing rank's), so all
  ranks stop together with one clear message instead of some ranks waiting forever in the
  next collective call.
* :func:`computed_once`: rank 0 computes, every rank gets the result (or its error).
* :func:`abort_others`: the job ends from one rank that alone knows it failed (the others
  may be waiting on it in a collective call).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from mpi4py import MPI

from .errors import UserError
from .network import wait_sleeping

T = TypeVar("T")

#: seconds a failing rank gives the launcher to forward its message before aborting
ABORT_GRACE_SECONDS = 0.5


def agree(comm: MPI.Intracomm, step: Callable[[], T]) -> T:
    """Call ``step()`` on every rank; raise everywhere if it raised a UserError anywhere.

    A step may be long on one rank (rank 0's reference solve, loading a big shard): the
    others wait for it at a barrier that sleeps instead of MPI's polling
    (:func:`~mpi_privopt.network.wait_sleeping`), then exchange the outcomes.
    """
    failure = None
    result = None
    try:
        result = step()
    except UserError as err:
        failure = (type(err), err.what, err.fix)
    wait_sleeping(comm.Ibarrier())
    failures = comm.allgather(failure)
    for rank, failed in enumerate(failures):
        if failed is not None:
            cls, what, fix = failed
            err = cls(what, fix)
            err.collective = True
            err.rank = rank
            raise err
    return result  # type: ignore[return-value]


def computed_once(comm: MPI.Intracomm, step: Callable[[], T]) -> T:
    """``step()`` on rank 0 only, its result on every rank (or its UserError on every rank).

    For a pure computation that every rank would otherwise repeat, loading its libraries
    (a calibration's root finder: scipy) on every rank, and for one that needs every rank's
    data (the reference solution). Collective, so every rank calls it at the same point.
    The other ranks wait without keeping a core busy (an MPI wait polls), since with more
    ranks than cores rank 0's computation needs the cores they would take.
    """
    payload = None
    if comm.Get_rank() == 0:
        try:
            payload = (True, step())
        except UserError as err:
            payload = (False, (type(err), err.what, err.fix))
    wait_sleeping(comm.Ibarrier())
    ok, value = comm.bcast(payload, root=0)
    if ok:
        return value
    cls, what, fix = value
    err = cls(what, fix)
    err.collective = True
    err.rank = 0
    raise err


def abort_others(code: int) -> None:
    """Abort the whole MPI job with ``code`` (a no-op in a single-process job)."""
    comm = MPI.COMM_WORLD
    if comm.Get_size() > 1:
        # The launcher forwards each rank's output asynchronously, and MPI_Abort makes it
        # kill every process at once: on a loaded machine the message just printed was
        # sometimes dropped. One pause on this fatal path lets it reach the user.
        time.sleep(ABORT_GRACE_SECONDS)
        comm.Abort(code)

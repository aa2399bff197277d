"""What every program started under mpiexec does at its edges: load the config all ranks
agree on, and leave on a user error with one message and no hang.

Shared by the command line (:mod:`mpi_privopt.cli`) and the attack runner
(``python -m mpi_privopt.attacks``), so that neither imports the other.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import NoReturn

from .errors import UserError

#: seconds a failing rank gives the launcher to forward its message before aborting
ABORT_GRACE_SECONDS = 0.5


def load_agreed_config(config: str | None, overrides: Sequence[str]):
    """``config`` with ``overrides``, loaded once every rank agrees it is valid.

    Raises the same :class:`UserError` on every rank when any rank finds it invalid.
    """
    from mpi4py import MPI

    from .collective import agree
    from .config import load_config
    return agree(MPI.COMM_WORLD, lambda: load_config(config, list(overrides)))


def _world():
    from mpi4py import MPI
    return MPI.COMM_WORLD


def fail_user(err: UserError) -> NoReturn:
    """Print a user error once and exit non-zero on every rank without a hang."""
    comm = _world()
    collective = getattr(err, "collective", False)
    if not collective or comm.Get_rank() == 0:
        where = "" if collective or comm.Get_size() == 1 else f"[agent {comm.Get_rank()}] "
        print(f"mpi_privopt: error: {where}{err}", file=sys.stderr, flush=True)
    if not collective:
        # Only this rank knows; the others may be waiting in a collective call.
        abort_others(2)
        sys.exit(2)
    # Every rank knows: leave together and cleanly, without MPI_Abort's noise.
    from mpi4py import MPI
    sys.stdout.flush()
    sys.stderr.flush()
    MPI.Finalize()
    os._exit(2)


def abort_others(code: int) -> None:
    """Abort the whole MPI job with ``code`` (a no-op in a single-process job)."""
    comm = _world()
    if comm.Get_size() > 1:
        # The launcher forwards each rank's output asynchronously, and MPI_Abort makes it
        # kill every process at once: on a loaded machine the message just printed was
        # sometimes dropped. One pause on this fatal path lets it reach the user.
        time.sleep(ABORT_GRACE_SECONDS)
        comm.Abort(code)

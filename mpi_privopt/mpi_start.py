"""How a ``run`` starts MPI: every task imports the engine first, then all start MPI together.

With mpi4py's defaults, importing ``mpi4py.MPI`` starts MPI (``MPI_Init_thread``), so a
task that imports the engine is in ``MPI_Init`` as soon as its imports reach mpi4py,
and there it waits for the slowest task of the job, testing for it all the time (MPICH):
with K tasks on a few cores, the tasks that finished importing take the cores from those
still importing. And task 0 loads more than the others before MPI starts (scipy:
:func:`~mpi_privopt.prelaunch.preload_for_rank_0`), while the others sleep at its gate.

Here (:func:`start_mpi`) every task imports the engine with MPI not yet started
(``mpi4py.rc.initialize = False``), so that the other tasks' imports run while task 0
preloads; the tasks of task 0's host then sleep at its gate until it is done, and all
start MPI at once, in the same thread level mpi4py would have asked for, and with MPI
finalized at exit as mpi4py does for an MPI it started itself. Nothing runs between the
imports and ``MPI_Init`` but the gate. Measured: docs/performance.md, section 8, "The
whole job at 50 ranks".
"""
from __future__ import annotations

import sys

__all__ = ["start_mpi"]



def start_mpi() -> None:
    """Import the engine, let task 0 preload (the others wait at its gate), start MPI.

    Where MPI was already imported (an embedding program, a test under pytest-mpi) or
    mpi4py was told not to start it, only the import and the gate happen, as before.
    """
    import mpi4py
    deferred = "mpi4py.MPI" not in sys.modules and mpi4py.rc.initialize
    if deferred:
        mpi4py.rc.initialize = False
        if mpi4py.rc.finalize is None:  # finalize at exit, as for an MPI started at import
            mpi4py.rc.finalize = True
    from . import engine  # noqa: F401 (the imports, MPI not started)
    from .prelaunch import preload_for_rank_0
    preload_for_rank_0()
    if deferred:
        from mpi4py import MPI
        if not MPI.Is_initialized():
            if mpi4py.rc.threads:
                # mpi4py's names of the thread levels (``mpi4py.rc.thread_level``)
                levels = {"single": MPI.THREAD_SINGLE, "funneled": MPI.THREAD_FUNNELED,
                          "serialized": MPI.THREAD_SERIALIZED,
                          "multiple": MPI.THREAD_MULTIPLE}
                MPI.Init_thread(levels[mpi4py.rc.thread_level])
            else:
                MPI.Init()

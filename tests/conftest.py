"""Fixtures shared by the unit and the MPI tests.

Two kinds of equality are asserted in this suite, and each test says which it makes:

* **same machine, bitwise** (``np.array_equal``, ``==`` on floats, "bitwise" in a test's
  name or docstring): two runs made by the test itself on this machine, e.g. a resumed run
  against an uninterrupted one, two placements, concurrent jobs, a fast path against a
  batched one. The same code on the same CPU must give the same bits;
* **across machines, under a tolerance**: only ``tests/e2e/test_golden.py`` compares with
  records kept in the repository (written on another CPU, whose BLAS may pick other
  kernels), under the rule of ``tests/golden/compare.py``.
"""
import contextlib
import os
import sys
from pathlib import Path

import pytest

from mpi_privopt import shm_segments

# Shared helpers (launch_util: how a test starts a child mpiexec) import as top-level modules.
sys.path.insert(0, str(Path(__file__).parent))

#: MPICH's segments in /dev/shm when the session started (one process, not a rank)
_SHM_BEFORE = None if "PMI_RANK" in os.environ or "OMPI_COMM_WORLD_RANK" in os.environ \
    else shm_segments.snapshot()


def pytest_sessionfinish(session, exitstatus):
    """The fault tests stop jobs short on purpose, each leaving its MPICH segments in
    /dev/shm (memory until the machine restarts): remove those of this session."""
    if _SHM_BEFORE is not None:
        shm_segments.clean_after(_SHM_BEFORE)


class MPI3Comm:
    """A communicator whose library has no persistent collectives (MPI 3)."""

    def __init__(self, comm):
        self._comm = comm

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def Neighbor_allgather_init(self, *args, **kwargs):  # noqa: N802
        raise NotImplementedError("MPI_Neighbor_allgather_init")


@pytest.fixture
def as_mpi3():
    """``with as_mpi3(net):`` channels made inside see an MPI-3 library (the fallback)."""
    @contextlib.contextmanager
    def swap(net):
        real, net.comm = net.comm, MPI3Comm(net.comm)
        try:
            yield net
        finally:
            net.comm = real
    return swap


@pytest.fixture
def channel_path(as_mpi3):
    """``with channel_path(net, persistent):`` channels made inside take the persistent path
    (skipped where the library has none: MPI 3, Open MPI 4.1) or the MPI-3 fallback."""
    def choose(net, persistent: bool):
        if not persistent:
            return as_mpi3(net)
        from mpi_privopt.bench import persistent_collectives
        if not persistent_collectives(net.comm):
            pytest.skip("the MPI library has no persistent collectives (MPI 3): "
                        "only the fallback runs")
        return contextlib.nullcontext(net)
    return choose

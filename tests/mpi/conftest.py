"""Fixtures for tests that run inside ``mpiexec -n K python -m pytest --with-mpi``."""
import shutil
import tempfile

import pytest
from mpi4py import MPI


@pytest.fixture
def comm():
    return MPI.COMM_WORLD


@pytest.fixture
def shared_dir(comm):
    """One temporary directory, the same path on every rank (rank 0 makes it)."""
    path = tempfile.mkdtemp(prefix="mpi_privopt-test-") if comm.rank == 0 else None
    path = comm.bcast(path)
    yield path
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path, ignore_errors=True)

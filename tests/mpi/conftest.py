"""Fixtures for tests that run inside ``mpiexec -n K python -m pytest --with-mpi``."""
import shutil
import tempfile

import pytest
from mpi4py import MPI

from mpi_privopt.methods.perturbed import IterateRelease


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


@pytest.fixture
def iterate_sensitivity_halved(monkeypatch):
    """A planted bug (this test process only): every iterate release books half the
    sensitivity it uses. The audit and the sensitivity check must both catch it."""
    call = IterateRelease.__call__
    monkeypatch.setattr(IterateRelease, "__call__",
                        lambda self, w, n, sensitivity, out: call(self, w, n, sensitivity / 2,
                                                                  out))

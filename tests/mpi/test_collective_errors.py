"""A setup error on one rank stops every rank with the same error (no hang)."""
import pytest

from mpi_privopt.mpiutil import agree
from mpi_privopt.errors import DataError


@pytest.mark.mpi(min_size=2)
def test_an_error_on_one_rank_is_raised_on_all(comm):
    def step():
        if comm.rank == comm.size - 1:
            raise DataError("agent data is broken", "fix it")
        return comm.rank

    with pytest.raises(DataError, match="agent data is broken") as info:
        agree(comm, step)
    assert info.value.collective and info.value.rank == comm.size - 1


@pytest.mark.mpi(min_size=2)
def test_success_returns_each_ranks_value(comm):
    assert agree(comm, lambda: comm.rank * 2) == comm.rank * 2

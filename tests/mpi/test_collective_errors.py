"""A setup error on one rank stops every rank with the same error (no hang); so does a
bug (an exception that is not a user error) inside a collective step."""
import pytest

from mpi_privopt import mpiutil
from mpi_privopt.audit.runner import run_audit
from mpi_privopt.config import load_config
from mpi_privopt.mpiutil import agree, computed_once
from mpi_privopt.errors import DataError, InternalError
from mpi_privopt.services import faults

#: a short zcdp-nfl run to audit
SHORT_AUDIT = ["problem.name=ridge", "problem.samples=20", "problem.features=4",
               "problem.clip=5.0", "topology.kind=complete", "run.iterations=4",
               "run.eval_every=4", "privacy.epsilon=10.0", "privacy.delta=1e-5",
               "algorithm.name=zcdp-nfl"]


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


@pytest.mark.mpi(min_size=2)
def test_a_bug_on_one_rank_is_raised_on_all_as_an_internal_error(comm):
    """An exception that is not a user error leaves the failing rank inside the protocol:
    the others learn it instead of waiting for that rank in the next collective call."""
    def step():
        if comm.rank == comm.size - 1:
            raise ZeroDivisionError("a bug")
        return comm.rank

    with pytest.raises(InternalError, match="internal error on agent") as info:
        agree(comm, step)
    err = info.value
    assert err.collective and err.rank == comm.size - 1 and err.status == 1
    assert f"agent {comm.size - 1}: ZeroDivisionError: a bug" in err.what
    assert "ZeroDivisionError" in err.detail  # the traceback, for MPI_PRIVOPT_TRACEBACK=1
    # the failing rank keeps the original exception for a debugger; the others have none
    assert isinstance(err.__cause__, ZeroDivisionError) == (comm.rank == comm.size - 1)


@pytest.mark.mpi(min_size=2)
def test_a_bug_inside_a_step_computed_once_reaches_every_rank(comm, monkeypatch):
    """The fault hook raises on rank 0 inside its next computed_once step (as
    ``MPI_PRIVOPT_TEST_FAULT=raise@computed-once:0:N`` does in a launched job)."""
    monkeypatch.setattr(faults, "_FAULTS",
                        (("raise", "computed-once", 0, mpiutil._once_calls + 1, ""),))
    with pytest.raises(InternalError, match="RuntimeError: a test's fault at computed-once"):
        computed_once(comm, lambda: 1)
    assert computed_once(comm, lambda: comm.rank + 5) == 5  # the next call is unaffected


@pytest.mark.mpi(min_size=3)
def test_a_bug_in_the_audit_summary_reaches_every_rank(comm, shared_dir, monkeypatch):
    """Rank 0 summarises the audit's records while the others wait for its verdict."""
    monkeypatch.setattr(faults, "_FAULTS", (("raise", "audit-summary", 0, 0, ""),))
    cfg = load_config(None, SHORT_AUDIT)
    with pytest.raises(InternalError, match="a test's fault at audit-summary"):
        run_audit(cfg, target=0, trials=20, force=True, out=f"{shared_dir}/audit", comm=comm)


@pytest.mark.mpi(min_size=3)
def test_a_bug_while_rank_0_prints_the_audit_reaches_every_rank(comm, shared_dir, monkeypatch):
    """``audit``'s command: rank 0 formats the report the others wait to hear the verdict
    of; a bug there must not leave them waiting."""
    import argparse

    from mpi_privopt.audit import command, runner

    def broken(report):
        raise RuntimeError("a test's bug in format_report")
    monkeypatch.setattr(runner, "format_report", broken)
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args(["--trials", "20", "--force", "--out", f"{shared_dir}/audit"])
    cfg = load_config(None, SHORT_AUDIT)
    with pytest.raises(InternalError, match="a test's bug in format_report"):
        command.main(args, cfg)

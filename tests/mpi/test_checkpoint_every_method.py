"""Every registered method can be stopped at a signal and resumed to the very same result.

For each contract case in its noisy form (the method as it is meant to run: DP noise from
the ``fast`` seeded source, shares, perturbations), three runs of T iterations on the
ranks of this job: one straight through; one in which rank 0 gets SIGTERM (the test hook
of mpi_privopt/services/faults.py) during iteration k, so that every agent stops at the
iteration they agree on and writes its checkpoint; and the resume of that one. The
resumed run's ``models.npz`` and ``privacy.json`` must equal the straight run's byte for
byte, and its metrics every column but the elapsed time. Every state is written as JSON
and arrays and read back without pickle (mpi_privopt/services/state_codec.py), so a method
whose state holds anything a checkpoint may not hold fails here.

Run under mpiexec, e.g. ``mpiexec -n 5 python -m pytest --with-mpi tests/mpi/test_checkpoint_every_method.py``.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from mpi4py import MPI

from mpi_privopt.services import checkpoint_files, faults
from mpi_privopt.services.stop_signal import StopOnSignal
from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.results import read_metrics
sys.path.insert(0, str(Path(__file__).parent))
from contract_cases import BASE, case_for, nominal_only  # noqa: E402

T = 12
#: the iteration during which rank 0 receives SIGTERM
SIGNALLED_AT = 5


@pytest.fixture(scope="module")
def root():
    comm = MPI.COMM_WORLD
    path = comm.bcast(tempfile.mkdtemp(prefix="mpi_privopt-ckpt-") if comm.rank == 0 else None)
    yield Path(path)
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(path, ignore_errors=True)


def _config(name: str, accounting: list[str] | None = None):
    """The method's noisy contract case; ``accounting`` in place of its usual one."""
    case = case_for(name)
    overrides = case.noisy if case.noisy is not None else case.noiseless
    accounting = nominal_only(name) if accounting is None else accounting
    return load_config(None, BASE + overrides + accounting + [f"run.iterations={T}",
                                                              "run.eval_every=1",
                                                              "privacy.noise=fast"])


SAVEABLE = sorted(name for name, cls in ALGORITHMS.items() if not cls.no_checkpoint)


def test_only_the_token_method_cannot_be_checkpointed():
    # a method added without a working checkpoint must say why (no_checkpoint), and the
    # list in docs/reliability.md names these
    assert sorted(set(ALGORITHMS) - set(SAVEABLE)) == ["token-admm"]


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", SAVEABLE)
def test_signal_then_resume_equals_a_straight_run(root, name, monkeypatch):
    _signal_then_resume(root / name, _config(name), monkeypatch)


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("name", ["pdop-aggregative", "tvs-aggregative"])
def test_the_frameworks_resume_under_the_derived_accounting_too(root, name, monkeypatch):
    # their derived sensitivities keep the method's step schedule (once a closure, which
    # no checkpoint could save)
    _signal_then_resume(root / f"{name}-derived",
                        _config(name, ["privacy.accounting=derived"]), monkeypatch)


def _signal_then_resume(where: Path, cfg, monkeypatch) -> None:
    comm = MPI.COMM_WORLD
    # agree after every iteration (by default about every 20 ms: past the end of this run)
    monkeypatch.setenv("MPI_PRIVOPT_AGREE_SECONDS", "0")
    straight, stopped = where / "straight", where / "stopped"
    run(cfg, out=str(straight), comm=comm, stream=None)

    monkeypatch.setattr(faults, "_FAULTS", (("term", "iteration", 0, SIGNALLED_AT, ""),))
    first = run(cfg, out=str(stopped), comm=comm, stream=None)
    monkeypatch.setattr(faults, "_FAULTS", ())
    if comm.rank == 0:
        assert first.summary.status == "interrupted"
        # agreed one iteration after the flag was raised: never before it
        assert first.summary.stopped_at_iteration in (SIGNALLED_AT, SIGNALLED_AT + 1)
        assert not (stopped / "models.npz").exists()
    resumed = run(cfg, out=str(stopped), comm=comm, stream=None, resume=True)
    comm.Barrier()
    if comm.rank != 0:
        return
    assert resumed.summary.status == "completed"
    for file in ("models.npz", "privacy.json"):
        assert (stopped / file).read_bytes() == (straight / file).read_bytes(), file
    a, b = read_metrics(straight), read_metrics(stopped)
    assert list(a) == list(b)
    for column in a:
        if column != "elapsed_seconds":
            assert a[column].tolist() == b[column].tolist(), column


@pytest.mark.mpi(min_size=2)
@pytest.mark.parametrize("aim", [0.0, 0.002])
def test_every_rank_stops_after_the_same_iteration(aim, monkeypatch):
    # the stride between agreements is rank 0's timing; every rank must still complete
    # each agreement, and stop, after the same iteration, whoever got the signal
    import signal
    import time
    comm = MPI.COMM_WORLD
    monkeypatch.setenv("MPI_PRIVOPT_AGREE_SECONDS", str(aim))
    signalled = comm.size - 1
    with StopOnSignal(comm) as stop:
        for n in range(1, 100000):
            time.sleep(0.0002)  # an iteration's work
            if n == 50 and comm.rank == signalled:
                stop._handle(signal.SIGTERM, None)
            agreed = stop.agreed()
            if agreed:
                break
    assert agreed == signal.SIGTERM
    stops = comm.allgather(n)
    assert len(set(stops)) == 1 and stops[0] > 50
    if aim == 0.0:
        assert stops[0] <= 52  # started after 50 or 51, completed one iteration on


@pytest.mark.mpi(min_size=2)
def test_sigint_to_the_last_rank_stops_every_rank(root, monkeypatch):
    # Ctrl-C (SIGINT) reaching one rank only: the others learn it from the agreement
    comm = MPI.COMM_WORLD
    monkeypatch.setenv("MPI_PRIVOPT_AGREE_SECONDS", "0")
    monkeypatch.setattr(faults, "_FAULTS", (("int", "iteration", comm.size - 1, 4, ""),))
    result = run(_config("dgd"), out=str(root / "sigint"), comm=comm, stream=None)
    if comm.rank == 0:
        assert result.summary.status == "interrupted"
        assert result.summary.stop_signal == "SIGINT"
        assert result.summary.stopped_at_iteration in (4, 5)
        assert checkpoint_files.latest(root / "sigint")["iteration"] == result.summary.stopped_at_iteration

"""After a run the command line leaves with SIGINT and SIGTERM ignored.

Python resets a signal whose handler is a Python function to its default action while it
finalises, and ``python -m mpi4py`` calls ``MPI_Finalize`` after that: a Ctrl-C then killed
a rank whose run had completed, and the launcher killed the others (``mpiexec`` exited 2
or 9 with ``summary.json`` saying ``completed``, in 2 of 32 tries with the signal sent
around the run's end; docs/reliability.md, "Faults during a run"). An ignored signal stays
ignored through finalisation, so the command line's run ends holding them that way.
"""
import signal

import pytest
from mpi4py import MPI

from mpi_privopt.config import load_config
from mpi_privopt.engine import run

STOP = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture
def handlers_restored():
    before = {sig: signal.getsignal(sig) for sig in STOP}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def _run(tmp_path, leaving: bool) -> None:
    cfg = load_config("dgd-ridge", ["run.iterations=3", "run.checkpoint_every=0"])
    result = run(cfg, out=str(tmp_path / "run"), comm=MPI.COMM_SELF, stream=None,
                 leaving=leaving)
    assert result.summary.status == "completed"


def test_the_command_lines_run_leaves_the_stop_signals_ignored(tmp_path, handlers_restored):
    for sig in STOP:
        signal.signal(sig, signal.default_int_handler)
    _run(tmp_path, leaving=True)
    assert [signal.getsignal(sig) for sig in STOP] == [signal.SIG_IGN, signal.SIG_IGN]


def test_a_run_inside_a_program_puts_the_callers_handlers_back(tmp_path, handlers_restored):
    def mine(signum, frame):
        pass
    for sig in STOP:
        signal.signal(sig, mine)
    _run(tmp_path, leaving=False)
    assert [signal.getsignal(sig) for sig in STOP] == [mine, mine]

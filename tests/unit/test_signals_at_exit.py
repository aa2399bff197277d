"""The command line's run leaves with SIGINT and SIGTERM ignored, and only then.

Python resets a signal whose handler is a Python function to its default action while it
finalises, and ``python -m mpi4py`` calls ``MPI_Finalize`` after that: a Ctrl-C then killed
a rank whose run had completed, and the launcher killed the others (``mpiexec`` exited 2
with ``summary.json`` saying ``completed``, in 2 of 32 tries with the signal sent around
the run's end; docs/reliability.md, "Faults during a run"). An ignored signal stays ignored
through finalisation, so the command line's run ignores them from the interpreter's exit
callbacks on. Not before: a process started by an in-process caller meanwhile would
inherit the ignored signals, and a shell script cannot trap a signal ignored when it
starts (``launch/local.sh`` then never passed a Ctrl-C on).
"""
import signal
import subprocess
import sys
import textwrap

import pytest
from mpi4py import MPI

from launch_util import child_env
from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.run_commit import SignalHold

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


def _ignored_by_a_child() -> str:
    """The signals a process started now inherits as ignored (``SigIgn``, hex)."""
    status = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True)
    return status.stdout.split("SigIgn:")[1].split()[0]


def test_the_command_lines_run_holds_the_signals_and_ignores_them_at_exit(tmp_path):
    # in its own interpreter: what matters happens when that interpreter exits
    code = textwrap.dedent(f"""
        import atexit, signal
        from mpi4py import MPI
        from mpi_privopt.config import load_config
        from mpi_privopt.engine import run
        # registered first, so it runs after the run's own exit callback
        atexit.register(lambda: print("at exit:", signal.getsignal(signal.SIGINT),
                                      signal.getsignal(signal.SIGTERM), flush=True))
        cfg = load_config("dgd-ridge", ["run.iterations=3", "run.checkpoint_every=0"])
        run(cfg, out={str(tmp_path / "run")!r}, comm=MPI.COMM_SELF, stream=None,
            leaving=True)
        print("after the run:", type(signal.getsignal(signal.SIGINT).__self__).__name__,
              flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-2] == "after the run: SignalHold"            # held, not yet ignored
    assert lines[-1] == f"at exit: {signal.SIG_IGN} {signal.SIG_IGN}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_started_after_an_in_process_run_inherits_no_ignored_signal(
        tmp_path, handlers_restored):
    _run(tmp_path, leaving=True)
    assert isinstance(signal.getsignal(signal.SIGINT).__self__, SignalHold)
    ignored = int(_ignored_by_a_child(), 16)
    assert not ignored & (1 << (signal.SIGINT - 1)) and not ignored & (1 << (signal.SIGTERM - 1))


def test_a_run_inside_a_program_puts_the_callers_handlers_back(tmp_path, handlers_restored):
    def mine(signum, frame):
        pass
    for sig in STOP:
        signal.signal(sig, mine)
    _run(tmp_path, leaving=False)
    assert [signal.getsignal(sig) for sig in STOP] == [mine, mine]

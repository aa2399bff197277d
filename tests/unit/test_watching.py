"""Who watches the progress line: the decision, and the walk up to the launcher."""
import os

import pytest

from mpi_privopt.watching import (TERMINAL_VARIABLE, launcher_on_terminal, someone_watching,
                                  watched)


@pytest.mark.parametrize("environ, stderr_tty, launcher_tty, expected", [
    ({}, True, None, True),                                  # a terminal: nothing else asked
    ({TERMINAL_VARIABLE: "0"}, True, True, True),            # ... even told 0
    ({}, False, True, True),                                 # mpiexec on a terminal
    ({}, False, False, False),                               # mpiexec into a log
    ({}, False, None, False),                                # a pipe, no launcher found
    ({TERMINAL_VARIABLE: "1"}, False, None, True),           # launch/local.sh on a terminal
    ({TERMINAL_VARIABLE: "1"}, False, False, True),          # srun's ranks: no walk to srun
    ({TERMINAL_VARIABLE: "0"}, False, True, False),          # told nobody watches
    ({"SLURM_JOB_ID": "17"}, False, None, False),            # a batch job
    ({"SLURM_JOB_ID": "17"}, False, True, True),             # srun in salloc, on a terminal
    ({"PBS_JOBID": "3.server", TERMINAL_VARIABLE: "1"}, False, False, False),  # inherited
    ({TERMINAL_VARIABLE: "yes"}, False, None, False),        # only 1 means yes
])
def test_the_decision(environ, stderr_tty, launcher_tty, expected):
    assert someone_watching(environ, stderr_tty, launcher_tty) is expected


def _process(proc, pid, name, parent, stderr):
    """A fake ``/proc/PID`` with its stat line and descriptor 2."""
    (proc / str(pid) / "fd").mkdir(parents=True)
    (proc / str(pid) / "stat").write_text(f"{pid} ({name}) S {parent} {pid} {pid} 0 -1\n")
    os.symlink(stderr, proc / str(pid) / "fd" / "2")


def _tree(tmp_path, launcher_stderr, proxy="hydra_pmi_proxy"):
    proc = tmp_path / "proc"
    _process(proc, 10, "bash", 1, "/dev/pts/7")          # the user's shell, on a terminal
    _process(proc, 20, "mpiexec", 10, launcher_stderr)
    _process(proc, 30, proxy, 20, "pipe:[1234]")
    _process(proc, 40, "python", 30, "pipe:[5678]")      # rank 0
    return str(proc)


def test_the_walk_finds_the_launcher_on_a_terminal_past_its_proxy(tmp_path):
    assert launcher_on_terminal(40, _tree(tmp_path, "/dev/pts/3")) is True


def test_a_launcher_writing_to_a_file_is_not_watched_whatever_its_shell(tmp_path):
    # the shell above mpiexec is on a terminal, but mpiexec's stderr goes to a file
    assert launcher_on_terminal(40, _tree(tmp_path, "/home/u/run.log")) is False


def test_no_launcher_among_the_parents_is_none(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, 10, "bash", 1, "/dev/pts/7")
    _process(proc, 40, "python", 10, "pipe:[5678]")
    assert launcher_on_terminal(40, str(proc)) is None
    assert launcher_on_terminal(40, str(tmp_path / "nowhere")) is None


def test_a_name_with_spaces_and_parentheses_is_read_whole(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, 20, "mpiexec", 1, "/dev/tty1")
    _process(proc, 40, "py (x) y", 20, "pipe:[1]")
    assert launcher_on_terminal(40, str(proc)) is True


def test_this_process_under_pytest_is_not_watched_through_a_pipe(monkeypatch):
    class Pipe:
        def isatty(self):
            return False

    class Closed:
        def isatty(self):
            raise ValueError("I/O operation on closed file")

    monkeypatch.setenv(TERMINAL_VARIABLE, "0")
    assert not watched(Pipe()) and not watched(Closed())
    monkeypatch.setenv(TERMINAL_VARIABLE, "1")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("PBS_JOBID", raising=False)
    assert watched(Pipe())

"""The progress line of a run under mpiexec, as a person at a terminal sees it.

Rank 0's stderr is a pipe to the launcher, so it is no terminal itself: the line must
still reach a person whose mpiexec writes to a terminal (found through /proc), or whose
launcher script said so (``MPI_PRIVOPT_TERMINAL=1``, launch/local.sh), and stay out of a
log. A few seconds each: 2 ranks, 40 iterations.
"""
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from launch_util import child_env, mpiexec_command, needs_mpiexec, run_mpiexec
from mpi_privopt.watching import TERMINAL_VARIABLE

TIME_LIMIT = 180
RUN = [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run", "--set",
       "run.iterations=40", "--set", "run.eval_every=40"]


def _under_a_terminal(args, env) -> tuple[int, str]:
    """Run ``args`` with stdin, stdout and stderr on a pseudo-terminal; (status, output)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stdin=follower, stdout=follower, stderr=follower, env=env,
                            close_fds=True)
    os.close(follower)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], TIME_LIMIT)
            if not ready:
                proc.kill()
                raise AssertionError("no output for the time limit: " + b"".join(chunks).decode())
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: every process on it ended
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return proc.wait(timeout=TIME_LIMIT), b"".join(chunks).decode().replace("\r\n", "\n")


@needs_mpiexec
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="no /proc to walk")
def test_mpiexec_on_a_terminal_shows_rank_0s_progress_in_whole_lines(tmp_path):
    env = child_env()
    env.pop(TERMINAL_VARIABLE, None)  # found by the walk up to mpiexec alone
    status, output = _under_a_terminal(
        mpiexec_command(2, *RUN, "--out", str(tmp_path / "run")), env)
    assert status == 0, output
    assert "iter  1/40  elapsed" in output and "iter 40/40  elapsed" in output, output
    # whole lines (rank 0 writes to a pipe): never rewritten in place
    assert "\riter" not in output
    assert output.count("run directory") == 1


@needs_mpiexec
def test_the_launch_scripts_word_shows_it_and_a_log_gets_none(tmp_path):
    told = run_mpiexec(2, [*RUN, "--out", str(tmp_path / "told")], timeout=TIME_LIMIT,
                       env={TERMINAL_VARIABLE: "1"})
    assert told.returncode == 0, told.stderr
    assert "iter 40/40  elapsed" in told.stderr and "iter 40/40  elapsed" not in told.stdout
    log = run_mpiexec(2, [*RUN, "--out", str(tmp_path / "log")], timeout=TIME_LIMIT,
                      env={TERMINAL_VARIABLE: ""})
    assert log.returncode == 0, log.stderr
    assert "elapsed" not in log.stderr

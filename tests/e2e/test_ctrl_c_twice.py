"""Ctrl-C twice at the terminal of ``./launch/local.sh`` (docs/reliability.md, "Ctrl-C
twice").

A terminal sends SIGINT to its foreground process group. MPICH's mpiexec takes a second
SIGINT as "force abort" and kills every rank before it has written its checkpoint and
summary, so local.sh runs mpiexec in a process group of its own, passes the first Ctrl-C
on and holds back a second one that comes within ``MPI_PRIVOPT_FORCE_AFTER`` seconds.

The second Ctrl-C is sent once the first has reached a rank (the paused rank writes
``FILE.woke``): sent a fixed time after the first, on a loaded machine it could find the
script not yet scheduled, and a pending signal is not queued twice. The run's end is
slowed (rank 0 sleeps before its final checkpoint) so that the job is still there to hold
the second one back.
"""
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from launch_util import child_env, kill_script_and_job, needs_mpiexec, wait_for_file

REPO = Path(__file__).resolve().parents[2]
#: the launch, the stop and the run directory on a loaded 2-core machine
TIMEOUT = 180
#: rank 0's sleep before its final checkpoint: the second Ctrl-C comes within it
SLOW_END = 3.0


_JOBS: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_job_left():
    """A test that fails leaves no script, launcher or paused rank running."""
    yield
    while _JOBS:
        kill_script_and_job(_JOBS.pop())


def _start(out: Path, paused: Path, extra: dict) -> subprocess.Popen:
    """local.sh on 2 ranks, in a session of its own (as at a terminal: the test's SIGINT
    to the group reaches the script, not the job); rank 1 pauses at iteration 3, rank 0
    sleeps ``SLOW_END`` s at the start of the run's end."""
    faults = f"pause@iteration:1:3:{paused},slow@commit-begin:0:0:{SLOW_END}"
    env = child_env({"RANKS": "2", "MPI_PRIVOPT_AGREE_SECONDS": "0",
                     "MPI_PRIVOPT_TEST_FAULT": faults, **extra})
    job = subprocess.Popen(
        [str(REPO / "launch" / "local.sh"), "dgd-ridge", "--set", "run.iterations=200",
         "--set", "run.checkpoint_every=100", "--quiet", "--out", str(out)],
        cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    _JOBS.append(job)
    return job


def _ctrl_c_twice(job: subprocess.Popen, paused: Path) -> None:
    """Ctrl-C at iteration 3, and again once the first has reached the paused rank."""
    wait_for_file(paused, job, TIMEOUT, "the run never reached iteration 3")
    os.killpg(job.pid, signal.SIGINT)
    woke = wait_for_file(Path(f"{paused}.woke"), job, TIMEOUT,
                         "the first Ctrl-C never reached the paused rank")
    assert woke.strip() == "signal"
    os.killpg(job.pid, signal.SIGINT)


@needs_mpiexec
def test_a_second_ctrl_c_is_held_back_and_the_run_ends_with_its_summary(tmp_path):
    out, paused = tmp_path / "run", tmp_path / "paused"
    job = _start(out, paused, {})
    _ctrl_c_twice(job, paused)
    stdout, stderr = job.communicate(timeout=TIMEOUT)
    assert job.returncode == 128 + signal.SIGINT, stderr
    held = [line for line in stderr.splitlines() if "already stopping" in line]
    assert len(held) == 1, stderr
    assert "force" not in stderr.replace("forces it", ""), stderr  # no launcher force-abort
    ours = [line for line in stderr.splitlines()
            if line.startswith("mpi_privopt") and "already stopping" not in line]
    assert len(ours) == 1 and "interrupted by SIGINT" in ours[0], stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["stop_signal"] == "SIGINT"


@needs_mpiexec
def test_a_ctrl_c_after_the_grace_period_is_passed_on(tmp_path):
    """With no grace (``MPI_PRIVOPT_FORCE_AFTER=0``) the second Ctrl-C reaches the
    launcher too: what it does then is the launcher's (MPICH's force abort has exited 0 as
    well as 255), but the script holds nothing back."""
    out, paused = tmp_path / "run", tmp_path / "paused"
    job = _start(out, paused, {"MPI_PRIVOPT_FORCE_AFTER": "0"})
    _ctrl_c_twice(job, paused)
    _, stderr = job.communicate(timeout=TIMEOUT)
    assert "already stopping" not in stderr


def test_a_grace_period_that_is_not_whole_seconds_is_refused_before_the_job(tmp_path):
    """"10s" or "2.5" made the shell's arithmetic fail, and the second Ctrl-C was then
    passed on: now one message, exit 2, nothing started."""
    env = child_env({"RANKS": "2", "MPI_PRIVOPT_FORCE_AFTER": "2.5"})
    proc = subprocess.run([str(REPO / "launch" / "local.sh"), "dgd-ridge", "--out",
                           str(tmp_path / "run")], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "mpi_privopt: error: MPI_PRIVOPT_FORCE_AFTER=2.5 is not a whole number of seconds",
        "how to fix: give seconds as digits, e.g. MPI_PRIVOPT_FORCE_AFTER=10"]
    assert not (tmp_path / "run").exists()

"""Ctrl-Z at the terminal of ``./launch/local.sh`` pauses the whole job (docs/reliability.md,
"Ctrl-Z").

A terminal sends SIGTSTP to its foreground process group: the script alone, since the
launcher runs in a process group of its own and MPICH's proxy and ranks each in a session
of their own. Before, the script stopped and the ranks ran on, printing under the shell's
prompt. Now the script stops the launcher and every process it started, then itself; the
shell's ``fg`` or ``bg`` continues the script, which continues them. A pause longer than
``run.stall_timeout`` is not taken for a stall: every rank resumes at once.
"""
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from launch_util import child_env, descendants, kill_script_and_job, needs_mpiexec

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 180
#: the watchdog's timeout in the run, and the pause, several times longer
STALL_TIMEOUT = 1.0
PAUSE = 4.0


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _iteration(out: Path) -> int:
    """Rank 0's last finished iteration, from its heartbeat (0 before the loop)."""
    try:
        return json.loads((out / "heartbeats" / "agent-0.json").read_text())["iteration"]
    except (OSError, ValueError, KeyError):
        return 0


def _wait_for_progress(out: Path, job: subprocess.Popen, beyond: int) -> int:
    deadline = time.monotonic() + TIMEOUT
    while (n := _iteration(out)) <= beyond:
        assert job.poll() is None, f"the run ended first: {job.communicate()}"
        assert time.monotonic() < deadline, f"the run never passed iteration {beyond}"
        time.sleep(0.05)
    return n


_JOBS: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def no_job_left():
    """A test that fails leaves nothing stopped or running (ranks in sessions of their
    own included)."""
    yield
    while _JOBS:
        kill_script_and_job(_JOBS.pop())


@needs_mpiexec
def test_ctrl_z_pauses_every_rank_and_fg_resumes_the_run_without_a_stall(tmp_path):
    out = tmp_path / "run"
    env = child_env({"RANKS": "3", "MPI_PRIVOPT_AGREE_SECONDS": "0"})
    job = subprocess.Popen(
        [str(REPO / "launch" / "local.sh"), "dgd-ridge", "--set", "run.iterations=100000000",
         "--set", "run.eval_every=100000", "--set", f"run.stall_timeout={STALL_TIMEOUT}",
         "--quiet", "--out", str(out)],
        cwd=REPO, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True)
    _JOBS.append(job)
    _wait_for_progress(out, job, 0)
    processes = descendants(job.pid)
    assert len(processes) >= 2 + 3  # the script, the launcher (and its proxy), 3 ranks

    os.killpg(job.pid, signal.SIGTSTP)  # what the terminal does on Ctrl-Z
    deadline = time.monotonic() + TIMEOUT
    while any(_state(pid) != "T" for pid in processes):
        assert time.monotonic() < deadline, {pid: _state(pid) for pid in processes}
        time.sleep(0.05)
    paused_at = _iteration(out)
    time.sleep(PAUSE)
    assert _iteration(out) == paused_at  # nothing ran meanwhile
    assert all(_state(pid) == "T" for pid in processes)

    os.killpg(job.pid, signal.SIGCONT)  # what the shell's fg does
    _wait_for_progress(out, job, paused_at)  # the loop goes on
    assert not (out / "stall.json").exists()
    os.killpg(job.pid, signal.SIGINT)  # end it: Ctrl-C
    stdout, stderr = job.communicate(timeout=TIMEOUT)
    assert job.returncode == 128 + signal.SIGINT, stderr
    assert stderr.count("mpi_privopt: paused: every rank of the job is stopped") == 1, stderr
    assert "interrupted by SIGINT" in stderr, stderr
    assert not (out / "stall.json").exists(), (out / "stall.json").read_text()
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"

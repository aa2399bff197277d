"""A rank that stops answering (SIGSTOP) under a real mpiexec: the watchdog ends the job.

Within ``run.stall_timeout + 10 s`` of the stop: exit status 4, exactly one
``mpi_privopt: error:`` line naming the stopped agent with its host and pid, no traceback,
``stall.json`` in the run directory, and no process left (the stopped one included).

``STALL_REPEATS=20 python -m pytest tests/e2e/test_stall_watchdog.py -s`` repeats each
case and prints every time (docs/reliability.md records such a measurement); CI runs each
case once.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch_util import child_env, mpiexec_command, needs_mpiexec

TIMEOUT = 5.0
RANKS = 4
VICTIM = 2
REPEATS = int(os.environ.get("STALL_REPEATS", "1"))

#: long enough never to finish (a token run plans its whole walk at set-up: 10^6 steps)
DGD = ["dgd-ridge", "--set", "run.iterations=100000000"]
TOKEN = ["token-admm-elastic-net", "--set", "run.iterations=1000000"]


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in state  # a zombie is dead, waiting for its parent


def stall_once(out: Path, config: list[str]):
    """Start a long run, SIGSTOP agent VICTIM once it is iterating, wait for the end.

    Returns (exit status, seconds from the stop to the end, stderr, victim pid).
    """
    args = [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run", *config,
            "--out", str(out), "--set", "run.evaluate=none",
            "--set", f"run.stall_timeout={TIMEOUT}"]
    job = subprocess.Popen(mpiexec_command(RANKS, *args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=child_env())
    beat = out / "heartbeats" / f"agent-{VICTIM}.json"
    deadline = time.monotonic() + 120
    pid = None
    try:
        while pid is None and time.monotonic() < deadline:
            try:
                record = json.loads(beat.read_text())
                pid = record["pid"] if record["iteration"] > 0 else None
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        assert pid is not None, "the victim never started iterating"
        os.kill(pid, signal.SIGSTOP)
        stopped = time.monotonic()
        _, stderr = job.communicate(timeout=TIMEOUT + 60)
        return job.returncode, time.monotonic() - stopped, stderr, pid
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)


@needs_mpiexec
@pytest.mark.parametrize("config", [DGD, TOKEN], ids=["dgd", "token-admm"])
def test_a_stopped_rank_ends_the_job_with_one_message_naming_it(tmp_path, config):
    times = []
    for repeat in range(REPEATS):
        out = tmp_path / f"run{repeat}"
        status, elapsed, stderr, pid = stall_once(out, config)
        times.append(elapsed)
        assert status == 4, stderr
        assert elapsed < TIMEOUT + 10, (elapsed, stderr)
        assert stderr.count("mpi_privopt: error:") == 1, stderr
        assert f"agent {VICTIM} (host " in stderr and f"pid {pid}) stopped answering" in stderr
        assert "Traceback" not in stderr
        record = json.loads((out / "stall.json").read_text())
        assert record["silent_agents"] == [VICTIM]
        assert (out / "config.toml").is_file()
        time.sleep(0.5)
        assert not alive(pid), "the stopped rank was left behind"
    print(f"\n{config[0]}: {REPEATS} of {REPEATS} ended in "
          f"{min(times):.1f}-{max(times):.1f} s after the stop (timeout {TIMEOUT:g} s): "
          + " ".join(f"{t:.1f}" for t in times))

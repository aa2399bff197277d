"""``./launch/local.sh`` killed with SIGKILL (docs/reliability.md, "The launch script
killed").

SIGKILL cannot be trapped, and the launcher runs in a process group of its own (so that a
terminal's Ctrl-C reaches the script alone), so before, a killed script left its job
running without it. The script now starts the launcher under ``setpriv --pdeathsig
TERM``: the kernel sends the launcher SIGTERM when the script dies, and the run stops as
on a SIGTERM, with its checkpoint and summary.
"""
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from launch_util import child_env, child_pids, needs_mpiexec, wait_for_file

REPO = Path(__file__).resolve().parents[2]
#: the launch, the stop and the run directory on a loaded 2-core machine
TIMEOUT = 180


def _has_pdeathsig() -> bool:
    setpriv = shutil.which("setpriv")
    return setpriv is not None and subprocess.run(
        [setpriv, "--pdeathsig", "TERM", "true"], capture_output=True).returncode == 0


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@needs_mpiexec
@pytest.mark.skipif(not _has_pdeathsig(), reason="no setpriv with --pdeathsig (util-linux "
                    "2.33 or later): the launcher outlives a killed script")
def test_a_killed_script_stops_its_job_as_a_sigterm_would(tmp_path):
    out, paused = tmp_path / "run", tmp_path / "paused"
    env = child_env({"RANKS": "2", "MPI_PRIVOPT_AGREE_SECONDS": "0",
                     "MPI_PRIVOPT_TEST_FAULT": f"pause@iteration:1:3:{paused}"})
    launchers: list[int] = []
    job = subprocess.Popen(
        [str(REPO / "launch" / "local.sh"), "dgd-ridge", "--set", "run.iterations=200",
         "--set", "run.checkpoint_every=100", "--quiet", "--out", str(out)],
        cwd=REPO, env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        wait_for_file(paused, job, TIMEOUT, "the run never reached iteration 3")
        launchers = child_pids(job.pid)
        assert launchers, "local.sh has no child process"
        os.kill(job.pid, signal.SIGKILL)
        job.wait(timeout=TIMEOUT)
        for pid in launchers:
            assert _gone(pid, TIMEOUT), f"the launcher (pid {pid}) outlived the script"
        stderr = job.stderr.read()
        summary = json.loads((out / "summary.json").read_text())
        assert summary["status"] == "interrupted", stderr
        assert summary["stop_signal"] == "SIGTERM", stderr
        assert "interrupted by SIGTERM" in stderr, stderr
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        for pid in launchers:  # a launcher left running takes its ranks along
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

"""A rank waiting for a stopped neighbour sleeps: it does not keep a core busy.

Three ranks run ``dgd-ridge`` under a real mpiexec; agent 1 is stopped (SIGSTOP) for
:data:`STOPPED` seconds, and the other two, which wait for it in their exchange (or in the
stop-signal agreement), are measured: CPU seconds of the whole process (every thread,
from ``/proc/PID/stat``) over the wall seconds of the stopped window, the first
:data:`SETTLE` seconds left out (an exchange spins for its first milliseconds). Before
the waits slept, each used a whole core (MPICH's ``Wait`` polls); now about 1-2% (the
measurements: docs/performance.md "Waiting"). The bound, a quarter of a core, leaves room
for a loaded 2-core machine's noise: the heartbeat thread and the clock-tick resolution
of ``/proc`` (10 ms over 2 s) are far below it.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from launch_util import child_env, mpiexec_command, needs_mpiexec

RANKS = 3
VICTIM = 1
STOPPED = 2.0
SETTLE = 0.1
#: most CPU a waiting rank may use over the stopped window, in cores
BOUND = 0.25
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def iterating_pids(out: Path, deadline: float) -> dict[int, int]:
    """Each agent's pid, once every agent's heartbeat says it has finished an iteration."""
    pids: dict[int, int] = {}
    while len(pids) < RANKS and time.monotonic() < deadline:
        for k in range(RANKS):
            try:
                beat = json.loads((out / "heartbeats" / f"agent-{k}.json").read_text())
            except (OSError, ValueError):
                continue
            if beat["iteration"] > 0:
                pids[k] = beat["pid"]
        time.sleep(0.1)
    return pids


@needs_mpiexec
def test_ranks_waiting_for_a_stopped_neighbour_sleep(tmp_path):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run", "dgd-ridge",
            "--out", str(out), "--set", "run.iterations=100000000",
            "--set", "run.evaluate=none", "--set", "run.stall_timeout=120"]
    job = subprocess.Popen(mpiexec_command(RANKS, *args), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=child_env())
    pids: dict[int, int] = {}
    try:
        pids = iterating_pids(out, time.monotonic() + 120)
        assert len(pids) == RANKS, "the agents never started iterating"
        waiting = [k for k in pids if k != VICTIM]
        os.kill(pids[VICTIM], signal.SIGSTOP)
        time.sleep(SETTLE)
        cpu = {k: cpu_seconds(pids[k]) for k in waiting}
        start = time.monotonic()
        time.sleep(STOPPED - SETTLE)
        cpu = {k: cpu_seconds(pids[k]) - cpu[k] for k in waiting}
        wall = time.monotonic() - start
        os.kill(pids[VICTIM], signal.SIGCONT)
        cores = {k: seconds / wall for k, seconds in cpu.items()}
        print("\nCPU of the waiting ranks over the stopped window, in cores: "
              + ", ".join(f"agent {k} {c:.3f}" for k, c in cores.items())
              + f" ({wall:.2f} s)")
        assert all(c < BOUND for c in cores.values()), cores
    finally:
        if pids.get(VICTIM):
            try:
                os.kill(pids[VICTIM], signal.SIGCONT)
            except ProcessLookupError:
                pass
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)  # stops at the next agreed iteration
            try:
                job.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                job.kill()
                job.communicate()
        for pid in pids.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

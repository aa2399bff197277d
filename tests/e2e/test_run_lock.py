"""One writer per run directory, under mpiexec (mpi_privopt/run_lock.py, docs/reliability.md).

A run, new or resumed, holds the claim of its directory from its set-up until it exits;
another job given the same directory is refused with one message (exit 2), and a claim
left by a process that died is removed with a note. Jobs are held at a known point with
the fault hook's ``pause`` (``claimed``: in the set-up, right after the claim; ``iteration``:
inside the loop), so no test guesses timing.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from launch_util import (child_env, mpiexec_command, needs_mpiexec, run_child, run_mpiexec,
                         without_launcher_notices)
from mpi_privopt.results import read_metrics
from mpi_privopt.run_lock import CLAIM_FILE

pytestmark = needs_mpiexec

#: one launch on a loaded 2-core machine (two jobs at once in the first test)
TIMEOUT = 180
T = 24
#: the interrupted run: zcdp-nfl with the reproducible noise, a checkpoint every 5
RUN = ["default", "--set", "privacy.noise=fast", "--set", f"run.iterations={T}",
       "--set", "run.eval_every=1", "--set", "run.checkpoint_every=5", "--quiet"]
#: a short run for the claim of a new directory
SHORT = ["default", "--set", "run.iterations=3", "--quiet"]
#: agree on a signal after every iteration (these runs take milliseconds per iteration)
EVERY_ITERATION = {"MPI_PRIVOPT_AGREE_SECONDS": "0"}


def _args(*args: str) -> list[str]:
    return [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run", *args]


def launch(ranks: int, *args: str, fault: str | None = None):
    env = {**EVERY_ITERATION, **({"MPI_PRIVOPT_TEST_FAULT": fault} if fault else {})}
    return run_mpiexec(ranks, _args(*args), timeout=TIMEOUT, env=env)


def start(ranks: int, *args: str, fault: str) -> subprocess.Popen:
    """A job in the background, paused by ``fault``."""
    return subprocess.Popen(mpiexec_command(ranks, *_args(*args)), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=child_env({**EVERY_ITERATION, "MPI_PRIVOPT_TEST_FAULT": fault}))


def paused_pid(path: Path, *jobs: subprocess.Popen) -> int:
    """Wait (sleeping) until a paused rank has written ``path``; its pid."""
    deadline = time.monotonic() + TIMEOUT
    while not (path.is_file() and path.read_text().strip()):
        assert any(job.poll() is None for job in jobs), [job.communicate() for job in jobs]
        assert time.monotonic() < deadline, "the paused rank never said so"
        time.sleep(0.05)
    return int(path.read_text())


@pytest.fixture
def jobs():
    """The background jobs a test starts: ended at teardown if a failed assertion left
    one paused (SIGTERM to its launcher, which forwards it)."""
    started: list[subprocess.Popen] = []
    yield started
    for job in started:
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)
            try:
                job.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                job.kill()
                job.communicate()


def refused(code: int, stderr: str) -> str:
    """The one message of a job refused for a claimed directory (exit 2, no traceback)."""
    ours = [line for line in stderr.splitlines() if line.startswith("mpi_privopt: error")]
    assert code == 2 and len(ours) == 1, stderr
    assert "Traceback" not in stderr and "how to fix" in stderr, stderr
    return without_launcher_notices(stderr)


def test_concurrent_resumes_of_one_interrupted_run_let_exactly_one_continue(tmp_path, jobs):
    straight, out = tmp_path / "straight", tmp_path / "run"
    done = launch(4, *RUN, "--out", str(straight))
    assert done.returncode == 0, done.stderr
    killed = launch(4, *RUN, "--out", str(out), fault="kill@iteration:2:13")
    assert killed.returncode != 0 and (out / CLAIM_FILE).is_file()  # its owner died
    # two resumes at once; the one that gets the claim pauses at iteration 17, holding it
    pauses = [tmp_path / "paused-a", tmp_path / "paused-b"]
    jobs += [start(4, "--resume", str(out), "--quiet", fault=f"pause@iteration:1:17:{p}")
             for p in pauses]
    deadline = time.monotonic() + TIMEOUT
    while all(job.poll() is None for job in jobs):  # the other one is refused
        assert time.monotonic() < deadline, "neither resume was refused"
        time.sleep(0.1)
    loser = next(k for k, job in enumerate(jobs) if job.poll() is not None)
    winner = 1 - loser
    _, lost = jobs[loser].communicate(timeout=TIMEOUT)
    message = refused(jobs[loser].returncode, lost)
    assert f"--resume {out} is in use by another run" in message
    assert not pauses[loser].exists()  # it never ran an iteration
    paused_pid(pauses[winner], jobs[winner])
    Path(f"{pauses[winner]}.go").touch()
    _, stderr = jobs[winner].communicate(timeout=TIMEOUT)
    assert jobs[winner].returncode == 0, stderr
    # the claim the killed run left was removed, with one note (by the resume that ran, or
    # by the other one just before the winner's claim came first)
    assert (stderr + lost).count("removed the stale claim") == 1, (stderr, lost)
    assert not (out / CLAIM_FILE).exists()  # released at its end
    # what a single resume gives: the uninterrupted run's results
    for name in ("models.npz", "privacy.json"):
        assert (out / name).read_bytes() == (straight / name).read_bytes(), name
    a, b = read_metrics(out), read_metrics(straight)
    assert len(a["iteration"]) == T + 1
    for column in a:
        if column != "elapsed_seconds":
            assert np.array_equal(a[column], b[column]), column


def test_a_live_claim_refuses_a_second_out_and_a_claim_left_by_sigterm_does_not(tmp_path,
                                                                                jobs):
    out, paused = tmp_path / "run", tmp_path / "paused"
    first = start(2, *SHORT, "--out", str(out), fault=f"pause@claimed:0:0:{paused}")
    jobs.append(first)
    pid = paused_pid(paused, first)  # held in its set-up, the claim taken, nothing written
    second = launch(2, *SHORT, "--out", str(out))
    message = refused(second.returncode, second.stderr)
    assert f"--out {out} is in use by another run: pid {pid} on this host" in message
    first.send_signal(signal.SIGTERM)  # the launcher forwards it: every rank ends
    first.communicate(timeout=TIMEOUT)
    assert json.loads((out / CLAIM_FILE).read_text())["pid"] == pid  # left behind
    third = launch(2, *SHORT, "--out", str(out))
    assert third.returncode == 0, third.stderr
    notes = [line for line in third.stderr.splitlines() if "removed the stale claim" in line]
    assert len(notes) == 1 and f"left by pid {pid}" in notes[0], third.stderr
    assert (out / "summary.json").is_file() and not (out / CLAIM_FILE).exists()


def test_a_claim_from_another_host_is_refused_with_the_command_that_clears_it(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / CLAIM_FILE).write_text(json.dumps({
        "host": "node-elsewhere-7", "machine": "", "pid": 4242, "start_ticks": 1234,
        "started": "2026-01-02 03:04:05 UTC", "claimed": "2026-01-02 03:04:09 UTC",
        "command": "python -m mpi4py -m mpi_privopt run default"}))
    proc = launch(2, *SHORT, "--out", str(out))
    message = refused(proc.returncode, proc.stderr)
    assert "host node-elsewhere-7: pid 4242, started 2026-01-02 03:04:05 UTC" in message
    fix = message.split("how to fix: ")[1].strip()
    rm = fix[fix.index("rm "):]
    assert rm == f"rm {out / CLAIM_FILE}"
    assert run_child(rm, shell=True, timeout=10).returncode == 0  # the fix, as printed
    assert list(out.iterdir()) == []  # nothing else was touched (unit test: it runs then)

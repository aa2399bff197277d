"""The end of a run under real mpiexec: the ordered commit (mpi_privopt/run_commit.py).

Every run writes its final state (a checkpoint at its last iteration, whatever
``run.checkpoint_every`` says), then its result files, then ``summary.json``, with SIGTERM
and SIGINT held meanwhile. Here: results lost after the end are written again from the
final state, byte for byte; a rank killed at each step of the commit leaves a run that
``run --resume`` finishes without running or releasing anything; a signal during the
commit lets it complete and the run exits 0; and any finished run (``token-admm``
included) is extended without ``run.checkpoint_every``, its ledger carried. The faults
are placed by the test hook of mpi_privopt/services/faults.py (``MPI_PRIVOPT_TEST_FAULT``, at
the commit's steps ``commit-begin``, ``commit-results``, ``commit-summary``).
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from launch_util import (child_env, is_open_mpi, mpiexec_command, needs_mpiexec, run_mpiexec,
                         wait_for_file)
from mpi_privopt.results import read_metrics

pytestmark = needs_mpiexec

RANKS = 3
T = 12
DGD = ["dgd-ridge", "--set", "run.eval_every=1"]
#: the files a run's end writes (reference mode)
RESULTS = ("summary.json", "models.npz", "privacy.json", "traffic.json")
#: one launch (set-up, T iterations, the run directory) on a loaded 2-core machine
TIMEOUT = 120
#: the token method on a ring with two records per agent used again and again, so that
#: every record's loss composes over both parts of an extended run
TOKEN = ["token-admm-elastic-net", "--set", "problem.samples=8", "--set", "topology.kind=ring",
         "--set", "algorithm.schedule=ring", "--set", "algorithm.reuse=true"]


def _run_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run", *args]


def launch(*args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {"MPI_PRIVOPT_TEST_FAULT": fault} if fault else {}
    return run_mpiexec(RANKS, _run_args(*args), timeout=TIMEOUT, env=env)


def launched(*args: str, fault: str | None = None) -> subprocess.CompletedProcess:
    done = launch(*args, fault=fault)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done


def report(run_dir: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "mpi_privopt", "report", str(run_dir)],
                          capture_output=True, text=True, timeout=60, env=child_env())
    assert done.returncode == 0, done.stderr
    return done.stdout


def files(run_dir: Path, names=RESULTS) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in names}


def assert_same_run(run_dir: Path, straight: Path) -> None:
    """The results of an uninterrupted run: models and privacy byte for byte, metrics
    every column but the elapsed time, traffic every count."""
    for name in ("models.npz", "privacy.json"):
        assert (run_dir / name).read_bytes() == (straight / name).read_bytes(), name
    a, b = read_metrics(run_dir), read_metrics(straight)
    assert list(a) == list(b) and len(a["iteration"]) == T + 1
    for column in a:
        if column != "elapsed_seconds":
            assert np.array_equal(a[column], b[column]), column
    ta, tb = (json.loads((d / "traffic.json").read_text())["total"] for d in (run_dir, straight))
    for count in ("messages", "bytes"):
        assert ta[count] == tb[count], count
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"


def final_checkpoint(run_dir: Path) -> dict:
    return json.loads((run_dir / "checkpoint" / "latest.json").read_text())


def saved_state(run_dir: Path) -> dict[str, bytes]:
    """Every file of the checkpoint (each rank's state with its ledger, latest.json)."""
    return {path.name: path.read_bytes() for path in (run_dir / "checkpoint").iterdir()}


@pytest.fixture(scope="module")
def straight(tmp_path_factory) -> Path:
    """An uninterrupted dgd run of T iterations."""
    out = tmp_path_factory.mktemp("straight") / "dgd"
    launched(*DGD, "--set", f"run.iterations={T}", "--out", str(out), "--quiet")
    return out


def test_results_lost_after_the_end_are_written_again_from_the_final_state(tmp_path):
    # the reproduction: a finished run's result files removed (as a signal just after the
    # last iteration removed them before); the resume writes the very same files again
    out = tmp_path / "run"
    launched("default", "--set", f"run.iterations={T}", "--set", "run.checkpoint_every=5",
             "--out", str(out), "--quiet")
    assert final_checkpoint(out)["iteration"] == T and final_checkpoint(out)["final"]
    written = files(out, RESULTS + ("metrics.csv",))
    for name in RESULTS:
        (out / name).unlink()
    shown = report(out)
    assert "it had reached its end (iteration 12, final state saved)" in shown
    assert "write the results (nothing is run or released) with: " in shown
    state = saved_state(out)
    finished = launched("--resume", str(out))
    assert "its results are written from it (no iteration is run" in finished.stdout
    assert files(out, RESULTS + ("metrics.csv",)) == written
    # nothing was run or released again: the final state (each rank's ledger) as written
    assert saved_state(out) == state
    assert not (out / ".mpi_privopt-claim").exists()  # its claim released (run_lock.py)


@pytest.mark.parametrize("fault", ["kill@commit-results:1", "kill@commit-summary:0"])
def test_a_rank_killed_during_the_commit_leaves_a_run_the_resume_finishes(tmp_path, straight,
                                                                        fault):
    out = tmp_path / "run"
    killed = launch(*DGD, "--set", f"run.iterations={T}", "--out", str(out), "--quiet",
                    fault=f"{fault}:{T}")
    assert killed.returncode != 0
    assert "Traceback" not in killed.stderr, killed.stderr
    assert not (out / "summary.json").exists()
    assert final_checkpoint(out)["iteration"] == T
    state = saved_state(out)
    launched("--resume", str(out))
    assert_same_run(out, straight)
    assert saved_state(out) == state  # the ledger unchanged: nothing released


@pytest.mark.parametrize("fault", ["pause@commit-begin:0", "term@commit-summary:0"])
def test_a_signal_during_the_commit_lets_it_complete_with_exit_0(tmp_path, straight, fault):
    # SIGTERM to the launcher (forwarded to every rank) while rank 0 waits at the start
    # of the commit (just after the last metrics row), or SIGTERM to rank 0 alone before
    # it writes the summary: held, the commit completes, exit 0
    if is_open_mpi() and fault.startswith("pause"):
        pytest.skip("Open MPI's mpirun kills the ranks 1 s after it forwards SIGTERM unless "
                    "odls_base_sigkill_timeout is raised (docs/reliability.md)")
    out, paused = tmp_path / "run", tmp_path / "paused"
    where = f"{fault}:{T}" + (f":{paused}" if fault.startswith("pause") else "")
    job = subprocess.Popen(mpiexec_command(RANKS, *_run_args(*DGD, "--set",
                                                             f"run.iterations={T}", "--out",
                                                             str(out), "--quiet")),
                           text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=child_env({"MPI_PRIVOPT_TEST_FAULT": where}))
    if fault.startswith("pause"):
        wait_for_file(paused, job, TIMEOUT)
        job.send_signal(signal.SIGTERM)
    stdout, stderr = job.communicate(timeout=TIMEOUT)
    assert job.returncode == 0, stderr
    assert "Traceback" not in stderr and "BAD TERMINATION" not in stderr, stderr
    assert json.loads((out / "summary.json").read_text())["status"] == "completed"
    assert_same_run(out, straight)


def test_a_finished_run_is_extended_without_checkpoint_every(tmp_path, straight):
    out = tmp_path / "run"
    launched(*DGD, "--set", f"run.iterations={T // 2}", "--out", str(out), "--quiet")
    launched("--resume", str(out), "--set", f"run.iterations={T}")
    assert_same_run(out, straight)
    assert f"iterations = {T}" in (out / "config.toml").read_text()


def _agents(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "privacy.json").read_text())["agents"]


def test_the_token_method_is_extended_from_its_final_state(tmp_path):
    # at the end no token is in flight: every agent holds the released token. The
    # extension starts the next holder from its copy, so the models are the longer
    # run's; its ledger goes on from the saved one (an observer saw every iteration of
    # the first part at its final release)
    short, longer = tmp_path / "short", tmp_path / "longer"
    launched(*TOKEN, "--set", f"run.iterations={T // 2}", "--out", str(short), "--quiet")
    first = _agents(short)
    launched("--resume", str(short), "--set", f"run.iterations={T}")
    launched(*TOKEN, "--set", f"run.iterations={T}", "--out", str(longer), "--quiet")
    assert (short / "models.npz").read_bytes() == (longer / "models.npz").read_bytes()
    extended, straight_run = _agents(short), _agents(longer)
    for k in range(RANKS):
        # every record's uses in both parts compose: as many as the longer run's, never
        # only the second part's
        assert extended[k]["releases"] == straight_run[k]["releases"] > first[k]["releases"]
        # seen earlier (at the first part's end), each iteration is amplified less
        assert extended[k]["worst_observer_epsilon"] >= (
            straight_run[k]["worst_observer_epsilon"] * (1 - 1e-12))
        assert extended[k]["worst_observer_epsilon"] > first[k]["worst_observer_epsilon"]
    assert final_checkpoint(short)["iteration"] == T

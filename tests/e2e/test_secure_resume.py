"""A secure-noise run killed between checkpoints, then resumed, under real 4-rank runs:
the privacy spent before the interruption is never forgotten (docs/reliability.md,
"Killed runs and secure noise"; mpi_privopt/services/release_gap.py).

zcdp-nfl with ``privacy.noise = "secure"``, T = 15, a checkpoint every 5 iterations and
its noise calibrated over ``algorithm.horizon`` = 48 iterations, so that runs of 5, 10 and
15 iterations release exactly the first iterations of one another (the schedule does not
depend on T). A run killed at iteration 13 resumes from its checkpoint of iteration 10 and
must book iterations 11 to 15 as released before the interruption: its ledger is the
uninterrupted run's plus those iterations', computed here from the runs of 15 and 10
iterations (rho and the release counts add up over iterations), not from the method's
plan. A fallback from a damaged checkpoint of iteration 10 to the one of 5 books 6 to 15;
a resume whose plan fits the budget only without the booked iterations is refused; a
private method that cannot say its releases ahead (token-admm: an extension of its run
killed before its end) is refused with one message. (The budget check that counts the booked iterations: tests/unit/
test_release_gap.py.)
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from launch_util import needs_mpiexec, run_mpiexec
from mpi_privopt.services import checkpoint_files

pytestmark = needs_mpiexec

RANKS = 4
T, EVERY, KILLED_AT = 15, 5, 13
HORIZON = 48
SECURE = ["--set", "privacy.noise=secure", "--set", f"run.checkpoint_every={EVERY}",
          "--set", "run.eval_every=5"]
CONFIG = ["default", *SECURE, "--set", f"algorithm.horizon={HORIZON}"]
TIMEOUT = 120


def _launch(*args: str, fault: str | None = None):
    env = {"MPI_PRIVOPT_AGREE_SECONDS": "0", **({"MPI_PRIVOPT_TEST_FAULT": fault} if fault
                                                 else {})}
    return run_mpiexec(RANKS, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                               *args], timeout=TIMEOUT, env=env)


def _privacy(run_dir: Path) -> dict:
    return json.loads((run_dir / "privacy.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The uninterrupted runs of 5, 10 and 15 iterations, and the run of 15 killed at 13
    (its checkpoints of iterations 5 and 10)."""
    root = tmp_path_factory.mktemp("secure")
    for n in (5, 10, T):
        done = _launch(*CONFIG, "--set", f"run.iterations={n}", "--out", str(root / f"T{n}"),
                       "--quiet")
        assert done.returncode == 0, done.stderr
    killed = _launch(*CONFIG, "--set", f"run.iterations={T}", "--out", str(root / "killed"),
                     "--quiet", fault=f"kill@iteration:2:{KILLED_AT}")
    assert killed.returncode != 0
    assert checkpoint_files.latest(root / "killed")["iteration"] == 10
    return root


def _copy(runs: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    shutil.copytree(runs / "killed", out)
    return out


def _assert_ledger_is(resumed: dict, straight: dict, plus: dict, minus: dict) -> None:
    """``resumed`` = ``straight`` + (``plus`` - ``minus``), link by link and per agent."""
    for name in ("rho", "releases"):
        for k, row in enumerate(straight["links"][name]):
            for j, value in enumerate(row):
                if value is None:
                    assert resumed["links"][name][k][j] is None
                    continue
                expected = value + plus["links"][name][k][j] - minus["links"][name][k][j]
                if name == "releases":
                    assert resumed["links"][name][k][j] == expected, (name, k, j)
                else:
                    assert resumed["links"][name][k][j] == pytest.approx(expected, rel=1e-12)
    for got, a, b, c in zip(resumed["agents"], straight["agents"], plus["agents"],
                            minus["agents"]):
        assert got["releases"] == a["releases"] + b["releases"] - c["releases"]
        assert got["all_observers_rho"] == pytest.approx(
            a["all_observers_rho"] + b["all_observers_rho"] - c["all_observers_rho"],
            rel=1e-12)


def test_a_killed_secure_run_books_what_it_released_after_its_checkpoint(runs, tmp_path):
    out = _copy(runs, tmp_path)
    done = _launch("--resume", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert "booked 5 iterations (11 to 15) as released before the interruption" in done.stderr
    resumed, straight = _privacy(out), _privacy(runs / f"T{T}")
    assert straight["worst_link_epsilon"] < resumed["worst_link_epsilon"]
    # the uninterrupted run's ledger plus iterations 11..15 once more
    _assert_ledger_is(resumed, straight, straight, _privacy(runs / "T10"))
    assert resumed["assumed_iterations"] == 5
    assert all(a["assumed"] == [{"first": 11, "last": 15}] for a in resumed["agents"])
    summary = json.loads((out / "summary.json").read_text())
    assert "include 5 iterations booked as released before an interruption" in \
        summary["privacy_note"]
    # the next resume of this run knows this one may have released after iteration 10
    assert json.loads((out / "checkpoint" / "resumes.json").read_text())["resumes"] == [
        {"from": 10, "iterations": T}]


def test_a_secure_fallback_books_up_to_past_the_damaged_checkpoint(runs, tmp_path):
    out = _copy(runs, tmp_path)
    path = checkpoint_files.state_path(out, 1, 10)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x10
    path.write_bytes(bytes(data))
    done = _launch("--resume", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert "resuming from the previous checkpoint, of iteration 5" in done.stderr
    assert "booked 10 iterations (6 to 15)" in done.stderr
    _assert_ledger_is(_privacy(out), _privacy(runs / f"T{T}"), _privacy(runs / f"T{T}"),
                      _privacy(runs / "T5"))


def test_a_method_without_a_plan_is_refused_rather_than_forgetting(tmp_path):
    # token-admm saves only its final state: a run of 4, an extension to 8 killed at 6
    # (logged in resumes.json), then a resume: iterations 5..8 may have been released
    out = tmp_path / "run"
    plain = ["--set", "privacy.noise=secure", "--set", "run.eval_every=4", "--quiet"]
    done = _launch("token-admm-elastic-net", *plain, "--set", "run.iterations=4",
                   "--out", str(out))
    assert done.returncode == 0, done.stderr
    killed = _launch("--resume", str(out), "--set", "run.iterations=8", "--quiet",
                     fault="kill@iteration:2:6")
    assert killed.returncode != 0
    assert checkpoint_files.latest(out)["iteration"] == 4
    done = _launch("--resume", str(out), "--quiet")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("cannot say its releases ahead") == 1, done.stderr
    assert "may have released iterations 5 to 8" in done.stderr
    assert "start a new run" in done.stderr

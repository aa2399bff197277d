"""Under mpiexec: the pre-MPI check runs on one task of the host, the others read its verdict.

Bad input still makes every task exit 2 with one message (task 0's) and no traceback;
good input runs (mpi_privopt/check_verdict.py, docs/performance.md section 8).
"""
import json
import sys

from launch_util import needs_mpiexec, run_mpiexec

from mpi_privopt.graph_cache import CACHE_ENV

TIME_LIMIT = 300


def _run(tmp_path, *overrides, name="out"):
    words = [w for o in overrides for w in ("--set", o)]
    return run_mpiexec(3, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run", *words,
                           "--out", str(tmp_path / name), "--quiet"],
                       timeout=TIME_LIMIT, env={CACHE_ENV: str(tmp_path / "cache")})


@needs_mpiexec
def test_bad_input_one_message_exit_2_and_good_input_runs(tmp_path):
    bad = _run(tmp_path, "run.iterations=0")
    assert bad.returncode == 2, (bad.returncode, bad.stderr)
    assert bad.stderr.count("mpi_privopt: error") == 1, bad.stderr
    assert "run.iterations" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "out").exists()
    (verdict,) = (tmp_path / "cache" / "checks").glob("*.json")  # one check for the job
    assert "run.iterations" in json.loads(verdict.read_text())["error"]

    good = _run(tmp_path, "run.iterations=3", name="good")
    assert good.returncode == 0, good.stderr
    assert good.stdout.strip() == str(tmp_path / "good")
    assert len(list((tmp_path / "cache" / "checks").glob("*.json"))) == 2


@needs_mpiexec
def test_a_usage_error_and_help_are_printed_by_task_0_alone(tmp_path):
    # argparse's own refusals come before any check: each task printed its copy
    run = [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt"]
    bogus = run_mpiexec(3, [*run, "run", "--bogus"], timeout=TIME_LIMIT)
    assert bogus.returncode == 2, (bogus.returncode, bogus.stderr)
    assert bogus.stderr.count("error: unrecognized arguments: --bogus") == 1, bogus.stderr
    assert bogus.stderr.count("usage:") == 1 and "Traceback" not in bogus.stderr
    link = run_mpiexec(3, [*run, "audit", "--link", "a"], timeout=TIME_LIMIT)
    assert link.returncode == 2 and link.stderr.count("is not two agent ids") == 1, link.stderr
    shown = run_mpiexec(3, [*run, "run", "--help"], timeout=TIME_LIMIT)
    assert shown.returncode == 0 and shown.stdout.count("usage:") == 1, shown.stdout

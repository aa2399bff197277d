"""``python -m mpi_privopt audit`` as a user runs it: real mpiexec jobs (bad input).

One message from one rank, a non-zero status and no traceback for what cannot be audited;
a non-private method is said to have an unbounded loss and is attacked instead.
"""
import sys

from launch_util import needs_mpiexec, run_child, run_mpiexec

TIME_LIMIT = 180
SHORT = ["--set", "run.iterations=20", "--set", "run.eval_every=20"]


def audit(*args):
    return run_mpiexec(4, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "audit",
                           *args], timeout=TIME_LIMIT)


@needs_mpiexec
def test_too_few_trials_says_how_many_are_needed_and_runs_only_with_force(tmp_path):
    refused = audit("gauthier2024-ridge", "--trials", "16", *SHORT)
    assert refused.returncode == 2
    assert "too few" in refused.stderr and "rerun with --trials 72" in refused.stderr
    assert refused.stderr.count("mpi_privopt: error:") == 1
    assert "Traceback" not in refused.stderr
    forced = audit("gauthier2024-ridge", "--trials", "16", "--force", *SHORT,
                   "--out", str(tmp_path / "forced"))
    # 8 trials per world cannot show mu above 0.67 against the ledger's 1.76: the audit
    # could not have failed, so it does not pass either
    assert forced.returncode == 5, forced.stderr
    assert "note: --force" in forced.stdout and "verdict: INCONCLUSIVE" in forced.stdout
    assert "could not have failed" in forced.stdout and "MPI_Abort" not in forced.stderr
    assert (tmp_path / "forced" / "audit.json").exists()


@needs_mpiexec
def test_a_non_private_method_is_unbounded_and_attacked_instead(tmp_path):
    done = audit("dgd-ridge", *SHORT, "--out", str(tmp_path / "dgd"))
    assert done.returncode == 0, done.stderr
    assert "privacy loss is unbounded" in done.stdout
    assert "exact recovery: True" in done.stdout
    refused = audit("admm-ridge", *SHORT)
    assert refused.returncode == 2
    assert "unbounded" in refused.stderr and "no attack" in refused.stderr
    # the fix names what can be attacked and what can be audited, from the registry
    assert "attack one of: dgd, fs, rss-nb, rss-lb" in refused.stderr
    assert "zcdp-nfl" in refused.stderr and "ldp-aggregative" in refused.stderr
    assert "Traceback" not in refused.stderr


@needs_mpiexec
def test_a_link_that_is_not_an_edge_is_refused():
    refused = audit("gauthier2024-ridge", "--link", "0,0", *SHORT)
    assert refused.returncode == 2
    assert "is not a link of the graph" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_one_agent_has_no_link_to_audit():
    alone = run_child([sys.executable, "-m", "mpi_privopt", "audit", "gauthier2024-ridge"],
                      timeout=TIME_LIMIT)
    assert alone.returncode == 2
    assert "has no link to audit" in alone.stderr and "mpiexec -n K" in alone.stderr
    assert "Traceback" not in alone.stderr


@needs_mpiexec
def test_one_run_audit_from_the_command_line(tmp_path):
    done = audit("gauthier2024-ridge", "--one-run", "--canaries", "8", *SHORT,
                 "--out", str(tmp_path / "one"))
    # 8 canaries can refute at most epsilon 0.79, far below the ledger's 8.56
    assert done.returncode == 5, done.stderr
    assert "one-run audit of zcdp-nfl" in done.stdout
    assert "verdict: INCONCLUSIVE" in done.stdout and "verdict: PASS" not in done.stdout
    assert "MPI_Abort" not in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "one" / "one-run-audit.json").exists()
    refused = audit("gauthier2024-ridge", "--one-run", "--canaries", "9", *SHORT)
    assert refused.returncode == 2
    assert refused.stderr.count("mpi_privopt: error:") == 1
    assert "9 canaries" in refused.stderr and "Traceback" not in refused.stderr


@needs_mpiexec
def test_a_failed_audit_is_a_finding_that_ends_cleanly_with_status_1(tmp_path):
    # ldp-aggregative under its nominal constants (C = 1): the canary moves the messages
    # beyond the booked sensitivity (docs/privacy-audit.md, "the nominal accounting
    # under-books"); 400 trials are enough for the white-box check and the bound
    failed = audit("ldp-aggregative-quadratic", "--trials", "400", "--set", "run.iterations=1",
                   "--set", "run.eval_every=1", "--set", "algorithm.sigma_x=2.5", "--set",
                   "algorithm.sigma_y=2.5", "--set", "algorithm.sigma_z=2.5",
                   "--set", "privacy.accounting=nominal", "--out", str(tmp_path / "nominal"))
    assert failed.returncode == 1, failed.stderr
    assert "verdict: FAIL" in failed.stdout and "  - sensitivity:" in failed.stdout
    assert "MPI_Abort" not in failed.stderr + failed.stdout
    assert "Traceback" not in failed.stderr
    assert (tmp_path / "nominal" / "audit.json").exists()

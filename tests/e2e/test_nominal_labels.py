"""A nominal epsilon is labelled wherever a run shows it, under mpiexec (docs/privacy.md,
"Nominal numbers and unbounded losses").

``ldp-aggregative`` under ``privacy.accounting = "nominal"`` books the paper's constants
C = 1, which are no bound (docs/privacy-audit.md). Every place a run shows one of its
epsilons says so beside it, "nominal (C = 1): not a privacy guarantee": the progress line,
metrics.csv, the printed summary, and when the (nominal) budget stops the run, the
one message and ``report`` of the stopped run. The printed summary, summary.json,
privacy.json and ``report`` of a finished run are checked in
tests/mpi/test_ldp_aggregative.py.
"""
import sys

from launch_util import needs_mpiexec, run_child, run_mpiexec
from mpi_privopt.methods.chen2025.ldp_budget import NOMINAL_EPSILON
from mpi_privopt.results import read_metrics

pytestmark = needs_mpiexec

RANKS = 3
TIME_LIMIT = 180
NOMINAL = ["ldp-aggregative-quadratic", "--set", "privacy.accounting=nominal",
           "--set", "run.iterations=3", "--set", "run.eval_every=1"]


def mpirun(*args):
    return run_mpiexec(RANKS, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                               *args], timeout=TIME_LIMIT)


def test_a_nominal_run_labels_its_epsilon_on_the_progress_line_and_in_metrics_csv(tmp_path):
    out = tmp_path / "run"
    proc = mpirun(*NOMINAL, "--out", str(out), "--progress")
    assert proc.returncode == 0, proc.stderr
    assert f"(worst link; {NOMINAL_EPSILON})" in proc.stderr  # the progress line
    assert f"; {NOMINAL_EPSILON}" in proc.stdout  # the printed summary's privacy row
    header, *rows = (out / "metrics.csv").read_text().splitlines()
    assert header.endswith(",worst_link_epsilon,epsilon_label")
    assert len(rows) == 4 and all(row.endswith(f",{NOMINAL_EPSILON}") for row in rows)
    # readers of the numeric columns are unchanged: the label is not one of them
    metrics = read_metrics(out)
    assert "epsilon_label" not in metrics and metrics["worst_link_epsilon"][-1] > 0


def test_a_nominal_budget_stop_labels_its_epsilons_in_the_message_and_report(tmp_path):
    out = tmp_path / "stopped"
    proc = mpirun(*NOMINAL, "--set", "privacy.epsilon=300", "--out", str(out), "--quiet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    message = next(line for line in proc.stderr.splitlines()
                   if "reached the privacy budget" in line)
    assert f"at delta 1e-05 ({NOMINAL_EPSILON}), over its budget privacy.epsilon = 300" \
        in message
    shown = run_child([sys.executable, "-m", "mpi_privopt", "report", str(out)],
                      timeout=TIME_LIMIT)
    assert shown.returncode == 0, shown.stderr
    stopped = [line for line in shown.stdout.splitlines() if "releases, epsilon" in line]
    assert stopped and all(f"(budget 300; {NOMINAL_EPSILON})" in line for line in stopped)

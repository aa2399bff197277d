"""``reproduce chen2025 --quick`` (1 run, 30 iterations): 20 real mpiexec runs of 5
ranks, every panel's PNG and CSV, the budget curves equal to the runs' ledgers, the
matched-budget runs' ledgers equal to Algorithm 1's epsilon, the
diagnostics present, the lambda_pen = 10 run recorded as diverged (lam_x0 = 0.2 is too large
for that penalty) and said so in one plain line. About 30 s on two cores: marked slow.
"""
import csv
import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("matplotlib", reason="reproduce chen2025 needs matplotlib")
if shutil.which("mpiexec") is None:
    pytest.skip("needs mpiexec on PATH", allow_module_level=True)


def rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("chen2025")
    proc = subprocess.run([sys.executable, "-m", "mpi_privopt", "reproduce", "chen2025",
                           "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / "digits", proc


@pytest.fixture(scope="module")
def out(run):
    return run[0]


def test_every_panel_has_its_png_and_csv(out):
    for name in ("panel_a", "panel_matched", "panel_b", "panel_c", "panel_d", "diagnostics"):
        assert (out / f"{name}.png").stat().st_size > 0
        assert rows(out / f"{name}.csv")


def test_panel_a_has_every_method_at_every_evaluation(out):
    a = rows(out / "panel_a.csv")
    methods = {r["curve"] for r in a}
    assert methods == {"alg1", "alg1-noise-off", "gt36", "pat6", "pdop26", "tvs51"}
    assert {r["iteration"] for r in a} == {str(n) for n in range(0, 31, 5)}
    alg1 = {r["iteration"]: float(r["objective_mean"]) for r in a if r["curve"] == "alg1"}
    assert alg1["30"] < alg1["0"]   # Algorithm 1 decreases the penalised objective


def test_budget_totals_equal_the_ledgers(out):
    totals = json.loads((out / "summary.json").read_text())["budget_agent1_nominal"]
    assert totals["alg1-noise-off"]["epsilon_T"].startswith("unbounded")
    for method in ("alg1", "gt36", "pat6", "pdop26", "tvs51"):
        assert totals[method]["epsilon_T"] == pytest.approx(totals[method]["ledger_epsilon_T"],
                                                            rel=1e-9)


def test_matched_runs_book_algorithm_1s_epsilon_in_their_own_ledgers(out):
    matched = json.loads((out / "summary.json").read_text())["matched"]
    assert matched["label"] == "nominal (C = 1): not a privacy guarantee"
    target = matched["target_epsilon_T"]
    assert matched["methods"]["alg1"]["ledger_epsilon_T"] == pytest.approx(target, rel=1e-9)
    for method in ("gt36", "pat6"):   # one sigma per agent: every agent matched
        assert matched["methods"][method]["ledger_epsilon_T"] == pytest.approx(target, rel=1e-9)
    for method in ("pdop26", "tvs51"):   # one sigma for all: agent 1 matched
        ledger = matched["methods"][method]["ledger_epsilon_T"]
        assert ledger[0] == pytest.approx(target[0], rel=1e-9)
        assert ledger == pytest.approx(matched["methods"][method]["epsilon_T"], rel=1e-9)
    m = rows(out / "panel_matched.csv")
    assert {r["curve"] for r in m} == {"alg1", "gt36", "pat6", "pdop26", "tvs51"}


def test_diagnostics_and_divergence_are_recorded(out):
    diag = rows(out / "diagnostics.csv")
    assert {r["iteration"] for r in diag} == {"1", *(str(n) for n in range(5, 31, 5))}
    assert all(float(r["consensus_error_mean"]) >= 0 for r in diag)
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["diverged"]) == ["digits/T30-e5/d/lambda10/seed0"]


def test_the_expected_divergence_is_one_plain_line(run):
    _, proc = run
    n = json.loads((run[0] / "summary.json").read_text())["diverged"][
        "digits/T30-e5/d/lambda10/seed0"]
    lines = [line for line in proc.stdout.splitlines() if "diverged" in line]
    assert lines == [f"lambda_pen = 10: diverged at iteration {n}, as expected at this "
                     "step size"], proc.stdout
    assert "failed" not in proc.stdout + proc.stderr

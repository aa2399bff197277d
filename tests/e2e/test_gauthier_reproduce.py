"""``reproduce gauthier2024 --quick``: real mpiexec jobs, every figure and CSV written."""
import csv
import json
import sys

import pytest

from launch_util import needs_mpiexec, run_child

pytestmark = [needs_mpiexec, pytest.mark.slow]
# The reproduction draws its figures with matplotlib: the 'plot' or 'reproduce' extra (the
# 'test' extra, which CI installs, includes it).
pytest.importorskip("matplotlib", reason="reproduce gauthier2024 needs matplotlib "
                    "(pip install 'mpi_privopt[plot]')")

FIGURES = ("tuning", "fig1_elastic_net_learning", "fig1_elastic_net_tradeoff",
           "fig2_lad_learning", "fig2_lad_tradeoff", "fig3_ridge_learning",
           "fig3_ridge_tradeoff", "conversions_elastic_net")


def rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_quick_reproduction_writes_every_figure_with_its_csv(tmp_path):
    out = tmp_path / "g24"
    cmd = [sys.executable, "-m", "mpi_privopt", "reproduce", "gauthier2024", "--quick",
           "--ranks", "4", "--out", str(out)]
    proc = run_child(cmd, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ledger exact epsilon equals the budget" in proc.stdout
    for name in FIGURES:
        assert (out / f"{name}.png").stat().st_size > 1000, name
        assert rows(out / f"{name}.csv"), name
    # Learning curves start at NE(0) = K (every w_k = 0).
    first = [r for r in rows(out / "fig1_elastic_net_learning.csv") if r["iteration"] == "0"]
    assert first and all(float(r["mean"]) == pytest.approx(4.0) for r in first)
    # Equal budget, far less noise: zCDP-NFL beats (eps,delta)DP-NFL at epsilon = 1.
    table = {(r["method"], float(r["epsilon"])): float(r["mean_final_error"])
             for r in rows(out / "fig1_elastic_net_tradeoff.csv")}
    assert table[("zcdp-nfl", 1.0)] < table[("eps-delta-nfl", 1.0)]
    assert table[("zcdp-nfl", 100.0)] < table[("zcdp-nfl", 1.0)]
    # Each ledger column holds its own conversion: exact < tight (CKS) <= standard.
    for r in rows(out / "fig1_elastic_net_tradeoff.csv"):
        exact, tight = float(r["ledger_epsilon_exact"]), float(r["ledger_epsilon_tight"])
        assert exact < tight <= float(r["ledger_epsilon_standard"]), r
    # Every private run of the sweep stays within its budget by the ledger.
    for r in rows(out / "runs.csv"):
        if r["epsilon"] != "inf" and r["conversion"] == "standard":
            assert float(r["worst_link_epsilon"]) <= float(r["epsilon"]) * (1 + 1e-9)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ranks"] == 4 and set(summary["grad_steps"]) == {"elastic-net", "lad", "ridge"}
    # A second call finds every run done and only redraws the figures.
    again = run_child(cmd, timeout=600)
    assert again.returncode == 0 and "batch" not in again.stdout

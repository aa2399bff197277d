"""``reproduce chan2023`` at the paper's size (100 runs): every table, figure and CSV written.

Single process and numpy only, but about ten seconds with the figures: marked slow.
"""
import csv
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow
pytest.importorskip("matplotlib", reason="reproduce chan2023 needs matplotlib "
                    "(pip install 'mpi_privopt[plot]')")


def rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_reproduce_chan2023_writes_the_tables_and_figures(tmp_path):
    out = tmp_path / "chan2023"
    proc = subprocess.run([sys.executable, "-m", "mpi_privopt", "reproduce", "chan2023",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / "table1.csv") as handle:
        assert handle.readline().strip() == "case,eta,contraction,convergence_iterations"
    table1 = rows(out / "table1.csv")
    assert [int(r["convergence_iterations"]) for r in table1] == [26, 13, 7, 6]
    assert [round(float(r["eta"]), 6) for r in table1] == [1.753086, 4.811252, 20.0, 43.30127]
    assert [round(float(r["contraction"]), 6) for r in table1] == [0.947368, 0.914881,
                                                                     0.857143, 0.799231]
    for mode in ("replay", "corrected"):
        for name in (f"fig1a_{mode}", f"fig1b_{mode}"):
            assert (out / f"{name}.png").stat().st_size > 1000, name
            assert len(rows(out / f"{name}.csv")) == 101 * (4 if "1a" in name else 5)
        table2 = rows(out / f"table2_{mode}.csv")
        assert len(table2) == 25
        assert max(float(r["p_value"]) for r in table2 if r["sigma_a"] != r["sigma_b"]) < 1e-20
    assert len(rows(out / "table1_corrected.csv")) == 4
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 100 and summary["corrected_seed"] == 0
    seeds = summary["modes"]["corrected"]["fig1b"][2]["seeds"]
    assert seeds["seed"] == 0 and seeds["spawn_key"] == [1, 2]
    privacy = rows(out / "privacy.csv")
    assert len(privacy) == 2 * (4 + 5)
    assert 9e5 < float(privacy[0]["local_rho"]) < 1.1e6
    assert (out / "privacy_curve.png").stat().st_size > 1000
    curve = rows(out / "privacy_curve.csv")
    assert len(curve) == 4 * 201 and curve[0]["k"] == "0" and float(curve[0]["convex_ratio"]) == 1


def test_too_few_runs_is_one_message_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mpi_privopt", "reproduce", "chan2023",
                           "--runs", "1", "--out", str(tmp_path / "x")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "--runs 1" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists()

"""The worked examples of docs/architecture.md ("Your own problem or method") run as
documented: ``mpiexec -n K python -m mpi4py -m mpi_privopt run docs/examples/NAME.toml``
from the repository's root, each module found next to its config file, on every rank.

Their ledgers book the user method's releases (every one, with the rho its Gaussian
mechanism states) and the user problem's metrics reach metrics.csv; a misuse under
mpiexec ends the job with one message, status 2 and no traceback.
"""
import csv
import json
import math
import sys
from pathlib import Path

import pytest

from launch_util import needs_mpiexec, run_mpiexec

pytestmark = needs_mpiexec

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
RANKS = 3
T = 12
TIMEOUT = 180


def run_example(name: str, out: Path, *overrides: str):
    args = [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
            f"docs/examples/{name}.toml", "--out", str(out),
            "--set", f"run.iterations={T}", "--set", "run.eval_every=4",
            *(word for o in overrides for word in ("--set", o))]
    return run_mpiexec(RANKS, args, timeout=TIMEOUT, cwd=REPO)


def link_matrix(run_dir: Path, key: str) -> list[list]:
    return json.loads((run_dir / "privacy.json").read_text())["links"][key]


def metric_columns(run_dir: Path) -> tuple[list[str], list[dict]]:
    with open(run_dir / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    return list(rows[0]), rows


def test_the_private_method_example_books_every_release(tmp_path):
    out = tmp_path / "method"
    proc = run_example("my_private_method", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "my-noisy-dgd" and summary["private"] is True
    # the example's config: step 0.05, sigma 0.05, problem.clip 1, ridge's 50 samples
    sensitivity = 2 * 0.05 * 1.0 / 50
    releases, rho = link_matrix(out, "releases"), link_matrix(out, "rho")
    epsilon = link_matrix(out, "epsilon")
    links = [(i, j) for i in range(RANKS) for j in range(RANKS) if releases[i][j]]
    assert len(links) == 2 * RANKS  # the ring's links, both ways
    for i, j in links:
        assert releases[i][j] == T
        assert rho[i][j] == pytest.approx(T * sensitivity ** 2 / (2 * 0.05 ** 2), rel=1e-12)
        assert 0 < epsilon[i][j] < math.inf
    columns, rows = metric_columns(out)
    assert {"error", "objective_gap", "consensus_gap"} <= set(columns)
    assert int(rows[-1]["iteration"]) == T


def test_the_aggregative_problem_example_reports_its_metrics(tmp_path):
    out = tmp_path / "problem"
    proc = run_example("my_aggregative_problem", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["algorithm"], summary["problem"]) == ("ldp-aggregative", "swarm")
    columns, rows = metric_columns(out)
    assert {"block_distance", "cost"} <= set(columns)
    first, last = float(rows[0]["block_distance"]), float(rows[-1]["block_distance"])
    assert math.isfinite(last) and last < first  # the packaged method solves it
    epsilon = link_matrix(out, "epsilon")
    sent = [e for row in epsilon for e in row if e is not None]
    assert len(sent) == 2 * RANKS and all(0 < e < math.inf for e in sent)


def test_a_misuse_under_mpiexec_is_one_message(tmp_path):
    proc = run_example("my_private_method", tmp_path / "bad",
                       "algorithm.module=my_private_method:NoSuchClass")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("mpi_privopt: error:") == 1, proc.stderr
    assert "algorithm.module = 'my_private_method:NoSuchClass'" in proc.stderr
    assert "has no 'NoSuchClass'" in proc.stderr
    assert not (tmp_path / "bad").exists()

"""``reproduce chan2023 --distributed`` at small size: real mpiexec runs of token-admm (a
16-rank ring, the sample schedule, the utility runs), their figures and CSVs.

16 ranks is the smallest ring on which amplification beats local privacy at these constants
(k >= 12). About 30 s on two cores: marked slow.
"""
import csv
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from mpi_privopt.methods.chan2023.reproduce import distributed
from mpi_privopt.privacy.conversions import zcdp_to_eps_tight

pytestmark = pytest.mark.slow
pytest.importorskip("matplotlib", reason="reproduce chan2023 needs matplotlib")
if shutil.which("mpiexec") is None:
    pytest.skip("needs mpiexec on PATH", allow_module_level=True)

K = 16


def rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    out = tmp_path_factory.mktemp("chan2023")
    proc = subprocess.run([sys.executable, "-m", "mpi_privopt", "reproduce", "chan2023",
                           "--runs", "2", "--distributed", "--matrix-ranks", str(K),
                           "--utility-runs", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_observer_csvs_equal_the_runs_privacy_json(out):
    for run in distributed.matrix_runs(K):
        schedule = run.schedule
        assert (out / f"observers_{schedule}.png").stat().st_size > 1000
        section = json.loads((out / "runs" / run.key / "privacy.json").read_text())["observers"]
        table = rows(out / f"observers_{schedule}.csv")
        seen = {(int(r["observer"]), int(r["owner"])): r for r in table}
        expected = {(q, j) for q in range(K) for j in range(K)
                    if section["rho"][q][j] is not None}
        assert set(seen) == expected
        for (q, j), r in seen.items():
            assert float(r["rho"]) == pytest.approx(section["rho"][q][j], rel=1e-5)
            assert float(r["epsilon"]) == pytest.approx(section["epsilon"][q][j], rel=1e-5)


def test_ring_matrix_equals_the_closed_form_and_amplifies_only_far_observers(out):
    table = rows(out / "observers_ring.csv")
    assert len(table) == K * (K - 1)
    closed = distributed.ring_ratio_matrix(K, distributed.RING_PASSES * K,
                                           distributed.constants())
    for r in table:
        q, j = int(r["observer"]), int(r["owner"])
        assert float(r["ratio_to_local"]) == pytest.approx(closed[q, j], rel=1e-5)
        assert float(r["closed_form_ratio"]) == pytest.approx(closed[q, j], rel=1e-5)
        if (q - j) % K <= 12:  # k <= 11: T <= 5 < C = 5.16, local privacy only
            assert float(r["ratio_to_local"]) == 1.0
    amplified = [r for r in table if float(r["ratio_to_local"]) < 1.0]
    assert amplified and min(float(r["ratio_to_local"]) for r in amplified) < 0.75
    summary = json.loads((out / "summary.json").read_text())["distributed"]["observers"]
    assert summary["ring_closed_form_max_abs_difference"] < 1e-12
    # the noise is calibrated to the paper's local bound; the runs book (1 + eta beta)^2 less
    booked = distributed.local(distributed.sigma_for_epsilon(distributed.MATRIX_EPSILON))
    assert summary["local_epsilon"] == pytest.approx(zcdp_to_eps_tight(booked, 1e-5),
                                                     rel=1e-6)
    assert summary["local_epsilon"] < summary["target_local_epsilon"] == \
        distributed.MATRIX_EPSILON


def test_utility_against_epsilon(out):
    assert (out / "utility_epsilon.png").stat().st_size > 1000
    table = rows(out / "utility_epsilon.csv")
    assert [float(r["target_local_epsilon"]) for r in table] == list(distributed.TARGET_EPSILONS)
    for r in table:
        booked = distributed.local(float(r["sigma"]))
        assert float(r["local_epsilon"]) == pytest.approx(zcdp_to_eps_tight(booked, 1e-5),
                                                          rel=1e-5)
        assert float(r["local_epsilon"]) < float(r["target_local_epsilon"])
        assert float(r["sigma"]) == pytest.approx(
            distributed.sigma_for_epsilon(float(r["target_local_epsilon"])), rel=1e-5)
        # the worst entry is never below local: the observer next to the owner gets k = 0
        assert float(r["worst_entry_epsilon_max"]) >= float(r["local_epsilon"]) * (1 - 1e-5)
    # the gap is scored on agent 0's released token: every agent holds the same one
    for run in distributed.utility_runs(runs=1):
        tokens = [np.load(p)["w"] for p in sorted((out / "runs" / run.key).glob("models-*"))]
        assert len(tokens) == distributed.UTILITY_RANKS
        assert all(np.array_equal(t, tokens[0]) for t in tokens)
    gaps = [float(r["mean_gap"]) for r in table]
    # more noise, worse utility, across a factor 1000 in epsilon
    assert gaps[0] > 100 * gaps[-1]

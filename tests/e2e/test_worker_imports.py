"""What a worker rank imports: pinned, so that the start-up gain cannot silently regress.

With K ranks on a few cores every library a rank loads costs K times its import (about
0.5 s of CPU and 50 MB for scipy.optimize and scipy.special): the worker ranks of a run
load none of them; rank 0 computes what needs them (reference solution, calibrations,
the epsilon conversions) once for everyone (docs/performance.md, "Scale").
"""
import json
import sys
from pathlib import Path

from launch_util import needs_mpiexec, run_child, run_mpiexec

#: what no worker rank of the default experiment may import
NOT_ON_WORKERS = ("scipy.optimize", "scipy.special", "matplotlib", "sklearn", "opendp")
RANK = Path(__file__).resolve().parents[1] / "bench" / "scale_rank.py"


def test_the_engine_and_the_default_method_import_no_scipy_submodule():
    code = ("import sys, mpi_privopt.engine, mpi_privopt.cli\n"
            "from mpi_privopt.methods import ALGORITHMS\n"
            "ALGORITHMS['zcdp-nfl']\n"
            f"print([m for m in {NOT_ON_WORKERS!r} if m in sys.modules])\n"
            "print(sorted(m for m in sys.modules if m.startswith('mpi_privopt.methods.')))")
    proc = run_child([sys.executable, "-c", code], timeout=120)
    assert proc.returncode == 0, proc.stderr
    heavy, algorithms = proc.stdout.splitlines()
    assert heavy == "[]"
    # the lazy registry: one method's modules, not the fifteen
    assert "ldp_aggregative" not in algorithms and "token_admm" not in algorithms


@needs_mpiexec
def test_worker_ranks_of_a_run_load_no_scipy_submodule(tmp_path):
    proc = run_mpiexec(3, [sys.executable, str(RANK), "default", "--set", "run.iterations=5",
                           "--out", str(tmp_path / "run")], timeout=300)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("SCALE_RANKS "))
    ranks = json.loads(line.split(" ", 1)[1])["ranks"]
    assert len(ranks) == 3
    for k, rank in enumerate(ranks[1:], 1):
        assert not set(rank["heavy"]) & set(NOT_ON_WORKERS), (k, rank["heavy"])
    # rank 0 does the work that needs them, once for everyone
    assert {"scipy.optimize", "scipy.special"} <= set(ranks[0]["heavy"])

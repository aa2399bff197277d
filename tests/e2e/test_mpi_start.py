"""Under mpiexec: a run imports the engine on every task before MPI starts, then starts MPI
as mpi4py would have (thread level, finalized at exit); mpi_privopt/mpi_start.py. And a
worker rank never imports what task 0 alone computes with (scipy's optimizers and
distributions, dp-accounting)."""
import json
import sys

from launch_util import needs_mpiexec, run_mpiexec

from mpi_privopt.graph_cache import CACHE_ENV

TIME_LIMIT = 300

#: one rank: ``run`` through the command line, noting at task 0's gate whether the engine
#: is imported and MPI started, and at exit MPI's thread level and finalization plan
RANK = """
import atexit, json, os, sys
import mpi4py
from mpi_privopt import cli, prelaunch
seen = {}
HEAVY = ("scipy.optimize", "scipy.special", "scipy.stats", "dp_accounting")
original = prelaunch.preload_for_rank_0

def at_gate():
    from mpi4py import MPI
    seen["engine_at_gate"] = "mpi_privopt.engine" in sys.modules
    seen["mpi_started_at_gate"] = MPI.Is_initialized()
    original()
prelaunch.preload_for_rank_0 = at_gate

def report():
    from mpi4py import MPI
    seen["rank"] = MPI.COMM_WORLD.Get_rank()
    seen["multiple"] = MPI.Query_thread() == MPI.THREAD_MULTIPLE
    seen["finalize_at_exit"] = mpi4py.rc.finalize
    seen["heavy"] = [m for m in HEAVY if m in sys.modules]
    # a file per rank: lines the ranks print as they leave together can interleave in
    # the launcher's output
    with open(f"{os.environ['SEEN_DIR']}/rank-{seen['rank']}.json", "w") as f:
        json.dump(seen, f)
atexit.register(report)
cli.main(sys.argv[1:])
"""


@needs_mpiexec
def test_every_task_imports_the_engine_before_mpi_starts(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    proc = run_mpiexec(3, [sys.executable, "-m", "mpi4py", str(script), "run",
                           "--set", "run.iterations=3", "--out", str(tmp_path / "out"),
                           "--quiet"],
                       timeout=TIME_LIMIT, env={CACHE_ENV: str(tmp_path / "cache"),
                                                "SEEN_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    seen = [json.loads((tmp_path / f"rank-{r}.json").read_text()) for r in range(3)]
    assert [s["rank"] for s in seen] == [0, 1, 2], seen
    for s in seen:
        assert s["engine_at_gate"] and not s["mpi_started_at_gate"], s
        assert s["multiple"] and s["finalize_at_exit"] is True, s
    # task 0 alone loads what it computes for everyone (its preload, the default budget's
    # calibration); a worker rank never imports it, before MPI or after
    assert seen[0]["heavy"] == ["scipy.optimize", "scipy.special", "scipy.stats",
                                "dp_accounting"], seen[0]
    assert [s["heavy"] for s in seen[1:]] == [[], []], seen
    assert (tmp_path / "out" / "summary.json").is_file()

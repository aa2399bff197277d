"""Under mpiexec: the graph is drawn by one task per host, and worker ranks run without networkx.

Every task checks the graph before MPI starts (bad input exits 2 from every task); the
first to take the cache's lock draws it with networkx, the others read its verdict
(mpi_privopt/graph_cache.py), and at set-up every rank uses that light edge list. Pinned
here: on a cold cache exactly one rank of the job imports networkx, on a warm one none
does, and the run's numbers are those of a run in which every rank drew the graph itself.
"""
import json
import sys
from pathlib import Path

from launch_util import needs_mpiexec, run_mpiexec

from mpi_privopt.graph_cache import CACHE_ENV

RANK = Path(__file__).resolve().parents[1] / "bench" / "scale_rank.py"
TIME_LIMIT = 300


def _job(tmp_path, name, cache, ranks=4):
    proc = run_mpiexec(ranks, [sys.executable, str(RANK), "default",
                               "--set", "run.iterations=5", "--out", str(tmp_path / name)],
                       timeout=TIME_LIMIT, env={CACHE_ENV: cache})
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("SCALE_RANKS "))
    data = json.loads(line.split(" ", 1)[1])
    assert len(data["ranks"]) == ranks
    return data, [("networkx" in rank["heavy"]) for rank in data["ranks"]]


@needs_mpiexec
def test_one_rank_draws_the_graph_and_the_run_is_unchanged(tmp_path):
    cache = str(tmp_path / "cache")
    cold, cold_nx = _job(tmp_path, "cold", cache)
    assert cold_nx.count(True) == 1, cold_nx  # the task that took the lock first
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1
    warm, warm_nx = _job(tmp_path, "warm", cache)
    assert not any(warm_nx), warm_nx
    alone, alone_nx = _job(tmp_path, "alone", "off")  # every task draws it, as before
    assert all(alone_nx), alone_nx
    for data in (cold, warm):
        assert data["final_error"] == alone["final_error"]
        assert data["worst_link_epsilon"] == alone["worst_link_epsilon"]
    graphs = {(tmp_path / name / "graph.edgelist").read_bytes()
              for name in ("cold", "warm", "alone")}
    assert len(graphs) == 1


@needs_mpiexec
def test_a_rejected_graph_exits_2_from_every_task_cold_or_warm(tmp_path):
    # 5 agents of degree 3: n * degree is odd, no such regular graph (found by the builder)
    cache = str(tmp_path / "cache")
    for _ in range(3):  # the first job builds the verdict, the next ones read it
        proc = run_mpiexec(5, [sys.executable, "-m", "mpi4py", "-m", "mpi_privopt", "run",
                               "--set", "topology.kind=regular", "--set", "topology.degree=3",
                               "--out", str(tmp_path / "out")],
                           timeout=TIME_LIMIT, env={CACHE_ENV: cache})
        assert proc.returncode == 2, (proc.returncode, proc.stderr)
        assert proc.stderr.count("mpi_privopt: error") == 1, proc.stderr
        assert "n * degree = 15 is odd" in proc.stderr and "how to fix" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert not (tmp_path / "out").exists()
    (verdict,) = (tmp_path / "cache").glob("*.json")
    assert "error" in json.loads(verdict.read_text())

"""Where the end of a K-rank run goes: each rank stamps the end's points, rank 0 prints them.

``mpiexec -n K python tests/bench/end_of_run.py OUT [CONFIG] [--set k=v]...`` runs the
experiment as ``python -m mpi_privopt run`` does (the scaling benchmark's by default,
tests/bench/scale.py) and records on each rank: the loop's end (the commit's first line),
the test hook's points of the commit (``commit-begin``, ``commit-results``,
``commit-summary`` and ``commit-end``, mpi_privopt/services/faults.py), and the start and
end of ``MPI_Finalize``. Each rank writes its stamps to ``OUT/end-stamps/rank-R.json``
after ``MPI_Finalize``; ``python tests/bench/end_of_run.py --summary OUT JOB_START
JOB_END`` prints, per point, the first, median and last rank (seconds from the job's
start), and the time from the last ``MPI_Finalize`` to the launcher's exit
(docs/performance.md, "The end of a run at 200 ranks").
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

STAMPS = {"main": time.time()}
DEFAULT = ["gauthier2024-elastic-net", "--set", "problem.clip=3.0", "--set",
           "topology.seed=2024", "--set", "run.seed=1000"]
POINTS = ("config", "loop-end", "commit-begin", "commit-results", "commit-summary",
          "commit-end", "finalize-start", "finalize-end")


def _rank(argv: list[str]) -> None:
    out, words = Path(argv[0]), (argv[1:] or DEFAULT)
    config = words[0]
    overrides = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
    from mpi_privopt import prelaunch
    prelaunch.validate_before_mpi(config, overrides)
    from mpi_privopt.mpi_start import start_mpi
    start_mpi()
    from mpi_privopt import engine, run_commit
    from mpi_privopt.entrypoint import load_agreed_config
    cfg = load_agreed_config(config, overrides)
    STAMPS["config"] = time.time()
    finish, fault = run_commit.finish, run_commit.fault

    def stamped_finish(s):
        STAMPS["loop-end"] = time.time()
        return finish(s)

    def stamped_fault(point, rank, iteration):
        STAMPS[point] = time.time()
        fault(point, rank, iteration)

    engine.finish = run_commit.finish = stamped_finish
    run_commit.fault = stamped_fault
    engine.run(cfg, out=str(out / "run"), stream=None)
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    STAMPS["finalize-start"] = time.time()
    MPI.Finalize()
    STAMPS["finalize-end"] = time.time()
    (out / "end-stamps").mkdir(exist_ok=True)
    (out / "end-stamps" / f"rank-{rank}.json").write_text(json.dumps(STAMPS))


def _summary(out: Path, start: float, end: float) -> None:
    ranks = [json.loads(p.read_text()) for p in (out / "end-stamps").glob("rank-*.json")]
    print(f"{len(ranks)} ranks, job {end - start:.1f} s (seconds from the job's start: "
          "first / median / last rank)")
    for point in POINTS:
        times = [r[point] - start for r in ranks if point in r]
        if times:
            print(f"  {point:15s} {min(times):7.1f} {statistics.median(times):7.1f} "
                  f"{max(times):7.1f}  ({len(times)} ranks)")
    print(f"  the last MPI_Finalize to the launcher's exit: "
          f"{end - max(r['finalize-end'] for r in ranks):.1f} s")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--summary"]:
        _summary(Path(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
    else:
        _rank(sys.argv[1:])

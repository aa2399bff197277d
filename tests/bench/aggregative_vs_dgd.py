"""One iteration of ldp-aggregative (Chen & Wang 2025, Algorithm 1) against one of dgd.

``mpiexec -n 5 python tests/bench/aggregative_vs_dgd.py [--iterations T] [--repeats R]``

The aggregative method's speed goal: on the quadratic instance (m = 5, n_i = 2, r = 2, so
each message is 2r + n = 14 floats), one iteration of Algorithm 1 costs at most 1.5x one iteration of
``dgd`` exchanging one buffer of the same 14 floats on the same graph (the paper's 5-ring).
Both run through the engine in the same job, alternately, with ``run.evaluate = "none"``
(no evaluation traffic); the time per iteration is the summary's ``algorithm_seconds / T``
and the ratio is taken per repeat, so the machine's load hits both alike. Rank 0 prints a
table; results: docs/performance.md, section "Aggregative vs DGD".
"""
from __future__ import annotations

import argparse
import statistics
import tempfile

from mpi4py import MPI

from mpi_privopt.config import load_config
from mpi_privopt.engine import run

AGGREGATIVE = ("ldp-aggregative-quadratic", ["run.evaluate=none"])
#: dgd on ridge with 14 features: its message is the same 14 floats, on the same 5-ring
DGD = ("dgd-ridge", ["topology.kind=ring", "problem.features=14", "run.evaluate=none",
                     "privacy.epsilon=inf"])


def per_iteration(name: str, overrides: list[str], iterations: int, comm) -> float:
    cfg = load_config(name, [*overrides, f"run.iterations={iterations}"])
    out = comm.bcast(tempfile.mkdtemp(prefix="bench-agg-") if comm.rank == 0 else None)
    result = run(cfg, out=f"{out}/run", comm=comm, stream=None)
    seconds = result.summary.algorithm_seconds / iterations if comm.rank == 0 else None
    return comm.bcast(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rows = []
    for _ in range(args.repeats):
        agg = per_iteration(*AGGREGATIVE, args.iterations, comm)
        dgd = per_iteration(*DGD, args.iterations, comm)
        rows.append((agg, dgd, agg / dgd))
    if comm.rank == 0:
        print(f"{comm.size} ranks, T = {args.iterations}, {args.repeats} alternating repeats")
        print(f"{'repeat':>6} {'ldp-aggregative us/it':>22} {'dgd us/it':>10} {'ratio':>6}")
        for i, (agg, dgd, ratio) in enumerate(rows):
            print(f"{i:>6} {agg * 1e6:>22.1f} {dgd * 1e6:>10.1f} {ratio:>6.2f}")
        print(f"median ratio {statistics.median(r for *_, r in rows):.2f} (goal <= 1.5)")


if __name__ == "__main__":
    main()

"""The barriers of set-up and the end: ``sleeping_barrier`` against ``Ibarrier`` with the
sleeping waits, time per barrier and the CPU seconds of every rank.

``mpiexec -n K python tests/bench/barrier.py [--rounds 10]`` (docs/performance.md, "The
end of a run at 200 ranks"). Each policy runs ``rounds`` barriers in a row, twice,
alternating.
"""
from __future__ import annotations

import argparse
import time

from mpi4py import MPI

from mpi_privopt.network import sleeping_barrier, wait_sleeping

POLICIES = {"Ibarrier + wait_sleeping": lambda comm: wait_sleeping(comm.Ibarrier()),
            "sleeping_barrier": sleeping_barrier}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    comm = MPI.COMM_WORLD
    comm.Barrier()
    for _ in range(2):
        for name, barrier in POLICIES.items():
            tick, cpu = time.perf_counter(), time.process_time()
            for _ in range(rounds):
                barrier(comm)
            wall, used = time.perf_counter() - tick, time.process_time() - cpu
            total = comm.reduce(used, root=0)
            if comm.rank == 0:
                print(f"{name}: {wall / rounds * 1e3:.1f} ms per barrier, CPU of all "
                      f"{comm.size} ranks {total:.2f} s", flush=True)


if __name__ == "__main__":
    main()

"""What timing links costs a neighbour exchange (docs/performance.md "Time per link").

``mpiexec -n K python tests/bench/link_time_cost.py [--rounds R] [--exchanges N] [--json FILE]``

A broadcast channel of 8 doubles on a ring (the hot path of a consensus method, with a
privacy ledger attached as in a run), ``N`` exchanges per round, with link-time sampling
off (``set_sample_every(0)``), at the default (every 50th exchange timed,
``run.link_time_every``), every 16th, and on every exchange (what one timed exchange
costs). The settings alternate within each round, so a
burst of load hits them alike; reported: the time per exchange on the slowest rank, best
round and median, and the median of the per-round ratios against "off".
"""
from __future__ import annotations

import argparse
import json
import statistics
from time import perf_counter

import numpy as np
from mpi4py import MPI

from mpi_privopt.network import Network, set_sample_every
from mpi_privopt.network.traffic import SAMPLE_EVERY
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release

SETTINGS = {"off": 0, f"every {SAMPLE_EVERY}": SAMPLE_EVERY, "every 16": 16, "every 1": 1}


def one_round(channel, comm, every: int, exchanges: int) -> float:
    """Seconds per exchange on the slowest rank, sampling every ``every``-th."""
    set_sample_every(every)
    release = Release.nonprivate(channel.outgoing)
    comm.Barrier()
    start = perf_counter()
    for _ in range(exchanges):
        release.payload = channel.outgoing
        channel.exchange(release)
    elapsed = (perf_counter() - start) / exchanges
    return comm.allreduce(elapsed, op=MPI.MAX)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--exchanges", type=int, default=3000)
    parser.add_argument("--json", help="also write the measurements here")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    ring = sorted({(rank - 1) % size, (rank + 1) % size} - {rank})
    net = Network(comm, ring, ring)
    net.add_listener(Ledger(rank, ring, 1e-5))
    channel = net.broadcast_channel("x", 8, buffers=2)
    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for _ in range(args.rounds):
        for name, every in SETTINGS.items():
            times[name].append(one_round(channel, comm, every, args.exchanges))
    set_sample_every(SAMPLE_EVERY)
    net.free()
    if rank:
        return
    print(f"{size} ranks, ring, 8 doubles, {args.exchanges} exchanges x {args.rounds} rounds")
    print(f"{'sampling':<12} {'best us':>9} {'median us':>10} {'ratio to off (median)':>22}")
    result = {}
    for name, values in times.items():
        ratios = [v / off for v, off in zip(values, times["off"])]
        result[name] = {"seconds": values, "ratio_median": statistics.median(ratios),
                        "ratio_range": [min(ratios), max(ratios)]}
        print(f"{name:<12} {min(values) * 1e6:9.2f} {statistics.median(values) * 1e6:10.2f} "
              f"{statistics.median(ratios):12.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"ranks": size, "exchanges": args.exchanges, **result}, handle, indent=1)


if __name__ == "__main__":
    main()

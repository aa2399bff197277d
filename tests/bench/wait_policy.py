"""The wait policy, measured: what a waiting rank costs, and what sleeping costs an exchange.

``mpiexec -n K python tests/bench/wait_policy.py [--rounds R] [--json FILE]``

Three measurements (results and the policy they chose: docs/performance.md, "Waiting"):

1. **A long wait.** Rank 1 sleeps D (2 ms .. 1 s), then sends 8 bytes to rank 0, which has
   posted the receive and waits for it by each policy. Reported: rank 0's CPU time during
   the wait over the wait's wall time (``time.process_time``: every thread of the
   process), and how late it saw the message (its wall time minus D). The other ranks
   wait at a sleeping barrier.
2. **A neighbour exchange.** A persistent neighbour allgather of 8 doubles on a ring,
   ``Start`` then complete by each policy, the time per exchange on the slowest rank
   (rounds alternate the policies; best round and median).
3. **The watchdog.** ``dgd`` through the engine (``dgd-ridge``, ``run.evaluate = "none"``)
   with the stall watchdog armed (``run.stall_timeout = 600``) and off, alternating; the
   algorithm's seconds per iteration.

Policies: ``poll`` (MPI's own ``Wait``: MPICH polls), ``sleep``
(:func:`mpi_privopt.network.wait_sleeping`: test, then sleep from 31 us doubling to 1 ms),
``spin+sleep`` (poll ``Test`` for 200 us without giving the core up, then the same sleeps),
``exchange`` (:func:`mpi_privopt.network.wait_exchange`'s backoff: test for 2 ms, yielding
the core every 4th test, then the same sleeps).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

import numpy as np
from mpi4py import MPI

from mpi_privopt.config import load_config
from mpi_privopt.engine import run
from mpi_privopt.network import BACKOFF_CAP, EXCHANGE_SPIN, wait_request, wait_sleeping

SPIN = 200e-6


def spin_then_sleep(request) -> None:
    deadline = time.perf_counter() + SPIN
    while time.perf_counter() < deadline:
        if request.Test():
            return
    wait_sleeping(request)


def sleep_from(first: float):
    """wait_sleeping's backoff, starting at ``first`` seconds instead."""
    def wait(request) -> None:
        if request.Test():
            return
        pause = first
        while not request.Test():
            time.sleep(pause)
            pause = min(2.0 * pause, BACKOFF_CAP)
    return wait


POLICIES = {"poll": lambda request: request.Wait(), "sleep": wait_sleeping,
            "spin+sleep": spin_then_sleep, "sleep from 31 us": sleep_from(BACKOFF_CAP / 32),
            "exchange": lambda request: wait_request(request, spin=EXCHANGE_SPIN)}


def long_wait(comm, delay: float, policy: str) -> tuple[float, float] | None:
    """(CPU / wall of rank 0's wait, seconds late) of one wait of ``delay``."""
    buf = np.zeros(1)
    comm.Barrier()  # polling: every rank leaves it within microseconds
    if comm.rank == 1:
        time.sleep(delay)
        comm.Send(buf, dest=0, tag=7)
    result = None
    if comm.rank == 0:
        request = comm.Irecv(buf, source=1, tag=7)
        cpu, wall = time.process_time(), time.perf_counter()
        POLICIES[policy](request)
        wall = time.perf_counter() - wall
        result = ((time.process_time() - cpu) / wall, wall - delay)
    wait_sleeping(comm.Ibarrier())
    return result


def exchange(comm, policy: str, repeats: int) -> float:
    """Seconds per persistent ring exchange of 8 doubles, on the slowest rank."""
    size, rank = comm.size, comm.rank
    nbrs = sorted({(rank - 1) % size, (rank + 1) % size} - {rank})
    graph = comm.Create_dist_graph_adjacent(nbrs, nbrs, reorder=False)
    send, received = np.ones(8), np.zeros((len(nbrs), 8))
    request = graph.Neighbor_allgather_init(send, received)
    complete = POLICIES[policy]
    graph.Barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        request.Start()
        complete(request)
    seconds = (time.perf_counter() - start) / repeats
    request.Free()
    graph.Free()
    return comm.allreduce(seconds, op=MPI.MAX)


def engine_iteration(comm, stall_timeout, iterations: int) -> float:
    cfg = load_config("dgd-ridge", ["run.evaluate=none", f"run.iterations={iterations}",
                                    f"run.stall_timeout={stall_timeout}"])
    out = comm.bcast(tempfile.mkdtemp(prefix="bench-wait-") if comm.rank == 0 else None)
    result = run(cfg, out=f"{out}/run", comm=comm, stream=None)
    return comm.bcast(result.summary.algorithm_seconds / iterations if comm.rank == 0 else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--json", default="")
    parser.add_argument("--parts", default="wait,exchange,watchdog",
                        help="which measurements, comma-separated")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    out: dict = {"ranks": comm.size, "long_wait": {}, "exchange": {}, "watchdog": {}}
    parts = args.parts.split(",")
    for delay in (2e-3, 20e-3, 200e-3, 1.0) if "wait" in parts else ():
        for policy in POLICIES:
            rows = [long_wait(comm, delay, policy) for _ in range(args.rounds)]
            if comm.rank == 0:
                out["long_wait"][f"{delay:g} {policy}"] = rows
    for _ in range(args.rounds if "exchange" in parts else 0):
        for policy in POLICIES:
            out["exchange"].setdefault(policy, []).append(exchange(comm, policy, args.repeats))
    for _ in range(args.rounds if "watchdog" in parts else 0):
        for timeout in ("off", 600):
            out["watchdog"].setdefault(str(timeout), []).append(
                engine_iteration(comm, timeout, args.iterations))
    if comm.rank:
        return
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print(f"{comm.size} ranks, load average {open('/proc/loadavg').read().split()[0]}")
    print("long wait: CPU/wall of the waiting rank (min-max), seen late by (median)")
    for key, rows in out["long_wait"].items():
        cpu = [r[0] for r in rows]
        late = statistics.median(r[1] for r in rows)
        print(f"  {key:>18}  cpu/wall {min(cpu):.3f}-{max(cpu):.3f}  late {late * 1e6:8.0f} us")
    poll = out["exchange"].get("poll")
    for policy, times in out["exchange"].items():
        ratios = [t / p for t, p in zip(times, poll)]
        print(f"exchange {policy:>10}: best {min(times) * 1e6:8.1f} us  median "
              f"{statistics.median(times) * 1e6:8.1f} us  / poll per round "
              f"{min(ratios):.2f}-{max(ratios):.2f} (median {statistics.median(ratios):.2f})")
    if not out["watchdog"]:
        return
    off = out["watchdog"]["off"]
    on = out["watchdog"]["600"]
    ratios = [a / b for a, b in zip(on, off)]
    print(f"dgd through the engine, watchdog armed / off: per round {min(ratios):.3f}-"
          f"{max(ratios):.3f} (median {statistics.median(ratios):.3f}); best "
          f"{min(on) * 1e6:.1f} / {min(off) * 1e6:.1f} us per iteration")


if __name__ == "__main__":
    main()

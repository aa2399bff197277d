"""Where a channel's exchange spends its time on K ranks: its path built up step by step.

``mpiexec -n K python tests/bench/channel_path.py [--doubles D] [--repeats R] [--rounds N]``
prints, on rank 0, one line per variant and then one JSON line.

Each variant runs ``R`` exchanges of ``D`` doubles on a ring (two neighbours), on the
channel's own buffers; the variants alternate in ``N`` rounds, each round starting at the
next variant, so no variant always follows the same one. Per variant: the best round's
wall time per exchange (slowest rank), its ratio to ``persistent`` (best over best, and
the median of the rounds' own ratios), and the CPU time of all ranks together per exchange
(median of the rounds), which is what K ranks sharing fewer cores compete for:

* ``persistent``: a persistent neighbour allgather on the same buffers, ``Start`` and MPI's
  ``Wait`` (``bench``'s "persistent");
* ``request``: the channel's own request, started and waited on as the channel does (one
  ``Test``, then the package's exchange wait), nothing else;
* ``clocks``: ``request`` plus the channel's release check, its two clock reads and the
  meter's time;
* ``booked``: ``clocks`` plus the meter's counts and the ledger's booking
  (``Network._sent_broadcast``): the channel's exchange without the link timer;
* ``busy``: ``clocks`` plus a loop of twelve additions (about 0.3 us of Python on a core of
  its own) that meters and books nothing: what any work between two exchanges costs;
* ``lean``: what a channel would cost that neither meters nor books each exchange (a
  count of exchanges and the time in MPI, the release check and the buffer swap; a design
  not taken, docs/performance.md "The decision");
* ``untimed``: ``BroadcastChannel.exchange`` with the link timer off (``every_n`` 0);
* ``channel``: ``BroadcastChannel.exchange`` itself (the link timer times one exchange in
  ``traffic.every_n``);
* ``timed``: ``BroadcastChannel.exchange`` with every exchange timed per in-link.

docs/performance.md, "The framework's own cost per exchange", has the measurements.
"""
from __future__ import annotations

import argparse
import json
from time import perf_counter, process_time

import networkx as nx
import numpy as np
from mpi4py import MPI

from mpi_privopt.network import Network, traffic
from mpi_privopt.network.wait import wait_exchange
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release


def _variants(net: Network, doubles: int) -> dict:
    channel = net.broadcast_channel("bench", doubles)
    payload, received = channel.sends[0], channel.received
    payload[...] = 1.0
    release = Release.public(payload)
    persistent = net.comm.Neighbor_allgather_init(payload, received)
    request = channel._requests[0]
    index = channel._index
    counters = net.meter.counters("bench")
    nbytes = payload.nbytes

    def run_persistent():
        persistent.Start()
        persistent.Wait()

    def run_request():
        request.Start()
        if not request.Test():
            wait_exchange(request)

    def run_clocks():
        index.get(id(release.payload))
        start = perf_counter()
        run_request()
        counters.all_seconds += perf_counter() - start

    def run_booked():
        index.get(id(release.payload))
        net._sent_broadcast(release, "bench", counters, nbytes)
        start = perf_counter()
        run_request()
        net._completed_broadcast(received, "bench", counters, perf_counter() - start)

    def run_busy():
        index.get(id(release.payload))
        busy = 0
        for _ in range(12):  # about 0.3 us on a core of its own; meters and books nothing
            busy += 1
        start = perf_counter()
        run_request()
        counters.all_seconds += perf_counter() - start

    class Lean:  # the state such a channel would keep: a count, the seconds, the swap
        repeats = 0
        seconds = 0.0
        after = ((payload, payload, None),)
    lean = Lean()
    event = release.event

    def run_lean():
        i = index.get(id(release.payload))
        if release.event is not event:  # a new kind of release would be booked at once
            raise ValueError("lean: one event only")
        lean.repeats += 1
        start = perf_counter()
        request.Start()
        if not request.Test():
            wait_exchange(request)
        lean.seconds += perf_counter() - start
        lean.last_sent, lean.outgoing, lean.outgoing_release = lean.after[i]

    def run_channel():
        channel.exchange(release)

    def sampling(every: int):
        def run():
            default, traffic.every_n = traffic.every_n, every
            try:
                channel.exchange(release)
            finally:
                traffic.every_n = default
        return run

    def free():
        persistent.Free()

    return {"persistent": run_persistent, "request": run_request, "clocks": run_clocks,
            "booked": run_booked, "busy": run_busy, "lean": run_lean, "untimed": sampling(0), "channel": run_channel,
            "timed": sampling(1)}, free


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doubles", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    ring = nx.cycle_graph(size).to_directed()
    in_nbrs, out_nbrs = sorted(ring.predecessors(rank)), sorted(ring.successors(rank))
    net = Network(world, in_nbrs, out_nbrs)
    net.add_listener(Ledger(rank, out_nbrs, 1e-5))
    runs, free = _variants(net, args.doubles)
    names = list(runs)
    for run in runs.values():
        run()  # warm-up
    wall = {name: [] for name in names}
    cpu = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            world.Barrier()
            start, used = perf_counter(), process_time()
            for _ in range(args.repeats):
                runs[name]()
            cpu[name].append(world.allreduce(process_time() - used) / args.repeats * 1e6)
            wall[name].append(world.allreduce(perf_counter() - start, op=MPI.MAX)
                              / args.repeats * 1e6)
    free()
    net.free()
    if rank != 0:
        return
    base = np.asarray(wall["persistent"])
    rows = {}
    for name in names:
        times = np.asarray(wall[name])
        rows[name] = {"us": float(times.min()), "ratio": float(times.min() / base.min()),
                      "ratio_median": float(np.median(times / base)),
                      "cpu_us_all_ranks": float(np.median(cpu[name]))}
        print(f"{name:11s} {times.min():9.2f} us  / persistent {rows[name]['ratio']:.3f} "
              f"(median {rows[name]['ratio_median']:.3f})  CPU of all ranks "
              f"{rows[name]['cpu_us_all_ranks']:8.1f} us")
    print(json.dumps({"ranks": size, "doubles": args.doubles, "repeats": args.repeats,
                      "rounds": args.rounds, "every_n": traffic.every_n, "variants": rows}))


if __name__ == "__main__":
    main()

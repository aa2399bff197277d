"""The package's own cost per exchange and per iteration, in one process, without MPI's.

``python tests/bench/exchange_overhead.py [--number N] [--rounds R]`` prints one JSON line.

One rank on ``COMM_SELF`` with a self-loop dist graph (it sends to and receives from
itself), so no neighbour is waited for and the scheduler's share of the machine drops out
of the difference between two variants timed alike. Timed with the thread's CPU clock,
best of ``R`` alternating rounds of ``N`` calls, in microseconds per call:

* ``persistent``: a persistent neighbour allgather of 8 doubles, ``Start`` and ``Wait``;
* ``channel``: the same through a ``BroadcastChannel`` with a privacy ledger attached (the
  release check, the meter, the link timer's test, the wait, the booking);
* ``hand``: a DGD iteration (ridge, P = 8) written directly on mpi4py on two buffers with
  persistent requests, as ``bench``'s hand-written persistent loop;
* ``dgd``: the registered ``dgd``'s ``step`` on the same data;
* ``check``: the run loop's divergence check of one 8-vector.

``channel - persistent`` and ``dgd - hand`` are the package's own cost. To compare two
trees, run this alternately with each on ``PYTHONPATH`` (docs/performance.md, "The
framework's own cost per exchange").
"""
from __future__ import annotations

import argparse
import json
import time

import networkx as nx
import numpy as np
from mpi4py import MPI

from mpi_privopt import problems
from mpi_privopt.agent import Agent
from mpi_privopt.config import load_config
from mpi_privopt.methods.baselines.dgd import DGD
from mpi_privopt.network import Network
from mpi_privopt.privacy.ledger import Ledger
from mpi_privopt.privacy.release import Release
from mpi_privopt.services.divergence import DivergenceGuard


def variants(number: int) -> dict:
    """name -> a function that runs ``number`` calls of that variant."""
    net = Network(MPI.COMM_SELF, [0], [0])
    net.add_listener(Ledger(0, [0], 1e-5))
    channel = net.broadcast_channel("bench", 8)
    release = Release.public(channel.sends[0])
    raw = net.comm.Neighbor_allgather_init(channel.sends[0], channel.received)
    cfg = load_config(None, ["algorithm.name=dgd", "algorithm.schedule=constant",
                             "algorithm.step=0.02", "problem.name=ridge"])
    X, y = problems.load_agent_data(cfg.problem, 0, 2, cfg.run.seed)
    local = problems.make_local_problem(cfg.problem, X, y, 2, 0.0)
    agent = Agent(id=0, n_agents=1, problem=local, net=net, graph=nx.Graph([(0, 0)]),
                  rng=np.random.default_rng(0))
    agent.mixing_row = lambda: (0.5, np.array([0.5]))  # the self-loop's weights
    dgd = DGD(agent, cfg.algorithm.params)
    M, l2, step = len(y), local.l2, cfg.algorithm.params.step
    buffers = [np.zeros(X.shape[1]), np.zeros(X.shape[1])]
    received = np.empty((1, X.shape[1]))
    requests = [net.comm.Neighbor_allgather_init(b, received) for b in buffers]
    guard = DivergenceGuard(np.zeros(X.shape[1]))
    w = np.random.default_rng(0).standard_normal(X.shape[1])

    def persistent():
        for _ in range(number):
            raw.Start()
            raw.Wait()

    def through_channel():
        for _ in range(number):
            channel.exchange(release)

    def hand():
        for n in range(number):
            x, request = buffers[n % 2], requests[n % 2]
            request.Start()
            request.Wait()
            gradient = 2.0 / M * (X.T @ (X @ x - y)) + 2.0 * l2 / 2 * x
            np.subtract(0.5 * x + np.array([0.5]) @ received, step * gradient,
                        out=buffers[(n + 1) % 2])

    def registered():
        step_ = dgd.step
        for n in range(1, number + 1):
            step_(n)

    def check():
        check_ = guard.check
        for n in range(number):
            check_(w, n)

    return {"persistent": persistent, "channel": through_channel, "hand": hand,
            "dgd": registered, "check": check}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=10000, help="calls per round")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    args = parser.parse_args()
    runs = variants(args.number)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            start = time.thread_time()
            run()
            times[name].append((time.thread_time() - start) / args.number * 1e6)
    print(json.dumps({"min": {k: min(v) for k, v in times.items()},
                      "median": {k: float(np.median(v)) for k, v in times.items()}}))


if __name__ == "__main__":
    main()

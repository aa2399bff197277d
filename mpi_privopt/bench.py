"""``mpi_privopt bench``: what the Network layer costs, measured against raw mpi4py.

Run under MPI, e.g. ``mpiexec -n 8 python -m mpi4py -m mpi_privopt bench``. Three parts,
each comparing two things in the same run on the same graph:

1. one neighbour exchange through :class:`Network` with a privacy ledger attached, as in a
   run (release check, meter, ledger)
   against a raw ``Neighbor_allgather`` loop on the same dist-graph communicator, for
   payloads from 8 to 10^6 doubles; the ratio is Network time / raw time;
2. latency (8-byte ping-pong) and bandwidth (1 MiB ping-pong) of every link;
3. the registered ``dgd`` algorithm against a DGD written directly on mpi4py with the same
   graph, data, weights and steps: iterations per second, and a check that both computed
   the same iterates.

The two sides of each comparison alternate in several rounds and the best round of each
is kept, so a burst of load on this machine hits both alike.
"""
from __future__ import annotations

import json
from time import perf_counter

import numpy as np
from mpi4py import MPI

from . import problems, topology
from .agent import Agent
from .algorithms.dgd import DGD
from .config import load_config
from .network import Network
from .privacy.ledger import Ledger
from .privacy.release import Release

ROUNDS = 7


def _timed(comm: MPI.Intracomm, fn, repeats: int) -> float:
    """Seconds for ``repeats`` calls of ``fn``, slowest rank."""
    comm.Barrier()
    start = perf_counter()
    for _ in range(repeats):
        fn()
    elapsed = perf_counter() - start
    return comm.allreduce(elapsed, op=MPI.MAX)


def _median_ratio(numerators: list[float], denominators: list[float]) -> float:
    """Median over rounds of the ratio within a round: how steady the best-of ratio is."""
    return float(np.median(np.asarray(numerators) / np.asarray(denominators)))


def _auto_repeats(size: int) -> int:
    # About 100 MB through each rank per round (1 250 exchanges of 10^4 doubles), so a
    # round lasts long enough (tens of ms) for scheduler noise to average out.
    return int(np.clip(1e8 / (8 * size), 20, 10000))


def bench_exchange(world: MPI.Intracomm, net: Network, sizes: list[int], repeats: int) -> list[dict]:
    rows = []
    raw_comm = world.Create_dist_graph_adjacent(net.in_neighbors, net.out_neighbors, reorder=False)
    for size in sizes:
        payload = np.ones(size)
        out = np.empty((net.n_in, size))
        reps = repeats or _auto_repeats(size)
        release = Release.public(payload)

        def raw():
            raw_comm.Neighbor_allgather(payload, out)

        def ours():
            net.broadcast(release, "bench", out=out)

        raw(), ours()  # warm-up: first-touch of buffers, connection setup
        raw_times, ours_times = [], []
        for _ in range(ROUNDS):
            raw_times.append(_timed(world, raw, reps))
            ours_times.append(_timed(world, ours, reps))
        raw_best, ours_best = min(raw_times), min(ours_times)
        rows.append({"doubles": size, "repeats": reps,
                     "raw_us": raw_best / reps * 1e6, "network_us": ours_best / reps * 1e6,
                     "ratio": ours_best / raw_best,
                     "median_round_ratio": _median_ratio(ours_times, raw_times)})
    raw_comm.Free()
    return rows


def bench_links(world: MPI.Intracomm, graph) -> list[dict]:
    """Ping-pong on each undirected link in turn; the other ranks wait in a barrier."""
    rank = world.Get_rank()
    small, large = np.zeros(1), np.zeros(128 * 1024)  # 8 B and 1 MiB
    rows = []
    edges = sorted(tuple(sorted(e)) for e in graph.to_undirected().edges())
    for i, j in edges:
        result = None
        if rank in (i, j):
            peer = j if rank == i else i
            timings = []
            for buf, reps in ((small, 200), (large, 10)):
                world.Sendrecv(buf, peer, 9, buf.copy(), peer, 9)  # warm-up
                start = perf_counter()
                for _ in range(reps):
                    if rank == i:
                        world.Send(buf, peer, 9)
                        world.Recv(buf, peer, 9)
                    else:
                        world.Recv(buf, peer, 9)
                        world.Send(buf, peer, 9)
                timings.append((perf_counter() - start) / reps / 2)
            result = {"link": [i, j], "latency_us": timings[0] * 1e6,
                      "bandwidth_MBps": large.nbytes / timings[1] / 1e6}
        results = world.gather(result)
        if rank == 0:
            rows.append(next(r for r in results if r is not None))
        world.Barrier()
    return rows


def bench_dgd(world: MPI.Intracomm, graph, iterations: int) -> dict:
    """The ``dgd`` algorithm against a hand-written mpi4py DGD, same everything."""
    rank, size = world.Get_rank(), world.Get_size()
    cfg = load_config(None, ["algorithm.name=dgd", "algorithm.schedule=constant",
                             "algorithm.step=0.02", "problem.name=ridge"])
    X, y = problems.load_agent_data(cfg.problem, rank, size, cfg.run.seed)
    local = problems.make_local_problem(cfg.problem, X, y, size, 0.0)
    in_nbrs, out_nbrs = topology.neighbors(graph, rank)
    degrees = dict(graph.degree())
    self_w, nbr_w = topology.metropolis_row(rank, in_nbrs, degrees, "standard")
    step, l2, M = cfg.algorithm.params.step, local.l2, len(y)

    def run_ours() -> tuple[float, np.ndarray]:
        net = Network(world, in_nbrs, out_nbrs)
        net.add_listener(Ledger(rank, out_nbrs, 1e-5))
        agent = Agent(id=rank, n_agents=size, problem=local, net=net, graph=graph,
                      rng=np.random.default_rng(0))
        algorithm = DGD(agent, cfg.algorithm.params)
        world.Barrier()
        start = perf_counter()
        for n in range(1, iterations + 1):
            algorithm.step(n)
        elapsed = world.allreduce(perf_counter() - start, op=MPI.MAX)
        net.free()
        return elapsed, algorithm.x

    def run_raw() -> tuple[float, np.ndarray]:
        comm = world.Create_dist_graph_adjacent(in_nbrs, out_nbrs, reorder=False)
        x = np.zeros(X.shape[1])
        received = np.empty((len(in_nbrs), X.shape[1]))
        world.Barrier()
        start = perf_counter()
        for _ in range(iterations):
            comm.Neighbor_allgather(x, received)
            gradient = 2.0 / M * (X.T @ (X @ x - y)) + 2.0 * l2 / size * x
            x = self_w * x + nbr_w @ received - step * gradient
        elapsed = world.allreduce(perf_counter() - start, op=MPI.MAX)
        comm.Free()
        return elapsed, x

    raw_times, ours_times = [], []
    for _ in range(ROUNDS):
        t_raw, x_raw = run_raw()
        t_ours, x_ours = run_ours()
        raw_times.append(t_raw)
        ours_times.append(t_ours)
    raw_best, ours_best = min(raw_times), min(ours_times)
    same = bool(world.allreduce(float(np.max(np.abs(x_raw - x_ours))), op=MPI.MAX) < 1e-10)
    return {"iterations": iterations, "raw_it_per_s": iterations / raw_best,
            "dgd_it_per_s": iterations / ours_best, "ratio": raw_best / ours_best,
            "median_round_ratio": _median_ratio(raw_times, ours_times),
            "same_iterates": same}


def main(args) -> int:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    graph = topology.build_graph(args.topology, size, seed=0)
    topology.validate_graph(graph, size)
    in_nbrs, out_nbrs = topology.neighbors(graph, rank)
    net = Network(world, in_nbrs, out_nbrs)
    net.add_listener(Ledger(rank, out_nbrs, 1e-5))
    sizes = [int(s) for s in args.sizes.split(",")]

    exchange = bench_exchange(world, net, sizes, args.repeats)
    net.free()
    links = bench_links(world, graph) if size > 1 else []
    dgd = bench_dgd(world, graph, args.iterations)
    if rank != 0:
        return 0
    print(f"bench: {size} ranks, {args.topology} graph ({graph.number_of_edges()} edges), "
          f"{MPI.Get_library_version().splitlines()[0].strip()}")
    print("\n1. one neighbour exchange (allgather): Network vs raw mpi4py, best of "
          f"{ROUNDS} rounds (median: the median over rounds of each round's ratio)")
    print(f"{'doubles':>9} {'repeats':>8} {'raw us':>10} {'Network us':>11} {'ratio':>7} "
          f"{'median':>7}")
    for r in exchange:
        print(f"{r['doubles']:>9} {r['repeats']:>8} {r['raw_us']:>10.2f} "
              f"{r['network_us']:>11.2f} {r['ratio']:>7.3f} {r['median_round_ratio']:>7.3f}")
    if links:
        print("\n2. per link: latency (8 B ping-pong) and bandwidth (1 MiB ping-pong)")
        print(f"{'link':>9} {'latency us':>11} {'MB/s':>10}")
        for r in links:
            print(f"{r['link'][0]:>4}-{r['link'][1]:<4} {r['latency_us']:>11.2f} "
                  f"{r['bandwidth_MBps']:>10.1f}")
    print(f"\n3. DGD, {dgd['iterations']} iterations: registered 'dgd' "
          f"{dgd['dgd_it_per_s']:.0f} it/s, hand-written mpi4py {dgd['raw_it_per_s']:.0f} it/s, "
          f"ratio {dgd['ratio']:.3f}, median of rounds {dgd['median_round_ratio']:.3f} "
          f"(same iterates: {dgd['same_iterates']})")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"ranks": size, "topology": args.topology, "exchange": exchange,
                       "links": links, "dgd": dgd}, handle, indent=2)
        print(f"\nwritten: {args.json}")
    return 0

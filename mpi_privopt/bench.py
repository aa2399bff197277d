"""``mpi_privopt bench``: what the Network layer costs, measured against raw mpi4py.

Run under MPI, e.g. ``mpiexec -n 8 python -m mpi4py -m mpi_privopt bench``. Three parts,
each comparing the package with plain mpi4py in the same run on the same graph:

1. one neighbour exchange, four ways, for payloads from 8 to 10^6 doubles: a raw
   ``Neighbor_allgather`` loop on a dist-graph communicator; the same with an MPI-4
   persistent request (``Neighbor_allgather_init``, set up once); ``Network.broadcast``;
   and a ``Network`` broadcast channel (a persistent request inside Network). The two
   Network ways run with a privacy ledger attached, as in a run (release check, meter,
   ledger). Ratios: broadcast / raw, channel / raw, and channel / raw persistent (the
   package's own cost on the same MPI path);
2. latency (8-byte ping-pong) and bandwidth (1 MiB ping-pong) of every link;
3. the registered ``dgd`` algorithm against a DGD written directly on mpi4py with the same
   graph, data, weights and steps, both as a plain loop and with persistent requests:
   iterations per second, and a check that all three computed the same iterates.

The variants of each comparison alternate in several rounds and the best round of each
is kept, so a burst of load on this machine hits them alike.

``--wait backoff,poll`` also runs the package's variants (``broadcast``, ``channel``,
``dgd``, ``dgd_stop``) with each further exchange wait policy
(:func:`~mpi_privopt.network.set_exchange_wait`), named ``channel@poll`` etc., in the
same rounds; part 4 gives each one's median time and the spread of the per-round ratios
first policy / other (docs/performance.md "Waiting" has such a measurement).

With an MPI-3 library (Open MPI 4.1: no persistent collectives) the persistent variants
are left out and reported as n/a, and the channel runs its blocking fallback; the header
says which path ran.
"""
from __future__ import annotations

import json
import math
from time import perf_counter

import numpy as np
from mpi4py import MPI

from . import display, problems, topology
from .agent import Agent
from .methods.baselines.dgd import DGD
from .services.stop_signal import StopOnSignal
from .config import load_config
from .network import Network, set_exchange_wait
from .privacy.ledger import Ledger
from .privacy.release import Release
from .services.progress import progress_line

ROUNDS = 11


class BenchProgress:
    """Rank 0's progress line over the bench's steps (a timed round, a link), each weighted
    by its expected cost so that the time remaining holds across parts and payload sizes.

    The unit is one small-payload neighbour exchange. Measured (docs/bench/, 2 and 8
    ranks), an exchange of s doubles costs about 1 + s / :data:`TRANSFER_DOUBLES` units
    (within a factor 2.5 from 8 to 10^6 doubles), one DGD iteration of a variant
    :data:`DGD_UNITS`. The other ranks hold no line (``line`` None): ``step`` does nothing.
    """

    #: doubles at which an exchange costs twice a small one (its transfer equals latency)
    TRANSFER_DOUBLES = 1e4
    #: units of one DGD iteration (an exchange and a gradient), measured 2.4-2.5
    DGD_UNITS = 2.5
    #: units of one link's ping-pongs: 2 x 210 of 8 B and 2 x 10 of 1 MiB
    LINK_UNITS = 420 + 20 * (1 + 131072 / TRANSFER_DOUBLES)

    def __init__(self, line) -> None:
        self.line = line
        self.done = 0.0

    @classmethod
    def exchange_units(cls, size: int, repeats: int, variants: int) -> float:
        """One round of part 1: ``variants`` x ``repeats`` exchanges of ``size`` doubles."""
        return variants * repeats * (1 + size / cls.TRANSFER_DOUBLES)

    @classmethod
    def plan(cls, sizes: list[int], repeats: int, exchange_variants: int, links: int,
             iterations: int, dgd_variants: int) -> float:
        """The bench's total units."""
        return (ROUNDS * sum(cls.exchange_units(size, repeats or _auto_repeats(size),
                                                exchange_variants) for size in sizes)
                + links * cls.LINK_UNITS + ROUNDS * dgd_variants * iterations * cls.DGD_UNITS)

    def finish(self) -> None:
        """The last line, ``done`` at 100%."""
        if self.line is not None:
            self.line.update(self.line.total, label="done")
            self.line.close()

    def step(self, units: float, label: str) -> None:
        """``units`` more done; ``label`` says what (shown with the next line)."""
        if self.line is not None:
            self.done += units
            # the line ends with finish() alone, whatever the weights' sum rounds to
            self.line.update(min(self.done, math.nextafter(self.line.total, 0.0)),
                             label=label)


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


def _persistent_allgather(comm: MPI.Topocomm, send: np.ndarray, received: np.ndarray):
    """A persistent neighbour allgather on these buffers, or None where the library has
    none (MPI 3; mpi4py raises NotImplementedError)."""
    try:
        return comm.Neighbor_allgather_init(send, received)
    except NotImplementedError:
        return None


def _ratios(best: dict, times: dict, pairs) -> dict:
    """Best-of and median ratios ``name_vs_base`` for the pairs whose variants both ran."""
    ratios = {}
    for name, base in pairs:
        key = f"{name}_vs_{base}"
        ran = name in best and base in best
        ratios[key] = best[name] / best[base] if ran else None
        ratios[f"{key}_median"] = _median_ratio(times[name], times[base]) if ran else None
    return ratios


def _auto_repeats(size: int) -> int:
    # About 100 MB through each rank per round (1 250 exchanges of 10^4 doubles), so a
    # round lasts long enough (tens of ms) for scheduler noise to average out.
    return int(np.clip(1e8 / (8 * size), 20, 10000))


#: the exchange variants timed side by side, in the order each round runs them
EXCHANGES = ("raw", "raw_persistent", "broadcast", "channel")
#: the variants that wait through the package (``--wait`` runs them once per policy)
WAITING = ("broadcast", "channel", "dgd", "dgd_stop")


def _with_policies(runs: dict, policies: list[str]) -> dict:
    """``runs`` (name -> fn) plus ``name@policy`` for the package's variants and every
    policy after the first; each value becomes (fn, policy)."""
    first = policies[0]
    result = {}
    for name, fn in runs.items():
        result[name] = (fn, first)
        for policy in policies[1:] if name in WAITING else ():
            result[f"{name}@{policy}"] = (fn, policy)
    return result


def _wait_spread(times: dict, policies: list[str], scale: float) -> dict:
    """Per package variant and further policy: both medians (x ``scale``) and the
    per-round ratios first policy / that policy (median, min, max)."""
    spread = {}
    for name in (n for n in WAITING if n in times):
        for policy in policies[1:]:
            ours, other = np.asarray(times[name]), np.asarray(times[f"{name}@{policy}"])
            ratios = ours / other
            spread[f"{name}@{policy}"] = {
                "median": float(np.median(ours)) * scale,
                "other_median": float(np.median(other)) * scale,
                "ratio_median": float(np.median(ratios)), "ratio_min": float(ratios.min()),
                "ratio_max": float(ratios.max()), "rounds": len(ratios)}
    return spread


def bench_exchange(world: MPI.Intracomm, net: Network, sizes: list[int], repeats: int,
                   progress: BenchProgress | None = None,
                   policies: tuple[str, ...] = ("backoff",)) -> list[dict]:
    """Four ways to run one neighbour allgather, per payload size, alternating in rounds.

    ``raw``: ``Neighbor_allgather`` on a dist-graph communicator of our own, as a plain
    mpi4py loop would; ``raw_persistent``: the same with an MPI-4 persistent request set
    up once; ``broadcast``: :meth:`Network.broadcast`; ``channel``: a
    :class:`~mpi_privopt.network.BroadcastChannel` (a persistent request inside Network).
    """
    rows = []
    raw_comm = world.Create_dist_graph_adjacent(net.in_neighbors, net.out_neighbors, reorder=False)
    for size in sizes:
        reps = repeats or _auto_repeats(size)
        # All four ways use the channel's buffers, so they copy the same memory.
        channel = net.broadcast_channel("bench", size)
        payload, out = channel.sends[0], channel.received
        payload[...] = 1.0
        release = Release.public(payload)
        persistent = _persistent_allgather(raw_comm, payload, out)

        def raw():
            raw_comm.Neighbor_allgather(payload, out)

        def raw_persistent():
            persistent.Start()
            persistent.Wait()

        def broadcast():
            net.broadcast(release, "bench", out=out)

        def exchange():
            channel.exchange(release)

        runs = dict(zip(EXCHANGES, (raw, raw_persistent, broadcast, exchange)))
        if persistent is None:  # MPI 3: nothing persistent to compare with
            del runs["raw_persistent"]
        runs = _with_policies(runs, list(policies))
        for fn, policy in runs.values():
            set_exchange_wait(policy)
            fn()  # warm-up: first-touch of buffers, connection setup
        times = {name: [] for name in runs}
        units = BenchProgress.exchange_units(size, reps, len(runs))
        for r in range(ROUNDS):
            for name, (fn, policy) in runs.items():
                set_exchange_wait(policy)
                times[name].append(_timed(world, fn, reps))
            if progress is not None:
                progress.step(units, f"1/3 exchange of {size} doubles, round {r + 1}/{ROUNDS}")
        if persistent is not None:
            persistent.Free()
        channel.free()
        best = {name: min(t) for name, t in times.items()}
        row = {"doubles": size, "repeats": reps}
        row.update({f"{name}_us": best[name] / reps * 1e6 if name in best else None
                    for name in EXCHANGES})
        row.update(_ratios(best, times, (("broadcast", "raw"), ("channel", "raw"),
                                         ("channel", "raw_persistent"))))
        row["wait"] = _wait_spread(times, list(policies), 1e6 / reps)
        rows.append(row)
    set_exchange_wait(policies[0])
    raw_comm.Free()
    return rows


def bench_links(world: MPI.Intracomm, graph,
                progress: BenchProgress | None = None) -> list[dict]:
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
        if progress is not None:
            progress.step(BenchProgress.LINK_UNITS, f"2/3 link {i}-{j}")
    return rows


def bench_dgd(world: MPI.Intracomm, graph, iterations: int,
              progress: BenchProgress | None = None,
              policies: tuple[str, ...] = ("backoff",)) -> dict:
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

    def run_ours(agree=None) -> tuple[float, np.ndarray]:
        # agree: called after every iteration, as the engine agrees on a stop signal
        net = Network(world, in_nbrs, out_nbrs)
        net.add_listener(Ledger(rank, out_nbrs, 1e-5))
        agent = Agent(id=rank, n_agents=size, problem=local, net=net, graph=graph,
                      rng=np.random.default_rng(0))
        algorithm = DGD(agent, cfg.algorithm.params)
        world.Barrier()
        start = perf_counter()
        for n in range(1, iterations + 1):
            algorithm.step(n)
            if agree is not None:
                agree()
        elapsed = world.allreduce(perf_counter() - start, op=MPI.MAX)
        net.free()
        return elapsed, algorithm.x

    def run_stop() -> tuple[float, np.ndarray]:
        # what the engine adds: the signal flag's Iallreduce, completed one iteration on
        with StopOnSignal(world) as stop:
            return run_ours(stop.agreed)

    def run_allreduce() -> tuple[float, np.ndarray]:
        # the alternative it avoids: a blocking Allreduce of the flag every iteration
        flag, agreed = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        return run_ours(lambda: world.Allreduce(flag, agreed, op=MPI.MAX))

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

    def run_raw_persistent() -> tuple[float, np.ndarray]:
        # The same loop on two fixed buffers with a persistent request each: what the
        # registered dgd does through its channel, written directly on mpi4py.
        comm = world.Create_dist_graph_adjacent(in_nbrs, out_nbrs, reorder=False)
        buffers = [np.zeros(X.shape[1]), np.zeros(X.shape[1])]
        received = np.empty((len(in_nbrs), X.shape[1]))
        requests = [_persistent_allgather(comm, b, received) for b in buffers]
        world.Barrier()
        start = perf_counter()
        for n in range(iterations):
            x, request = buffers[n % 2], requests[n % 2]
            request.Start()
            request.Wait()
            gradient = 2.0 / M * (X.T @ (X @ x - y)) + 2.0 * l2 / size * x
            np.subtract(self_w * x + nbr_w @ received, step * gradient,
                        out=buffers[(n + 1) % 2])
        elapsed = world.allreduce(perf_counter() - start, op=MPI.MAX)
        for request in requests:
            request.Free()
        comm.Free()
        return elapsed, buffers[iterations % 2]

    variants = [("raw", run_raw), ("raw_persistent", run_raw_persistent), ("dgd", run_ours),
                ("dgd_stop", run_stop), ("dgd_allreduce", run_allreduce)]
    if not persistent_collectives(world):
        del variants[1]  # MPI 3: no persistent requests to write it with
    variants = _with_policies(dict(variants), list(policies))
    times: dict[str, list[float]] = {name: [] for name in variants}
    same = True
    units = len(variants) * iterations * BenchProgress.DGD_UNITS
    for r in range(ROUNDS):
        for name, (run, policy) in variants.items():
            set_exchange_wait(policy)
            elapsed, x = run()
            times[name].append(elapsed)
            if name == "raw":
                x_raw = x
            else:
                # like for like: every variant computes the same iterates
                error = float(np.max(np.abs(x - x_raw)))
                same = world.allreduce(error, op=MPI.MAX) < 1e-10 and same
        if progress is not None:
            progress.step(units, f"3/3 DGD, round {r + 1}/{ROUNDS}")
    best = {name: min(t) for name, t in times.items()}
    result = {"iterations": iterations, "same_iterates": bool(same)}
    result.update({f"{name}_it_per_s": iterations / best[name] if name in best else None
                   for name in ("raw", "raw_persistent", "dgd", "dgd_stop", "dgd_allreduce")})
    # dgd_vs_X: dgd's iteration rate over X's (X's time over dgd's)
    result.update(_ratios({k: 1 / v for k, v in best.items()},
                          {k: [1 / x for x in v] for k, v in times.items()},
                          (("dgd", "raw"), ("dgd", "raw_persistent"),
                           ("dgd_stop", "dgd"), ("dgd_allreduce", "dgd"))))
    result["wait"] = _wait_spread(times, list(policies), 1e6 / iterations)
    set_exchange_wait(policies[0])
    return result


def persistent_collectives(comm: MPI.Intracomm) -> bool:
    """Whether the MPI library offers persistent neighbour collectives (MPI 4)."""
    graph = comm.Create_dist_graph_adjacent([], [], reorder=False)
    request = _persistent_allgather(graph, np.zeros(1), np.zeros(0))
    if request is not None:
        request.Free()
    graph.Free()
    return request is not None


def _cell(value: float | None, width: int, spec: str) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}{spec}}"


def _ratio_cell(row: dict, key: str, width: int = 7) -> str:
    """A best-of ratio with its median in (), or n/a where a variant could not run."""
    if row[key] is None:
        return f"{'n/a':>{width + 8}}" if width else "n/a"
    return f"{row[key]:>{width}.3f} (median {row[key + '_median']:.3f})" if width == 0 else \
        f"{row[key]:>{width}.3f} ({row[key + '_median']:.3f})"


def main(args) -> int:
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    graph = topology.build_graph(args.topology, size, seed=0)
    topology.validate_graph(graph, size)
    in_nbrs, out_nbrs = topology.neighbors(graph, rank)
    net = Network(world, in_nbrs, out_nbrs)
    net.add_listener(Ledger(rank, out_nbrs, 1e-5))
    sizes = [int(s) for s in args.sizes.split(",")]
    policies = tuple(getattr(args, "wait", "backoff").split(","))

    persistent = persistent_collectives(world)
    edges = graph.to_undirected().number_of_edges() if size > 1 else 0
    extra = 2 * (len(policies) - 1)  # two waiting variants more per further policy
    total = BenchProgress.plan(sizes, args.repeats, 3 + persistent + extra, edges,
                               args.iterations, 4 + persistent + extra)
    # rank 0's line on stderr; the results go to stdout
    progress = BenchProgress(progress_line(getattr(args, "progress_mode", "auto"), total,
                                           "bench", percent=True, settle=0,
                                           in_place=False)
                             if rank == 0 else None)
    progress.step(0.0, "1/3 exchange")
    exchange = bench_exchange(world, net, sizes, args.repeats, progress, policies)
    net.free()
    links = bench_links(world, graph, progress) if size > 1 else []
    dgd = bench_dgd(world, graph, args.iterations, progress, policies)
    progress.finish()
    if rank != 0:
        return 0
    path = ("persistent neighbour collectives (MPI 4)" if persistent
            else "no persistent collectives (MPI 3): persistent variants n/a, the channel "
                 "runs its blocking fallback")
    print(f"bench: {size} ranks, {args.topology} graph ({graph.number_of_edges()} edges), "
          f"{display.mpi_library(MPI.get_vendor()[0], MPI.get_vendor()[1], MPI.Get_version())}"
          f"\n       {path}")
    print("\n1. one neighbour exchange (allgather), us per exchange, best of "
          f"{ROUNDS} alternating rounds")
    print("   raw: Neighbor_allgather; persistent: raw with Neighbor_allgather_init; "
          "broadcast: Network.broadcast;\n   channel: Network's persistent channel. "
          "Ratios best-of, median of the rounds' own ratios in ()")
    print(f"{'doubles':>9} {'raw':>9} {'persistent':>10} {'broadcast':>10} {'channel':>9} "
          f"{'broadcast/raw':>15} {'channel/raw':>15} {'chan/persist':>15}")
    for r in exchange:
        ratios = " ".join(_ratio_cell(r, k) for k in (
            "broadcast_vs_raw", "channel_vs_raw", "channel_vs_raw_persistent"))
        print(f"{r['doubles']:>9} {r['raw_us']:>9.2f} {_cell(r['raw_persistent_us'], 10, '.2f')} "
              f"{r['broadcast_us']:>10.2f} {r['channel_us']:>9.2f} {ratios}")
    if links:
        print("\n2. per link: latency (8 B ping-pong) and bandwidth (1 MiB ping-pong)")
        print(f"{'link':>9} {'latency us':>11} {'MB/s':>10}")
        for r in links:
            print(f"{r['link'][0]:>4}-{r['link'][1]:<4} {r['latency_us']:>11.2f} "
                  f"{r['bandwidth_MBps']:>10.1f}")
    print(f"\n3. DGD, {dgd['iterations']} iterations, it/s: registered 'dgd' "
          f"{dgd['dgd_it_per_s']:.0f}; hand-written mpi4py {dgd['raw_it_per_s']:.0f}, "
          f"with persistent requests {_cell(dgd['raw_persistent_it_per_s'], 0, '.0f')} "
          f"(same iterates: {dgd['same_iterates']})")
    print(f"   dgd / hand-written {_ratio_cell(dgd, 'dgd_vs_raw', 0)}; dgd / hand-written "
          f"persistent {_ratio_cell(dgd, 'dgd_vs_raw_persistent', 0)}")
    print(f"   with the stop-signal agreement (an Iallreduce about every 20 ms): "
          f"{dgd['dgd_stop_it_per_s']:.0f} it/s, rate / dgd {_ratio_cell(dgd, 'dgd_stop_vs_dgd', 0)}; "
          f"with a blocking Allreduce instead: {dgd['dgd_allreduce_it_per_s']:.0f} it/s, "
          f"rate / dgd {_ratio_cell(dgd, 'dgd_allreduce_vs_dgd', 0)}")
    if len(policies) > 1:
        print(f"\n4. exchange wait {policies[0]} against {', '.join(policies[1:])}: median us "
              f"per exchange (DGD: per iteration) over {ROUNDS} rounds, and the per-round "
              f"ratio {policies[0]} / other, median (min-max)")
        for label, spread in ([(f"{r['doubles']:>9} doubles", r["wait"]) for r in exchange]
                              + [("      DGD", dgd["wait"])]):
            print(label + "; ".join(
                f"  {name.split('@')[0]} {s['median']:.2f} / {s['other_median']:.2f}: "
                f"{s['ratio_median']:.3f} ({s['ratio_min']:.3f}-{s['ratio_max']:.3f})"
                for name, s in spread.items()))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"ranks": size, "topology": args.topology, "wait": list(policies),
                       "persistent_collectives": persistent, "exchange": exchange,
                       "links": links, "dgd": dgd}, handle, indent=2)
        print(f"\nwritten: {args.json}")
    return 0

"""The run loop: build everything on each rank, iterate, evaluate, write results.

Every rank runs :func:`run`. Setup steps that can fail on bad input run under
:func:`~mpi_privopt.collective.agree`, so all ranks stop together with one message. The
evaluation uses its own communicator (a duplicate of the world), never counted as the
algorithm's traffic.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np
from mpi4py import MPI

from . import problems, topology
from .agent import Agent
from .algorithms import ALGORITHMS
from .collective import agree
from .config import Config
from .errors import PrivacyBudgetExceeded, TopologyError
from .monitor import Evaluation, Monitor
from .network import Network
from .privacy.ledger import Ledger
from .privacy.noise import agent_noise
from .privacy.report import privacy_report
from .results import RunDirectory, choose_run_dir, write_json
from .traffic import assemble_matrices


@dataclass
class RunResult:
    """What rank 0 knows after a run (other ranks get ``None`` from :func:`run`)."""

    run_dir: str
    summary: dict[str, Any]
    metrics: list[Evaluation] = field(default_factory=list)
    traffic: dict = field(default_factory=dict)
    models: np.ndarray | None = None
    w_c: np.ndarray | None = None


def build_graph(cfg: Config, n_ranks: int):
    """The validated communication graph of ``cfg`` for ``n_ranks`` agents."""
    t = cfg.topology
    seed = t.seed if t.seed >= 0 else cfg.run.seed
    graph = topology.build_graph(t.kind, n_ranks, seed=seed, directed=t.directed,
                                 params={"degree": t.degree, "radius": t.radius,
                                         "neighbors": t.neighbors, "rewire": t.rewire,
                                         "rows": t.rows, "file": t.file})
    topology.validate_graph(graph, n_ranks)
    return graph


def _confirm_same_graph(comm: MPI.Intracomm, graph) -> None:
    hashes = comm.allgather(topology.graph_hash(graph))
    if len(set(hashes)) != 1:
        differing = [r for r, h in enumerate(hashes) if h != hashes[0]]
        raise TopologyError(
            f"ranks built different graphs (ranks {differing} differ from rank 0)",
            "make every rank read the same config and edge-list file (a shared filesystem)")


def _progress_every(cfg: Config) -> int:
    if cfg.run.progress_every:
        return cfg.run.progress_every
    return max(1, cfg.run.iterations // 10)


def _print(stream: TextIO | None, text: str) -> None:
    if stream is not None:
        print(text, file=stream, flush=True)


def run(cfg: Config, out: str | None = None, comm: MPI.Intracomm | None = None,
        stream: TextIO | None = sys.stdout,
        on_setup: Callable[[Agent, Any], None] | None = None) -> RunResult | None:
    """Run ``cfg`` with one agent per rank of ``comm``.

    Parameters
    ----------
    cfg : Config
        The validated configuration (identical on every rank).
    out : str, optional
        Run directory; a fresh one under ``runs/`` if None.
    comm : MPI.Intracomm, optional
        The agents' communicator, ``COMM_WORLD`` by default.
    stream : file, optional
        Where rank 0 prints progress and the summary (None: silent).
    on_setup : callable, optional
        Called on every rank as ``on_setup(agent, algorithm)`` before the first iteration,
        e.g. to attach a receive listener that models a curious neighbour.

    Returns
    -------
    RunResult or None
        On rank 0 the result; None on the other ranks.
    """
    comm = comm or MPI.COMM_WORLD
    eval_comm = comm.Dup()  # the monitor's channel: never algorithm traffic
    try:
        return _run(cfg, out, comm, eval_comm, stream if comm.Get_rank() == 0 else None,
                    on_setup)
    finally:
        eval_comm.Free()


def _run(cfg: Config, out: str | None, comm: MPI.Intracomm, eval_comm: MPI.Intracomm,
         stream: TextIO | None, on_setup) -> RunResult | None:
    rank, n_agents = comm.Get_rank(), comm.Get_size()
    root = rank == 0
    name = cfg.run.name or cfg.algorithm.name

    graph = agree(eval_comm, lambda: build_graph(cfg, n_agents))
    agree(eval_comm, lambda: _confirm_same_graph(eval_comm, graph))
    run_dir = agree(eval_comm, lambda: choose_run_dir(out, name, cfg.run.seed) if root else None)
    run_dir = eval_comm.bcast(run_dir, root=0)

    setup = problems.build_problems(cfg.problem, eval_comm, cfg.run.seed)
    local, reference = setup.local, setup.reference

    in_nbrs, out_nbrs = topology.neighbors(graph, rank)
    net = Network(comm, in_nbrs, out_nbrs)
    # The ledger sees every release on the same send path as the traffic meter; with a
    # budget it also refuses a release before it leaves the agent.
    ledger = Ledger(rank, out_nbrs, cfg.privacy.delta, cfg.privacy.epsilon)
    net.add_listener(ledger)
    if math.isfinite(cfg.privacy.epsilon):
        net.guards.append(ledger)
    rng = np.random.default_rng(np.random.SeedSequence(cfg.run.seed).spawn(n_agents)[rank])
    noise = agree(eval_comm, lambda: agent_noise(cfg.privacy.noise, cfg.run.seed, rank))
    agent = Agent(id=rank, n_agents=n_agents, problem=local, net=net, graph=graph, rng=rng,
                  weights=cfg.topology.weights, noise=noise, privacy=cfg.privacy,
                  iterations=cfg.run.iterations)
    algorithm = ALGORITHMS[cfg.algorithm.name](agent, cfg.algorithm.params)
    if on_setup is not None:
        on_setup(agent, algorithm)

    monitor = Monitor(eval_comm, local.n_features, setup.global_problem,
                      reference.w if root else None, reference.value if root else 0.0)
    directory = None
    if root:
        directory = RunDirectory(run_dir)
        directory.write_config(cfg.to_toml())
        directory.write_graph(graph)
        _print(stream, f"mpi_privopt: {cfg.algorithm.name} on {cfg.problem.name}, "
                       f"{n_agents} agents, {cfg.topology.kind} graph "
                       f"({graph.number_of_edges()} edges), {cfg.run.iterations} iterations")
        _print(stream, f"reference optimum: {reference.method}, F(w_c) = {reference.value:.6g}")

    metrics: list[Evaluation] = []
    iterations, eval_every = cfg.run.iterations, cfg.run.eval_every
    progress_every = _progress_every(cfg)
    eval_seconds = 0.0
    first = monitor.evaluate(0, algorithm.estimate, 0.0)
    if root:
        metrics.append(first)
        directory.append_metrics(first)

    eval_comm.Barrier()
    start = perf_counter()
    for n in range(1, iterations + 1):
        net.round = n
        try:
            algorithm.step(n)
        except PrivacyBudgetExceeded:
            # Only this agent knows; the others wait on it, so the job is aborted by the
            # caller. Leave this agent's ledger beside what rank 0 has written so far.
            write_json(Path(run_dir) / f"privacy-agent-{rank}-at-stop.json",
                       {"stopped_at_iteration": n, **ledger.to_dict()})
            raise
        if n % eval_every == 0 or n == iterations:
            tick = perf_counter()
            row = monitor.evaluate(n, algorithm.estimate, tick - start - eval_seconds)
            if root:
                metrics.append(row)
                directory.append_metrics(row)
                if n % progress_every == 0 or n == iterations:
                    _print(stream, f"  iter {n:>{len(str(iterations))}}/{iterations}  "
                                   f"error {row.error:.3e}  objective gap {row.objective_gap:.3e}"
                                   f"  consensus {row.consensus_gap:.3e}")
            if net.guards:
                # No agent moves on before the row is on disk: if one is then stopped (its
                # budget), the abort cannot cut off what was already measured.
                eval_comm.Barrier()
            eval_seconds += perf_counter() - tick
    eval_comm.Barrier()
    wall = perf_counter() - start

    final_models = monitor.gather(algorithm.estimate)
    all_rows = eval_comm.gather(net.meter.rows(n_agents), root=0)
    comm_seconds = eval_comm.gather(net.meter.total_seconds(), root=0)
    receive_seconds = eval_comm.gather(sum(net.meter.receive_seconds.values()), root=0)
    ledgers = eval_comm.gather(ledger.to_dict(), root=0)
    net.free()
    if not root:
        return None

    traffic = assemble_matrices(all_rows, n_agents)
    bytes_matrix = traffic["total"]["bytes"]
    busiest = np.unravel_index(int(np.argmax(bytes_matrix)), bytes_matrix.shape)
    algorithm_cls = ALGORITHMS[cfg.algorithm.name]
    privacy = privacy_report(ledgers, cfg.privacy.delta, noise.mode)
    final = metrics[-1]
    summary = {
        "algorithm": cfg.algorithm.name,
        "problem": cfg.problem.name,
        "topology": cfg.topology.kind,
        "ranks": n_agents,
        "edges": graph.number_of_edges(),
        "iterations": iterations,
        "seed": cfg.run.seed,
        "final_error": final.error,
        "final_objective_gap": final.objective_gap,
        "final_consensus_gap": final.consensus_gap,
        "bytes_total": int(bytes_matrix.sum()),
        "bytes_busiest_link": int(bytes_matrix[busiest]),
        "busiest_link": [int(busiest[0]), int(busiest[1])],
        "messages_total": int(traffic["total"]["messages"].sum()),
        "wall_seconds": wall,
        "algorithm_seconds": wall - eval_seconds,
        "eval_seconds": eval_seconds,
        "comm_seconds": float(np.mean(comm_seconds)),
        "comm_seconds_max": float(np.max(comm_seconds)),
        "private": algorithm_cls.private,
        "worst_link_epsilon": privacy["worst_link_epsilon"],
        "worst_link": privacy["worst_link"],
        "worst_link_conversion": (privacy["links"]["conversion"][privacy["worst_link"][0]]
                                  [privacy["worst_link"][1]] if privacy["worst_link"] else None),
        "privacy_delta": cfg.privacy.delta,
        "noise": noise.mode,
        "reference_method": reference.method,
        "optimum_value": reference.value,
        "graph_hash": topology.graph_hash(graph),
        "run_dir": str(run_dir),
    }
    report = algorithm.report()
    if report:
        summary["algorithm_report"] = report
    if not algorithm_cls.private:
        summary["privacy_note"] = (
            "; ".join(privacy["notes"]) + " (no differential-privacy guarantee: each link's "
            "loss is reported as unbounded, inf)" if privacy["notes"] else
            "non-private algorithm: every message is sent in the clear, so each link's "
            "privacy loss is unbounded (inf)")
    directory.write_traffic(traffic, receive_seconds)
    directory.write_privacy(privacy)
    directory.write_models(final_models, reference.w)
    directory.write_summary(summary)
    directory.close()
    _print(stream, format_summary(summary))
    return RunResult(run_dir=str(run_dir), summary=summary, metrics=metrics, traffic=traffic,
                     models=final_models.copy(), w_c=reference.w)


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"


def _privacy_line(s: dict[str, Any]) -> str:
    eps = s["worst_link_epsilon"]
    if math.isinf(eps):
        return "worst link epsilon = inf (messages without a DP guarantee: unbounded loss)"
    link = s.get("worst_link")
    where = f" on link {link[0]}->{link[1]}" if link else ""
    return (f"worst link epsilon = {eps:.4g}{where} at delta {s['privacy_delta']:g} "
            f"({s.get('worst_link_conversion')} conversion, {s['noise']} noise)")


def format_summary(s: dict[str, Any]) -> str:
    """The end-of-run table rank 0 prints."""
    i, j = s["busiest_link"]
    rows = [
        ("algorithm", f"{s['algorithm']} on {s['problem']} ({s['ranks']} agents, "
                      f"{s['topology']}, {s['edges']} edges)"),
        ("final error", f"{s['final_error']:.3e}   (sum_k ||w_k - w_c||^2 / ||w_c||^2)"),
        ("objective gap", f"{s['final_objective_gap']:.3e}"),
        ("consensus gap", f"{s['final_consensus_gap']:.3e}"),
        ("iterations", f"{s['iterations']}"),
        ("wall time", f"{s['wall_seconds']:.3f} s  (evaluation {s['eval_seconds']:.3f} s)"),
        ("time in communication", f"{s['comm_seconds']:.3f} s per agent on average "
                                  f"(max {s['comm_seconds_max']:.3f} s)"),
        ("bytes sent", f"{_human_bytes(s['bytes_total'])} in total, "
                       f"{_human_bytes(s['bytes_busiest_link'])} on the busiest link {i}->{j}"),
        ("privacy", _privacy_line(s)),
        *((str(k), str(v)) for k, v in s.get("algorithm_report", {}).items()),
        ("run directory", s["run_dir"]),
    ]
    width = max(len(k) for k, _ in rows)
    line = "-" * (width + 60)
    return "\n".join([line] + [f"{k:<{width}}  {v}" for k, v in rows] + [line] +
                     [f"per-link matrices: python -m mpi_privopt report {s['run_dir']}"])

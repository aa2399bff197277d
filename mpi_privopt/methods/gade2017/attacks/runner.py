"""Run a configuration with curious agents, then measure what their attack recovers.

Every rank calls :func:`run_attack`. The engine runs the configuration unchanged; the
coalition's members record their links, the target records its ground truth, and after
the run rank 0 pools the records (over the world communicator, outside the protocol) and
scores the attack of :mod:`.inversion`.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from mpi4py import MPI

from mpi_privopt import topology
from mpi_privopt.mpiutil import agree, computed_once
from mpi_privopt.config import Config
from mpi_privopt.engine import build_graph, run
from mpi_privopt.errors import ConfigError
from mpi_privopt.methods import ALGORITHMS
from ..certificate import exposure, topology_certificate
from .inversion import SUPPORTED, CoalitionView, PublicProtocol, fit_polynomial, invert_gradients
from .transcript import LinkRecorder, TargetProbe

__all__ = ["run_attack", "score_attack", "SUCCESS_THRESHOLD"]

#: relative gradient error below which the attack counts as exact recovery
SUCCESS_THRESHOLD = 1e-6


def _check(cfg: Config, graph, coalition: list[int], target: int) -> None:
    n = graph.number_of_nodes()
    if cfg.algorithm.name not in SUPPORTED:
        raise ConfigError(f"no attack for algorithm {cfg.algorithm.name!r}",
                          f"attack one of: {', '.join(SUPPORTED)}")
    if not 0 <= target < n or any(not 0 <= a < n for a in coalition):
        raise ConfigError(f"target {target} and coalition {coalition} must be agents 0..{n - 1}",
                          "name agents of the graph")
    if target in coalition:
        raise ConfigError(f"the target {target} is in the coalition {coalition}",
                          "the coalition attacks an agent outside it")
    if not any(a in coalition for a in graph.neighbors(target)):
        raise ConfigError(f"no member of coalition {coalition} is a neighbour of agent {target}",
                          "put at least one neighbour of the target in the coalition")


def _protocol(cfg: Config, graph, dim: int) -> PublicProtocol:
    params = cfg.algorithm.params
    return PublicProtocol(
        algorithm=cfg.algorithm.name,
        mixing=topology.metropolis_weights(graph, cfg.topology.weights),
        schedule=params.schedule, step=params.step,
        fused=getattr(params, "gradient_at", "fused") == "fused",
        share_basis=ALGORITHMS[cfg.algorithm.name].share_basis(params, dim))


def score_attack(points: np.ndarray, gradients: np.ndarray, truth: dict,
                 box: float, exponents: np.ndarray | None,
                 coefficients: np.ndarray | None) -> dict:
    """Errors of the coalition's estimates against the target's ground truth.

    Only rounds where the target's update was not projected (x_{k+1} strictly inside the
    box) and the coalition had an estimate are scored: there the inversion formula is
    valid, so any error is what the protocol hides, not an artefact of the box.

    Returns
    -------
    dict
        ``rounds_scored``, ``gradient_relative_error`` (sqrt(sum ||g_hat - g||^2 /
        sum ||g||^2)), ``gradient_median_relative_error`` (median over rounds of
        ||g_hat - g|| / ||g||), ``coefficient_relative_error`` (polynomial targets: the
        least-squares fit of the target's coefficients from the estimates, relative to
        the true ones; None otherwise), ``exact`` (relative error < SUCCESS_THRESHOLD).
    """
    true_g = truth["gradients"][: len(gradients)]
    next_states = truth["states"][1: len(gradients) + 1]
    interior = np.all(np.abs(next_states) < box, axis=1) if math.isfinite(box) else \
        np.ones(len(gradients), dtype=bool)
    seen = np.all(np.isfinite(gradients), axis=1)
    use = interior & seen
    if not use.any():
        return {"rounds_scored": 0, "gradient_relative_error": None,
                "gradient_median_relative_error": None, "coefficient_relative_error": None,
                "identifiable": None, "exact": False}
    err = np.linalg.norm(gradients[use] - true_g[use], axis=1)
    size = np.linalg.norm(true_g[use], axis=1)
    relative = float(np.sqrt(np.sum(err ** 2) / np.sum(size ** 2)))
    nonzero = size > 0
    median = float(np.median(err[nonzero] / size[nonzero])) if nonzero.any() else None
    coefficient_error = estimate = identifiable = None
    if exponents is not None and coefficients is not None:
        estimate, identifiable = fit_polynomial(points[use], gradients[use], exponents)
        if identifiable:
            coefficient_error = float(np.linalg.norm(estimate - coefficients)
                                      / np.linalg.norm(coefficients))
    return {
        "rounds_scored": int(use.sum()),
        "gradient_relative_error": relative,
        "gradient_median_relative_error": median,
        "coefficient_relative_error": coefficient_error,
        "identifiable": identifiable,
        "true_coefficients": None if coefficients is None else coefficients.tolist(),
        "estimated_coefficients": None if estimate is None else estimate.tolist(),
        "exact": relative < SUCCESS_THRESHOLD,
    }


def run_attack(cfg: Config, coalition: list[int], target: int, out: str | None = None,
               comm: MPI.Intracomm | None = None, progress: bool | None = None) -> dict | None:
    """Run ``cfg`` with ``coalition`` recording its links; score the attack on ``target``.

    Parameters
    ----------
    cfg : Config
        The run (identical on every rank); one of :data:`~.inversion.SUPPORTED`.
    coalition : list of int
        The colluding passive agents.
    target : int
        The agent whose gradients and objective the coalition estimates.
    out : str, optional
        Run directory; ``attack.json`` is written there.
    comm : MPI.Intracomm, optional
        ``COMM_WORLD`` by default.

    Returns
    -------
    dict or None
        On rank 0 the attack report (also in ``attack.json``); None elsewhere.
    """
    comm = comm or MPI.COMM_WORLD
    coalition = sorted(set(int(a) for a in coalition))
    graph = build_graph(cfg, comm.Get_size())
    agree(comm, lambda: _check(cfg, graph, coalition, target))
    recorder: LinkRecorder | None = None
    probe: TargetProbe | None = None
    problem = None

    def on_setup(agent, algorithm) -> None:
        nonlocal recorder, probe, problem
        if agent.id in coalition:
            recorder = LinkRecorder(agent.id)
            agent.net.receive_listeners.append(recorder)
            agent.net.add_listener(recorder)
        if agent.id == target:
            probe = TargetProbe(agent, algorithm)
            problem = agent.problem

    result = run(cfg, out=out, comm=comm, stream=None, on_setup=on_setup, progress=progress)
    truth = None
    if probe is not None:
        polynomial = getattr(problem, "polynomial", None)
        truth = {**probe.arrays(),
                 "exponents": None if polynomial is None else polynomial.exponents,
                 "coefficients": None if polynomial is None else polynomial.coefficients}
    records = comm.gather(recorder.messages if recorder is not None else {}, root=0)
    truths = comm.gather(truth, root=0)
    # rank 0 scores the attack while the others wait: whatever it raises, they raise too
    # (mpiutil.computed_once), instead of going on past a rank that has left
    report = computed_once(comm, lambda: _score(cfg, graph, coalition, target, result,
                                                records, truths, out))
    return report if comm.Get_rank() == 0 else None


def _score(cfg, graph, coalition: list[int], target: int, result, records: list,
           truths: list, out: str | None) -> dict:
    """Rank 0: the coalition's inversion of the pooled messages, scored against the truth
    (written to ``out``/attack.json when given)."""
    truth = next(t for t in truths if t is not None)
    pooled = {key: value for messages in records for key, value in messages.items()}
    dim = truth["points"].shape[1]
    params = cfg.algorithm.params
    protocol = _protocol(cfg, graph, dim)
    view = CoalitionView(pooled, coalition, graph)
    points, gradients = invert_gradients(view, protocol, target, cfg.run.iterations, dim)
    scores = score_attack(points, gradients, truth, params.box, truth["exponents"],
                          truth["coefficients"])
    report = {
        "algorithm": cfg.algorithm.name,
        "topology": cfg.topology.kind,
        "agents": graph.number_of_nodes(),
        "coalition": coalition,
        "target": target,
        "iterations": cfg.run.iterations,
        "delta": getattr(params, "delta", None),
        "sigma": getattr(params, "sigma", None),
        **certificate_entries(graph, coalition, target),
        "final_error": result.summary["final_error"],
        **scores,
    }
    if out is not None:
        Path(out, "attack.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def certificate_entries(graph, coalition: list[int], target: int) -> dict:
    """The attack report's verdicts: Theorem 2's certificate for f = ``len(coalition)``, which
    is a property of the whole graph, and whether this coalition exposes this target.

    ``certificate_protects_each_agent`` is (P1) for every agent (min degree >= f + 1): it can
    fail while the target itself is safe (a low-degree agent elsewhere). ``target_exposed``
    says whether every neighbour of the target is in the coalition.
    """
    certificate = topology_certificate(graph, len(coalition))
    return {
        "certificate": certificate.statement(),
        "certificate_protects_each_agent": certificate.protects_each_agent,
        "target_exposed": target in exposure(graph, coalition).exposed_agents,
    }

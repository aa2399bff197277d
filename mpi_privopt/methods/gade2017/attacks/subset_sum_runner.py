"""Run Function Sharing under MPI with a curious coalition and score its subset-sum attack.

Every rank calls :func:`run_subset_sum_attack`. The engine runs the FS configuration
unchanged; the coalition's members record the shares on their links as they cross them
(:class:`~.transcript.LinkRecorder`, phase ``fs-setup``). After the run every agent hands
rank 0, outside the protocol, what the proof's threat model grants the coalition (its
f-hat, the function it really descended on) and the ground truth used only to score the
attack (its f and every share it sent). Rank 0 then tries every strict group of agents
outside the coalition (:mod:`.subset_sum`).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from mpi4py import MPI

from mpi_privopt.mpiutil import agree, computed_once
from mpi_privopt.config import Config
from mpi_privopt.engine import build_graph, run
from mpi_privopt.errors import ConfigError
from ..certificate import exposure, topology_certificate
from mpi_privopt.problems.consensus.polynomial import monomial_basis
from .subset_sum import (RECOVERY_TOLERANCE, adversary_view, candidate_groups,
                         group_sum_estimate, indistinguishable_instance, AdversaryView)
from .transcript import LinkRecorder

__all__ = ["run_subset_sum_attack"]

SHARE_PHASE = "fs-setup"


def _check(cfg: Config, graph, coalition: list[int]) -> None:
    n = graph.number_of_nodes()
    if cfg.algorithm.name != "fs" or cfg.problem.name != "polynomial":
        raise ConfigError(
            f"the subset-sum attack needs Function Sharing on polynomial objectives, got "
            f"algorithm {cfg.algorithm.name!r} on problem {cfg.problem.name!r}",
            "--set algorithm.name=fs --set problem.name=polynomial (Theorem 2 is stated for "
            "polynomial objectives)")
    if not coalition or any(not 0 <= a < n for a in coalition):
        raise ConfigError(f"coalition {coalition} must name agents 0..{n - 1}",
                          "pass --coalition with at least one agent of the graph")
    if n - len(coalition) < 2:
        raise ConfigError(f"coalition {coalition} leaves fewer than two agents outside it",
                          "a strict group of the other agents needs at least two of them")


def _basis(objective_exponents: list[np.ndarray], share_exponents: np.ndarray) -> dict:
    """One row index per monomial over the objectives' and the shares' monomials."""
    rows: dict[tuple[int, ...], int] = {}
    for exponents in [share_exponents, *objective_exponents]:
        for row in exponents:
            rows.setdefault(tuple(int(e) for e in row), len(rows))
    return rows


def _vector(rows: dict, exponents: np.ndarray, coefficients: np.ndarray,
            constant: float = 0.0) -> np.ndarray:
    out = np.zeros(len(rows) + 1)  # the constant term last
    for row, c in zip(exponents, coefficients):
        out[rows[tuple(int(e) for e in row)]] += c
    out[-1] = constant
    return out


def run_subset_sum_attack(cfg: Config, coalition: list[int], out: str | None = None,
                          comm: MPI.Intracomm | None = None) -> dict | None:
    """Run FS ``cfg`` with ``coalition`` recording its links; attack every strict group.

    Parameters
    ----------
    cfg : Config
        An ``fs`` run on the ``polynomial`` problem (identical on every rank). The shares
        cross the links in iteration 1, so ``run.iterations = 1`` suffices.
    coalition : list of int
        The colluding passive agents.
    out : str, optional
        Run directory; ``subset-sum.json`` is written there.
    comm : MPI.Intracomm, optional
        ``COMM_WORLD`` by default.

    Returns
    -------
    dict or None
        On rank 0 the report; None elsewhere. ``groups`` has one entry per strict group
        of agents outside the coalition: whether its sum was recovered exactly, the
        relative error, the links whose shares the coalition never saw, and (when not
        recovered) whether a second instance with another sum and the same view exists.
    """
    comm = comm or MPI.COMM_WORLD
    coalition = sorted(set(int(a) for a in coalition))
    graph = build_graph(cfg, comm.Get_size())
    agree(comm, lambda: _check(cfg, graph, coalition))
    held: dict = {}

    def on_setup(agent, algorithm) -> None:
        held.update(agent=agent, algorithm=algorithm)
        if agent.id in coalition:
            held["recorder"] = LinkRecorder(agent.id)
            agent.net.receive_listeners.append(held["recorder"])
            agent.net.add_listener(held["recorder"])

    run(cfg, out=out, comm=comm, stream=None, on_setup=on_setup)
    agent, algorithm = held["agent"], held["algorithm"]
    truth = agent.problem.polynomial
    recorder = held.get("recorder")
    mine = {
        "agent": agent.id,
        "objective": (truth.exponents, truth.coefficients, truth.constant),
        # the grant: f-hat_i as the agent built it (f_i + p_i, eq. 9)
        "noise": algorithm.noise_function.coefficients,
        "sent": dict(zip(agent.net.out_neighbors, algorithm.shares_sent)),
        "recorded": {} if recorder is None else
                    {(s, r): row for (phase, _, s, r), row in recorder.messages.items()
                     if phase == SHARE_PHASE},
    }
    everything = comm.gather(mine, root=0)

    def scored() -> dict:
        report = _score(cfg, graph, coalition, sorted(everything, key=lambda m: m["agent"]))
        if out is not None:
            Path(out, "subset-sum.json").write_text(json.dumps(report, indent=2) + "\n")
        return report
    # rank 0 scores while the others wait: whatever it raises, they raise too
    report = computed_once(comm, scored)
    return report if comm.Get_rank() == 0 else None


def _score(cfg: Config, graph, coalition: list[int], agents: list[dict]) -> dict:
    params = cfg.algorithm.params
    dim = agents[0]["objective"][0].shape[1]
    share_exponents = monomial_basis(dim, params.degree, params.cross_terms)
    rows = _basis([a["objective"][0] for a in agents], share_exponents)
    share = lambda coefficients: _vector(rows, share_exponents, coefficients)
    objectives = np.array([_vector(rows, *a["objective"]) for a in agents])
    granted = objectives + np.array([share(a["noise"]) for a in agents])
    shares = {(a["agent"], int(r)): share(c) for a in agents for r, c in a["sent"].items()}
    seen = {link: share(c) for a in agents for link, c in a["recorded"].items()}
    truth_view = adversary_view(objectives, shares, coalition)
    view = AdversaryView(tuple(coalition), granted,
                         {a: objectives[a] for a in coalition}, seen)
    if not view.same_as(truth_view):
        raise RuntimeError("the coalition's recorded shares or the agents' f-hat differ from "
                           "eqs. 8-9 applied to the shares sent: the FS run is inconsistent")
    q = np.zeros(len(rows) + 1)
    q[: len(share_exponents)] = 1.0  # a non-zero polynomial of the share class
    groups = []
    for group in candidate_groups(graph, coalition):
        estimate = group_sum_estimate(view, graph, group)
        true_sum = objectives[list(group)].sum(axis=0)
        error = float(np.linalg.norm(estimate.estimate - true_sum)
                      / max(np.linalg.norm(true_sum), 1e-300))
        entry = {"group": list(group), "recovered": error < RECOVERY_TOLERANCE,
                 "relative_error": error,
                 "unseen_links": [list(link) for link in estimate.unseen_links]}
        if not estimate.complete:
            other = indistinguishable_instance(objectives, shares, graph, coalition, group, q)
            entry["same_view_other_sum"] = other is not None and adversary_view(
                other[0], other[1], coalition).same_as(view) and not np.allclose(
                other[0][list(group)].sum(axis=0), true_sum)
        groups.append(entry)
    seen_exposure = exposure(graph, coalition)
    return {
        "algorithm": "fs",
        "topology": cfg.topology.kind,
        "agents": graph.number_of_nodes(),
        "coalition": coalition,
        "separated_groups": [list(g) for g in seen_exposure.separated_groups],
        "exposed_agents": list(seen_exposure.exposed_agents),
        "certificate": topology_certificate(graph, len(coalition)).statement(),
        "threat_model": "the proof's: every f-hat granted, the coalition's own f and the "
                        "shares on its links (recorded from the run's messages)",
        "groups": groups,
        "attack_succeeds": any(g["recovered"] for g in groups),
        "recovered_groups": [g["group"] for g in groups if g["recovered"]],
    }

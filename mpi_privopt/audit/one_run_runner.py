"""The one-run audit of a link under MPI: m canaries in one run, the signs guessed.

Every rank calls :func:`run_one_run_audit`. The engine runs the configuration unchanged
(no canary on the wire, as in :mod:`.runner`). At each release of the target, the
:class:`OneRunHarness` asks the method's :mod:`.canary` entry for the clean value of the
one audited world, in which canary j (direction u_j, the coordinate vectors e_1..e_m, so
that canaries do not interfere) is a record of the target with clipped gradient
S_j c1 u_j, and releases it once through a copy of the target's real mechanism, with the
audit's own noise stream (:func:`~.harness.audit_noise`). Each canary's score is the
Gaussian likelihood-ratio statistic of those releases along its own shift; the auditor
guesses the sign of the r canaries with the largest |score| (r fixed before the run from
the public noise schedule, :func:`plan_guesses`) and :func:`~.one_run.epsilon_lower_bound`
turns the correct guesses into a lower bound on the link's epsilon at the run's delta,
which must not exceed the ledger's.

The canary worlds need a method whose clean value is affine in the canary term (the
linearised methods: zcdp-nfl, eps-delta-nfl, zcdp-grad-nfl); the harness checks it at
every release.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from time import perf_counter

import numpy as np
from mpi4py import MPI

from .. import display
from ..methods import ALGORITHMS
from ..mpiutil import agree, computed_once
from ..config import Config
from ..engine import build_graph, run
from ..errors import ConfigError
from ..privacy.ledger import Ledger
from ..services import faults
from .canary import auditable, counterfactual
from .harness import (AUDIT_NOISE_TAG, audit_noise, mechanism_of, observe_releases,
                      trial_copy)
from .one_run import best_possible_bound, epsilon_lower_bound, sign_guesses
from .method_audit import planned_mu
from .verdict import PASS, decide, format_verdict

__all__ = ["OneRunHarness", "plan_guesses", "run_one_run_audit", "canary_signs",
           "format_one_run"]

#: spawn-key stream of the canaries' signs (beside the trial worlds' streams 1 and 2)
SIGN_STREAM = 3


def canary_signs(seed: int, target: int, m: int) -> np.ndarray:
    """The audited world: m signs, each +1 or -1 with probability 1/2, seeded."""
    rng = np.random.default_rng(np.random.SeedSequence(
        seed, spawn_key=(AUDIT_NOISE_TAG, target, SIGN_STREAM)))
    return rng.choice(np.array([-1.0, 1.0]), size=m)


def plan_guesses(mu: float, m: int, delta: float, confidence: float = 0.95,
                 simulations: int = 20, seed: int = 0) -> int:
    """The number of guesses r that maximises the expected bound, from public values only.

    Each canary's standardised score is ``S_j mu / 2 + N(0, 1)`` when the link is mu-GDP per
    record (the two worlds are mu apart; the unknown midpoint is mu / 2 from each) and the
    booked noise is right; this simulates that model (not the run) and picks r from a grid,
    so that r is fixed before anything is released.
    """
    rng = np.random.default_rng(seed)
    grid = sorted({max(1, int(round(m * f))) for f in
                   (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)})
    correct = np.zeros(len(grid))
    for _ in range(simulations):
        signs = rng.choice(np.array([-1.0, 1.0]), size=m)
        scores = signs * (mu / 2.0) + rng.standard_normal(m)
        for k, r in enumerate(grid):
            correct[k] += np.sum(sign_guesses(scores, r) == signs)
    expected = [epsilon_lower_bound(m, r, int(c // simulations), delta, confidence)
                for r, c in zip(grid, correct)]
    return grid[int(np.argmax(expected))]


class OneRunHarness:
    """The one audited world of the target (see the module docstring)."""

    def __init__(self, agent, algorithm, clean_for, signs: np.ndarray, noise) -> None:
        self.agent, self.algorithm, self.clean_for = agent, algorithm, clean_for
        self.signs = signs
        self.noise = noise
        self.scores = np.zeros(signs.size)
        self.worst_nonlinearity = 0.0
        self.mu2 = np.zeros(signs.size)  # realised per-canary (||shift|| / sigma)^2
        self.releases = 0
        self._mechanism = None

    def attach(self, mechanism) -> None:
        """Wrap ``mechanism.release`` on the target (the wire's release goes on unchanged)."""
        self._mechanism = trial_copy(mechanism, self.noise)
        observe_releases(mechanism, lambda clean, sensitivity, scale, record, result:
                         self.on_release(sensitivity, scale, record))

    def on_release(self, sensitivity: float, scale: float, record) -> None:
        problem = self.agent.problem
        m = self.signs.size
        at = self.clean_for(self.algorithm, self.agent.net.round)
        base = at(np.zeros(problem.n_features))
        unit = problem.clip / problem.n_samples  # one canary's term: c1 u_j / M
        terms = np.zeros((m, problem.n_features))
        terms[np.arange(m), np.arange(m)] = unit
        shifts = at(terms) - base  # row j: clean(+u_j) - clean(0)
        world = at(self.signs @ terms)
        self.worst_nonlinearity = max(self.worst_nonlinearity, float(np.max(np.abs(
            world - base - self.signs @ shifts), initial=0.0)))
        trial = self._mechanism.release(world[None, :], sensitivity, scale, record=record)
        sigma = float(trial.event.sigma)
        self.scores += shifts @ (trial.payload[0] - base) / sigma ** 2
        self.mu2 += (2.0 * np.linalg.norm(shifts, axis=1) / sigma) ** 2
        self.releases += 1


def _check(cfg: Config, graph, target: int, receiver: int | None, canaries: int,
           guesses: int | None) -> None:
    n = graph.number_of_nodes()
    counterfactual(cfg.algorithm.name)
    if not ALGORITHMS[cfg.algorithm.name].audit().affine:
        affine = [name for name in auditable() if ALGORITHMS[name].audit().affine]
        raise ConfigError(f"the one-run audit needs a method whose release is affine in "
                          f"the canary gradient, not {cfg.algorithm.name!r}",
                          f"audit one of {', '.join(affine)} in one run, or use "
                          "the trial audit (python -m mpi_privopt audit)")
    if not 0 <= target < n or (receiver is not None and not graph.has_edge(target, receiver)):
        raise ConfigError(f"agent {target} and link {target},{receiver} must be in the graph",
                          "name an agent and one of its neighbours")
    features = cfg.problem.features
    if guesses is not None and not 1 <= guesses <= canaries:
        raise ConfigError(f"--guesses {guesses} must be between 1 and the {canaries} canaries",
                          "guess at most as many signs as there are canaries")
    if not 1 <= canaries <= features:
        raise ConfigError(f"{canaries} canaries in orthogonal directions need that many "
                          f"features; the problem has {features}",
                          f"use at most {features} canaries or more [problem] features")


def run_one_run_audit(cfg: Config, target: int = 0, receiver: int | None = None,
                      canaries: int | None = None, guesses: int | None = None,
                      confidence: float = 0.95, out: str | None = None,
                      comm: MPI.Intracomm | None = None,
                      progress: bool | None = None) -> dict | None:
    """Audit agent ``target``'s releases on its link to ``receiver`` with ``canaries``
    canaries in one run (all of the problem's features by default). ``progress``: the
    run's progress line (:func:`mpi_privopt.engine.run`).

    Returns
    -------
    dict or None
        On rank 0 the report (also ``one-run-audit.json`` in the run directory).
    """
    comm = comm or MPI.COMM_WORLD
    m = int(canaries if canaries is not None else cfg.problem.features)
    graph = build_graph(cfg, comm.Get_size())
    agree(comm, lambda: _check(cfg, graph, target, receiver, m, guesses))
    receiver = min(graph.neighbors(target)) if receiver is None else receiver
    signs = canary_signs(cfg.run.seed, target, m)
    held: dict = {}

    def on_setup(agent, algorithm) -> None:
        held["ledger"] = next(l for l in agent.net.listeners if isinstance(l, Ledger))
        if agent.id != target:
            return
        mu = planned_mu(algorithm.schedule, agent.iterations)
        r = guesses if guesses is not None else plan_guesses(mu, m, cfg.privacy.delta,
                                                              confidence)
        held.update(planned_mu=mu, guesses=int(min(r, m)))
        held["harness"] = OneRunHarness(agent, algorithm, counterfactual(cfg.algorithm.name),
                                        signs, audit_noise(agent.noise, cfg.run.seed, target))
        held["harness"].attach(mechanism_of(algorithm))

    start = perf_counter()
    result = run(cfg, out=out, comm=comm, stream=None, on_setup=on_setup, progress=progress)
    seconds = perf_counter() - start

    def summarise() -> dict:
        """The target's report (it alone holds the canaries' scores)."""
        faults.fault("audit-summary", target, 0)  # tests only
        h = held["harness"]
        link = held["ledger"].links[receiver]
        r = held["guesses"]
        correct = int(np.sum(sign_guesses(h.scores, r) == signs))
        delta = cfg.privacy.delta
        bound = epsilon_lower_bound(m, r, correct, delta, confidence)
        ledger_eps = float(link.epsilon(delta)["best"])
        report = {
            "algorithm": cfg.algorithm.name, "link": [target, receiver],
            "features": cfg.problem.features, "canaries": m, "guesses": r,
            "correct": correct, "confidence": confidence, "delta": delta,
            "releases": h.releases, "epsilon_lower": bound, "ledger_epsilon": ledger_eps,
            "ledger_mu": math.sqrt(link.mu2) if link.gaussian_only else math.nan,
            "planned_mu": held["planned_mu"],
            "canary_mu": float(np.sqrt(np.median(h.mu2))),
            "best_possible": best_possible_bound(m, r, delta, confidence),
            "worst_nonlinearity": h.worst_nonlinearity, "seconds": seconds,
        }
        report["flags"] = epsilon_flags(bound, ledger_eps, target, receiver)
        # r right guesses of r cannot refute more than best_possible: at or below the
        # ledger's epsilon, the audit could not have failed (INCONCLUSIVE, not PASS)
        report["verdict"] = decide(report["flags"], report["best_possible"], ledger_eps)
        report["passed"] = report["verdict"] == PASS
        return report
    # the target summarises while the others wait for its report: whatever it raises,
    # they raise too (mpiutil.computed_once), instead of waiting for a rank that has left
    report = computed_once(comm, summarise, root=target)

    def write() -> dict:
        report["run_dir"] = result.run_dir
        Path(result.run_dir, "one-run-audit.json").write_text(json.dumps(report, indent=2)
                                                             + "\n")
        return report
    # rank 0 writes while the others wait: a failure to write reaches them too
    report = computed_once(comm, write)
    return report if comm.Get_rank() == 0 else None


def epsilon_flags(bound: float, ledger_epsilon: float, sender: int,
                  receiver: int) -> list[str]:
    """The audit's finding, if any: the lower bound above the ledger's epsilon, both shown
    so that each stays true (the bound rounded down, the ledger's loss up)."""
    if not bound > ledger_epsilon:
        return []
    return [f"epsilon lower bound {display.lower_bound(bound)} > ledger epsilon "
            f"{display.loss(ledger_epsilon)} on link {sender}->{receiver}"]


def format_one_run(report: dict) -> str:
    """The one-run report as the command prints it."""
    i, j = report["link"]
    verdict = format_verdict(report["verdict"], report["flags"], report["best_possible"],
                             report["ledger_epsilon"], "epsilon",
                             "the bound grows with the canaries and guesses: more features, "
                             "--canaries, --guesses")
    return "\n".join([
        f"one-run audit of {report['algorithm']} on link {i}->{j} ({report['canaries']} "
        f"canaries in {report['features']} features, {report['releases']} releases)",
        # the ledger's losses rounded up, the audit's lower bound down: both claims hold
        f"  ledger epsilon      {display.loss(report['ledger_epsilon']):<6}   at delta "
        f"{display.exact(report['delta'])} (mu {display.loss(report['ledger_mu'])})",
        f"  epsilon >=          {display.lower_bound(report['epsilon_lower']):<6}   "
        f"({report['correct']} of "
        f"{report['guesses']} signs guessed right, confidence {report['confidence']:g}; at "
        f"best {display.number(report['best_possible'])} with {report['guesses']} guesses)",
        f"  time                {display.duration(report['seconds'])}",
        verdict])

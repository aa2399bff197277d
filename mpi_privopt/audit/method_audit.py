"""How the trial audit reads one family of methods: what ``Algorithm.audit()`` returns.

The runner (:mod:`.runner`) is the same for every method: it checks the run, runs it with
the audit attached at set-up, gathers every rank's records and summarises them. What
differs by family is in a :class:`MethodAudit`, which the method's class hands out
(``Algorithm.audit``, docs/architecture.md "The Method contract"), so the runner never
names a method:

* :class:`MechanismAudit` (here): a method that sends one perturbed iterate per
  iteration through an :class:`~mpi_privopt.methods.perturbed.IterateRelease`; the
  trials wrap its mechanism (:class:`~.harness.TrialHarness`) with the method's
  counterfactual (:mod:`.canary`);
* ``TokenAudit`` (``methods/chan2023/audit.py``): token-admm, trials through the token
  iteration;
* ``AggregativeAudit`` (``methods/chen2025/audit.py``): ldp-aggregative, pure epsilon.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .canary import canary_direction
from .gdp_report import format_gdp_report, summarise
from .harness import (MEMBERSHIP_NOISE, MembershipTrials, TrialHarness, WireRecorder,
                      audit_noise, mechanism_of, trial_worlds)

__all__ = ["AuditRun", "MechanismAudit", "MethodAudit", "planned_mu"]


def planned_mu(schedule, iterations: int) -> float:
    """The GDP mu a link sees from a schedule calibrated per unit sensitivity:
    ``sqrt(sum_n (1 / sigma_n(D = 1))^2)`` over the run's releases."""
    return math.sqrt(sum(schedule.scale(n, 1.0) ** -2 for n in range(1, iterations + 1)))


@dataclass
class AuditRun:
    """What a :class:`MethodAudit` is given of the audit being run (one per rank).

    ``check_trials(mu)`` / ``check_pure_trials(epsilon)`` refuse (unless ``--force``) a
    trial count too small for the ledger's figure and record the plan; the audit calls
    one of them on the target inside :meth:`agree` (every rank agrees once at set-up).
    """

    comm: object
    seed: int
    target: int
    receiver: int | None
    trials: int
    membership: bool
    check_trials: Callable[[float], None]
    check_pure_trials: Callable[[float], None]
    wire: WireRecorder | None = field(default=None)

    def agree(self, fn: Callable[[], object]) -> object:
        """``fn`` on every rank, one error for all (:func:`~mpi_privopt.mpiutil.agree`)."""
        from ..mpiutil import agree  # MPI: only once the run is set up
        return agree(self.comm, fn)

    def worlds(self, stream: int = 1) -> np.ndarray:
        """The trials' worlds (half True), seeded by the run's seed and the target."""
        return trial_worlds(self.seed, self.target, self.trials, stream)

    def membership_trials(self, u: np.ndarray | None = None) -> MembershipTrials:
        return MembershipTrials(self.worlds(2), u)

    def own_membership(self, agent_noise, u: np.ndarray | None = None) -> tuple:
        """(the membership trials, their own noise), or nothing without ``membership``:
        the token and aggregative trials keep the audit's stream as it was without them."""
        if not self.membership:
            return ()
        return (self.membership_trials(u),
                audit_noise(agent_noise, self.seed, self.target, MEMBERSHIP_NOISE))


class MethodAudit:
    """One family's trial audit, as the runner drives it (module docstring).

    Attributes
    ----------
    clean_for : callable or None
        The method's counterfactual (``(algorithm, n) -> clean(g)``, :mod:`.canary`) when
        the audit goes through its mechanism; None when the family has its own harness.
        The one-run audit needs one.
    affine : bool
        Whether that clean value is affine in the canary term (the one-run audit's
        thousand canaries then add up exactly: :mod:`.one_run_runner`).
    """

    clean_for: Callable | None = None
    affine: bool = False

    def check(self, cfg) -> None:
        """Raise ConfigError when this run of the method cannot be audited (called on
        every rank before the run, inside one agreement)."""

    def receiver(self, graph, target: int, receiver: int | None) -> int | None:
        """The receiver of the audited link known before set-up: the one asked for, else
        the target's smallest neighbour (None: the audit decides it at set-up)."""
        return receiver if receiver is not None else min(graph.neighbors(target))

    def attach(self, run: AuditRun, agent, algorithm):
        """Attach the audit to ``agent``'s method at set-up (every rank; collective: each
        rank calls ``run.agree`` the same number of times). Returns the target's trial
        harness (with ``to_dict()``), None on the other ranks."""
        raise NotImplementedError

    def summarise(self, cfg, graph, records: list[dict], target: int, receiver: int,
                  all_links: bool, confidence: float, seconds: float, trials: int) -> dict:
        """The audit report from every rank's records (rank 0). Default: the GDP report
        (:func:`~.gdp_report.summarise`)."""
        return summarise(cfg, graph, records, target, receiver, all_links, confidence,
                         seconds, trials)

    def format(self, report: dict) -> str:
        """The report as the command prints it. Default: the GDP report's lines."""
        return format_gdp_report(report)


class MechanismAudit(MethodAudit):
    """The audit of a method that releases through an ``IterateRelease``: every agent's
    wire is recorded; the target's mechanism is wrapped by a
    :class:`~.harness.TrialHarness` with the method's counterfactual ``clean_for``."""

    def __init__(self, clean_for: Callable, affine: bool = False) -> None:
        self.clean_for = clean_for
        self.affine = affine

    def attach(self, run: AuditRun, agent, algorithm):
        mechanism = mechanism_of(algorithm)
        run.wire.attach(agent, mechanism)
        if agent.id != run.target:
            run.agree(lambda: None)
            return None
        run.agree(lambda: run.check_trials(planned_mu(algorithm.schedule, agent.iterations)))
        u = canary_direction(agent.problem)
        noise = audit_noise(agent.noise, run.seed, run.target)
        harness = TrialHarness(agent, algorithm, self.clean_for, u, run.worlds(1), noise)
        if run.membership:
            harness.membership = run.membership_trials(u)
        harness.attach(mechanism, noise)
        return harness

"""Run a configuration under MPI with the audit attached; turn the trials into bounds.

Every rank calls :func:`run_audit`. The engine runs the configuration unchanged (the
midpoint world, no canary, on the wire); every agent records its releases and what it
receives (:class:`~.harness.WireRecorder`); the target runs the trials at each of its
releases (:class:`~.harness.TrialHarness`). After the run rank 0 pools the records (over
the world communicator, outside the protocol) and computes the verdicts.

Verdicts (each a flag; the audit passes when none is raised):

* ``mu``: the Clopper-Pearson lower bound on the GDP mu exceeds the ledger's mu for the
  audited link;
* ``trial-variance`` / ``trial-independence``: the trials' standardised noise is not of
  the booked variance, or is correlated from one release to the next;
* ``wire-variance`` / ``wire-independence`` on a link: the same tests on what really
  crossed the link (``received - clean``), on the audited link or, with ``--all-links``,
  on every link of the graph.

Each test flags at p < :data:`TEST_LEVEL` (fixed seeds make the verdicts repeatable).

Beside the verdicts, with ``membership`` (the default) the report has the membership attack
of an observer of the link (:class:`~.harness.MembershipTrials`,
:func:`~.stats.membership_attack`) against the guarantee's advantage bound: reported, not a
verdict.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from time import perf_counter

from mpi4py import MPI

from ..methods import ALGORITHMS
from ..mpiutil import agree, computed_once
from ..config import Config
from ..engine import build_graph, run
from ..errors import ConfigError
from ..privacy.ledger import Ledger
from ..services import faults
from . import stats
from .canary import counterfactual
from .gdp_report import TEST_LEVEL
from .harness import WireRecorder
from .method_audit import AuditRun, MethodAudit, planned_mu

__all__ = ["TEST_LEVEL", "DEFAULT_CONFIDENCE", "planned_mu", "run_audit", "is_auditable"]

#: confidence of the Clopper-Pearson bounds
DEFAULT_CONFIDENCE = 0.95
#: the share of the ledger's mu the trials must be able to reach (the audit's acceptance criterion)
REACH = 0.5


def is_auditable(cfg: Config) -> bool:
    """Whether ``cfg`` is a private run the white-box audit applies to (else its loss is
    unbounded, or the method has no audit yet: :func:`~.canary.counterfactual` says)."""
    # noiseless is a key of a method's Params (the iterate methods'), not a method hook
    return ALGORITHMS[cfg.algorithm.name].private and not getattr(
        cfg.algorithm.params, "noiseless", False)


def _audit_of(cfg: Config) -> MethodAudit:
    """The method's audit (``Algorithm.audit``), or the ConfigError naming the auditable
    methods when it has none."""
    audit = ALGORITHMS[cfg.algorithm.name].audit()
    if audit is None:
        counterfactual(cfg.algorithm.name)  # raises: says which methods are audited
    return audit


def _check(cfg: Config, graph, target: int, receiver: int | None, trials: int) -> None:
    n = graph.number_of_nodes()
    _audit_of(cfg).check(cfg)
    if not 0 <= target < n:
        raise ConfigError(f"audit target {target} is not an agent (0..{n - 1})",
                          "name an agent of the graph with --target or --link")
    if graph.degree(target) == 0:
        raise ConfigError(f"agent {target} has no link to audit ({n} agent"
                          f"{'s' if n != 1 else ''} in the run)",
                          "start several agents: mpiexec -n K python -m mpi4py -m "
                          "mpi_privopt audit ...")
    if receiver is not None and not graph.has_edge(target, receiver):
        raise ConfigError(f"{target},{receiver} is not a link of the graph (agent {target}'s "
                          f"neighbours: {sorted(graph.neighbors(target))})",
                          "audit a link i,j between graph neighbours")
    if trials < 16 or trials % 4:
        raise ConfigError(f"--trials {trials} must be a multiple of 4, at least 16",
                          "e.g. --trials 4000 (half per world, half of those select the "
                          "threshold)")


def _trials_check(needed: int | None, ledger: str, trials: int, confidence: float,
                  force: bool) -> dict:
    """Refuse, unless ``force``, a trial count below ``needed`` (None: beyond any audit)
    for the bound to reach :data:`REACH` of the ``ledger``'s figure."""
    enough = needed is not None and trials >= needed
    if not enough and not force:
        reach = (f"at least {needed} trials" if needed is not None
                 else "more trials than an audit can run (the bound saturates)")
        raise ConfigError(
            f"{trials} trials are too few for the bound to reach {REACH:g} of the "
            f"ledger's {ledger} at confidence {confidence:g}: it needs {reach}",
            f"rerun with --trials {needed}" if needed is not None else
            "add --force to run anyway (the bound will be loose)")
    return {"needed": needed, "enough": enough}


def run_audit(cfg: Config, target: int = 0, receiver: int | None = None,
              all_links: bool = False, trials: int = 4000,
              confidence: float = DEFAULT_CONFIDENCE, force: bool = False,
              membership: bool = True, out: str | None = None,
              comm: MPI.Intracomm | None = None, progress: bool | None = None) -> dict | None:
    """Audit agent ``target``'s releases on the link to ``receiver`` (its smallest
    neighbour by default) over one run of ``cfg``. ``progress``: the run's progress line
    over its iterations, trials included (:func:`mpi_privopt.engine.run`; None: where a
    person watches).

    Returns
    -------
    dict or None
        On rank 0 the audit report (also ``audit.json`` in the run directory); None on the
        other ranks.
    """
    comm = comm or MPI.COMM_WORLD
    graph = build_graph(cfg, comm.Get_size())
    agree(comm, lambda: _check(cfg, graph, target, receiver, trials))
    audit = _audit_of(cfg)
    wire: WireRecorder | None = None
    harness = None
    ledger: Ledger | None = None
    plan: dict = {}

    def check_trials(mu: float) -> None:
        needed = stats.trials_needed(mu, confidence, REACH)
        plan.update(planned_mu=mu, **_trials_check(needed, f"mu = {mu:.4g}", trials,
                                                   confidence, force))

    def check_pure_trials(epsilon: float) -> None:
        needed = stats.pure_trials_needed(epsilon, confidence, REACH)
        plan.update(planned_epsilon=epsilon, **_trials_check(
            needed, f"epsilon = {epsilon:.4g}", trials, confidence, force))

    audited = AuditRun(comm=comm, seed=cfg.run.seed, target=target,
                       receiver=audit.receiver(graph, target, receiver), trials=trials,
                       membership=membership, check_trials=check_trials,
                       check_pure_trials=check_pure_trials)

    def on_setup(agent, algorithm) -> None:
        nonlocal wire, harness, ledger
        ledger = next(l for l in agent.net.listeners if isinstance(l, Ledger))
        wire = audited.wire = WireRecorder(agent.id)
        harness = audit.attach(audited, agent, algorithm)

    start = perf_counter()
    result = run(cfg, out=out, comm=comm, stream=None, on_setup=on_setup, progress=progress)
    seconds = perf_counter() - start
    mine = {
        "agent": wire.agent, "sent": wire.sent, "received": wire.received,
        "ledger": {j: {"mu2": acc.mu2, "rho": acc.rho, "gaussian_only": acc.gaussian_only,
                       "epsilon": acc.epsilon(cfg.privacy.delta)["best"],
                       "pure_epsilon": acc.pure.epsilon if acc.pure is not None else math.inf}
                   for j, acc in ledger.links.items()},
        "harness": harness.to_dict() if harness is not None else None,
        "plan": plan or None,
    }
    records = comm.gather(mine, root=0)

    def summarise() -> dict:
        faults.fault("audit-summary", 0, 0)  # tests only
        report = audit.summarise(cfg, graph, records, target, audited.receiver, all_links,
                                 confidence, seconds, trials)
        report["run_dir"] = result.run_dir
        Path(result.run_dir, "audit.json").write_text(json.dumps(report, indent=2) + "\n")
        return report
    # rank 0 summarises while the others wait for the verdict: whatever it raises, they
    # raise too (mpiutil.computed_once), instead of waiting for a rank that has left
    report = computed_once(comm, summarise)
    return report if comm.Get_rank() == 0 else None


def format_report(report: dict) -> str:
    """The audit report as the command prints it (its method's audit says how)."""
    return ALGORITHMS[report["algorithm"]].audit().format(report)

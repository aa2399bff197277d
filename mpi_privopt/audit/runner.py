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

from .. import display
from ..methods import ALGORITHMS
from ..mpiutil import agree
from ..config import Config
from ..engine import build_graph, run
from ..errors import ConfigError
from ..privacy.ledger import Ledger
from . import stats
from .canary import canary_direction, counterfactual
from .harness import (MEMBERSHIP_NOISE, MembershipTrials, TrialHarness, WireRecorder,
                      audit_noise, link_residuals, mechanism_of, trial_worlds)
from ..methods.chen2025.audit import (AggregativeTrials, check_aggregative_audit, format_pure_report,
                          summarise_pure)
from ..methods.chan2023.audit import TokenTrials, check_token_audit, token_link
from .verdict import PASS, decide, format_verdict

__all__ = ["TEST_LEVEL", "DEFAULT_CONFIDENCE", "planned_mu", "run_audit", "is_auditable"]

#: p-value below which a noise test flags
TEST_LEVEL = 1e-6
#: confidence of the Clopper-Pearson bounds
DEFAULT_CONFIDENCE = 0.95
#: the share of the ledger's mu the trials must be able to reach (the audit's acceptance criterion)
REACH = 0.5
#: the method audited through its token iterations (:mod:`.token`), not a mechanism
TOKEN = "token-admm"
#: the method audited in pure epsilon through shadow trajectories (:mod:`.aggregative`)
LDP = "ldp-aggregative"


def is_auditable(cfg: Config) -> bool:
    """Whether ``cfg`` is a private run the white-box audit applies to (else its loss is
    unbounded, or the method has no audit yet: :func:`~.canary.counterfactual` says)."""
    method = ALGORITHMS[cfg.algorithm.name]
    return bool(getattr(method, "private", False)) and not getattr(
        cfg.algorithm.params, "noiseless", False)


def planned_mu(schedule, iterations: int) -> float:
    """The GDP mu a link sees from a schedule calibrated per unit sensitivity:
    ``sqrt(sum_n (1 / sigma_n(D = 1))^2)`` over the run's releases."""
    return math.sqrt(sum(schedule.scale(n, 1.0) ** -2 for n in range(1, iterations + 1)))


def _check(cfg: Config, graph, target: int, receiver: int | None, trials: int) -> None:
    n = graph.number_of_nodes()
    if cfg.algorithm.name == TOKEN:
        check_token_audit(cfg)
    elif cfg.algorithm.name == LDP:
        check_aggregative_audit(cfg)
    else:
        counterfactual(cfg.algorithm.name)
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
    token = cfg.algorithm.name == TOKEN
    if receiver is None and not token:
        receiver = min(graph.neighbors(target))
    ldp = cfg.algorithm.name == LDP
    clean_for = None if token or ldp else counterfactual(cfg.algorithm.name)
    seed = cfg.run.seed
    wire: WireRecorder | None = None
    harness: TrialHarness | TokenTrials | AggregativeTrials | None = None
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

    def membership_trials(u=None) -> MembershipTrials:
        return MembershipTrials(trial_worlds(seed, target, trials, 2), u)

    def own_membership(agent_noise, u=None) -> tuple:
        """(the membership trials, their own noise), or nothing without ``membership``:
        the token and aggregative trials keep the audit's stream as it was without them."""
        if not membership:
            return ()
        return membership_trials(u), audit_noise(agent_noise, seed, target, MEMBERSHIP_NOISE)

    def on_setup(agent, algorithm) -> None:
        nonlocal wire, harness, ledger, receiver
        ledger = next(l for l in agent.net.listeners if isinstance(l, Ledger))
        wire = WireRecorder(agent.id)
        is_target = agent.id == target
        worlds = trial_worlds(seed, target, trials, 1)
        if token:
            receiver = agree(comm, lambda: _token_receiver(algorithm, target, receiver))
            _, uses = token_link(algorithm.plans[0], target)
            if is_target:
                u = canary_direction(agent.problem)
                harness = TokenTrials(agent, algorithm, u, worlds,
                                      audit_noise(algorithm.noise[0], seed, target),
                                      *own_membership(algorithm.noise[0], u))
                booked = algorithm.noise[0].effective_sensitivity(
                    algorithm.params.eta * algorithm.delta_radius, algorithm.dim)
                agree(comm, lambda: check_trials(
                    math.sqrt(uses) * booked / algorithm.params.sigma))
                harness.attach()
            else:
                agree(comm, lambda: None)
            return
        if ldp:  # no wire record: see .aggregative
            if is_target:
                # the link's planned pure epsilon: the method's own plan of its releases
                planned = algorithm.planned_events(1, agent.iterations)
                agree(comm, lambda: check_pure_trials(
                    math.fsum(getattr(e, "epsilon", math.inf) for e in planned)))
                harness = AggregativeTrials(agent, algorithm, worlds,
                                            audit_noise(agent.noise, seed, target),
                                            *own_membership(agent.noise))
                harness.attach()
            else:
                agree(comm, lambda: None)
            return
        mechanism = mechanism_of(algorithm)
        wire.attach(agent, mechanism)
        if is_target:
            agree(comm, lambda: check_trials(planned_mu(algorithm.schedule, agent.iterations)))
            u = canary_direction(agent.problem)
            noise = audit_noise(agent.noise, seed, target)
            harness = TrialHarness(agent, algorithm, clean_for, u, worlds, noise)
            if membership:
                harness.membership = membership_trials(u)
            harness.attach(mechanism, noise)
        else:
            agree(comm, lambda: None)

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
    if comm.Get_rank() != 0:
        return None
    if ldp:
        report = summarise_pure(cfg, records, target, receiver, confidence, seconds, trials)
    else:
        report = summarise(cfg, graph, records, target, receiver, all_links, confidence,
                           seconds, trials)
    report["run_dir"] = result.run_dir
    Path(result.run_dir, "audit.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def _token_receiver(algorithm, target: int, receiver: int | None) -> int:
    """The neighbour that observes the target's canary iterations (``--link`` must name it)."""
    observer, _ = token_link(algorithm.plans[0], target)
    if receiver is not None and receiver != observer:
        raise ConfigError(f"agent {target}'s token goes to agent {observer} after its canary "
                          f"iterations, not to {receiver}",
                          f"audit the link {target},{observer} (or leave out --link)")
    return observer


def _noise_tests(checks: dict) -> dict:
    return {"variance": stats.variance_test(checks["sum_squares"], checks["count"]),
            "independence": stats.lag_correlation_test(checks["lag_products"],
                                                       checks["pairs"])}


def _flagged(tests: dict) -> list[str]:
    return [name for name, test in tests.items()
            if test.get("p_value") is not None and test["p_value"] < TEST_LEVEL]


def summarise(cfg: Config, graph, records: list[dict], target: int, receiver: int,
              all_links: bool, confidence: float, seconds: float, trials: int) -> dict:
    """The audit report from every rank's records (rank 0)."""
    by_agent = {r["agent"]: r for r in records}
    me = by_agent[target]
    h = me["harness"]
    delta = cfg.privacy.delta
    ledger = me["ledger"][receiver]
    # a token's releases are booked as zCDP (the amplification transform resolves them);
    # the ones this link saw of the canary's record are Gaussian (k = 0): mu = sqrt(2 rho)
    exact = ledger["gaussian_only"]
    ledger_mu = math.sqrt(ledger["mu2"] if exact else 2.0 * ledger["rho"])
    bound = stats.midpoint_audit(h["statistic"], h["positive"], confidence, delta)
    flags = []
    if bound["mu_lower"] > ledger_mu:
        flags.append(f"mu: lower bound {display.lower_bound(bound['mu_lower'])} > ledger mu "
                     f"{display.loss(ledger_mu)} on link {target}->{receiver}")
    trial_tests = _noise_tests(h["noise"])
    flags += [f"trial-{name}: p = {trial_tests[name]['p_value']:.3g}"
              for name in _flagged(trial_tests)]
    pairs = ([(s, r) for s, r in sorted(graph.to_directed().edges())] if all_links
             else [(target, receiver)])
    wire = {}
    for s, r in pairs:
        checks = link_residuals(by_agent[s]["sent"], by_agent[r]["received"], s).to_dict()
        tests = _noise_tests(checks)
        wire[f"{s}->{r}"] = tests
        flags += [f"wire-{name} on link {s}->{r}: p = {tests[name]['p_value']:.3g}"
                  for name in _flagged(tests)]
    report = {
        "algorithm": cfg.algorithm.name, "agents": graph.number_of_nodes(),
        "link": [target, receiver], "all_links": all_links, "trials": trials,
        "iterations": cfg.run.iterations, "releases": h["releases"],
        "confidence": confidence, "delta": delta, "seed": cfg.run.seed,
        "noise_mode": cfg.privacy.noise,
        "ledger_mu": ledger_mu, "ledger_mu_from_rho": math.sqrt(2.0 * ledger["rho"]),
        "ledger_mu_source": "exact Gaussian composition" if exact else "sqrt(2 rho)",
        "ledger_epsilon": ledger["epsilon"],
        "planned_mu": me["plan"]["planned_mu"], "trials_needed": me["plan"]["needed"],
        "trials_enough": me["plan"]["enough"],
        "booked_mu": h["booked_mu"], "shift_mu": h["shift_mu"],
        "worst_shift_ratio": h["worst_shift_ratio"], "worst_mismatch": h["worst_mismatch"],
        "bound": dict(bound), "gap_ratio": bound["mu_lower"] / ledger_mu,
        "trial_noise": trial_tests, "wire": wire,
        "seconds": seconds, "flags": flags,
    }
    # the bound with every trial classified right: at or below the ledger's mu, the audit
    # could not have failed (INCONCLUSIVE, not PASS)
    report["best_possible_mu"] = stats.audit_bound(0, bound["negatives"], 0, bound["positives"],
                                                   confidence, delta)["mu_lower"]
    report["verdict"] = decide(flags, report["best_possible_mu"], ledger_mu)
    report["passed"] = report["verdict"] == PASS
    if h.get("membership") is not None:
        attack = stats.membership_attack(h["membership"]["score"], h["membership"]["member"],
                                         confidence)
        attack["gdp_bound"] = stats.mi_advantage_bound(ledger_mu)
        attack["eps_delta_bound"] = stats.eps_advantage_bound(ledger["epsilon"], delta)
        attack["exceeds_bound"] = attack["advantage_lower"] > attack["gdp_bound"]
        report["membership"] = attack
    return report


def format_report(report: dict) -> str:
    """The audit report as the command prints it."""
    if "ledger_mu" not in report:  # a pure-epsilon audit (ldp-aggregative)
        return format_pure_report(report)
    b = report["bound"]
    i, j = report["link"]
    lines = [
        f"audit of {report['algorithm']} on link {i}->{j} ({report['agents']} agents, "
        f"{report['releases']} releases, {report['trials']} trials, seed {report['seed']}, "
        f"{report['noise_mode']} noise)",
        # the ledger's losses rounded up, the audit's lower bounds down: both claims hold
        f"  ledger mu           {display.loss(report['ledger_mu']):<6}   (sqrt(2 rho) = "
        f"{display.loss(report['ledger_mu_from_rho'])}; epsilon "
        f"{display.loss(report['ledger_epsilon'])} at "
        f"delta {report['delta']:g})",
        f"  audited mu >=       {display.lower_bound(b['mu_lower']):<6}   "
        f"(gap ratio {report['gap_ratio']:.3f}; "
        f"FPR {b['fpr']:.4f} <= {b['fpr_upper']:.4f}, FNR {b['fnr']:.4f} <= "
        f"{b['fnr_upper']:.4f}, Clopper-Pearson at {b['confidence']:g})",
        f"  epsilon >=          {display.lower_bound(b['eps_lower']):<6}   at delta "
        f"{b['delta']:g} (reported, "
        f"not asserted: far below the ledger's at feasible trial counts)",
        f"  realised shift mu   {report['shift_mu']:.4f}   (largest shift / booked "
        f"sensitivity {report['worst_shift_ratio']:.4f})",
    ]
    t = report["trial_noise"]
    lines.append(f"  trial noise         variance ratio {t['variance']['variance_ratio']:.4f} "
                 f"(p {t['variance']['p_value']:.3g}), lag-1 correlation "
                 f"{t['independence']['correlation']:.4f} (p {t['independence']['p_value']:.3g})")
    for link, tests in report["wire"].items():
        v, ind = tests["variance"], tests["independence"]
        if v["values"]:
            lines.append(f"  wire {link:<14} variance ratio {v['variance_ratio']:.4f} "
                         f"(p {v['p_value']:.3g}), lag-1 correlation "
                         f"{ind['correlation']:.4f} (p {ind['p_value']:.3g})")
    if "membership" in report:
        m = report["membership"]
        lines.append(f"  membership attack   advantage {m['advantage']:.4f} (>= "
                     f"{m['advantage_lower']:.4f}) vs GDP bound 2 Phi(mu/2) - 1 = "
                     f"{m['gdp_bound']:.4f}; (epsilon, delta) bound {m['eps_delta_bound']:.4f}"
                     + ("   ABOVE THE BOUND" if m["exceeds_bound"] else ""))
    if not report["trials_enough"]:
        lines.append(f"  note: --force with fewer trials than the "
                     f"{report['trials_needed']} needed to reach half the ledger's mu")
    lines.append(f"  time                {display.duration(report['seconds'])}")
    lines.append(format_verdict(report["verdict"], report["flags"],
                                report["best_possible_mu"], report["ledger_mu"], "mu",
                                "the bound grows with the number of trials, --trials"))
    return "\n".join(lines)

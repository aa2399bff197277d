"""The audit of ``ldp-aggregative`` (Chen & Wang 2025, Algorithm 1): a canary sample in the
target's history, two shadow trajectories, a pure-epsilon lower bound.

**The canary.** Algorithm 1 averages its empirical f_i^t and g_i^t over *every* sample drawn
so far (eq. 3), and the paper's adjacency (Definition 1) is two sample streams that differ
at one time index k. The canary is the target's sample of time ``k = 0`` (its first record:
it stays in every later average, with weight ``1 / count``): in world ``s = +1, -1`` it is
the sample really drawn plus ``s/2`` times the canary record's change ``(u_xi, u_phi)``
(the l1 size of each component's change is :data:`CANARY_SIZE`; the midpoint world ``s = 0``
is the run itself). A replace-one pair: the two worlds' records differ by the whole change.

**The clean value of each world.** The target's state (**x**_i, y_i, z_i) is private and
clean: a record's influence builds up in it release after release (the recursions (8),
(12), (13) behind eqs. 17, 19, 20). Definition 3 holds the received messages fixed, so the
harness keeps a shadow state per world, driven by the messages the target really received,
and moves it with the method's own :meth:`RobustTracking.update
<mpi_privopt.methods.chen2025.aggregative_parts.RobustTracking.update>` on a copy of the
problem whose history sums carry the canary. The released clean values of the worlds are
the shadows' (y, z, **x**) at each message; the midpoint shadow must equal the state the
method really released (``worst_mismatch``).

**Trials and statistic.** At each message every trial releases its world's three blocks
through a copy of the method's Laplace mechanism (the real ``release``: booked l1
sensitivity ``Delta_v^t``, the derived recursion or, under the nominal accounting, eqs.
17/19/20, and scale ``b_v^t``) with the audit's noise
stream. Per trial the statistic is the Laplace log-likelihood ratio of the two worlds
(:func:`~.stats.laplace_lr`) summed over blocks and messages. The pure-epsilon lower bound
comes from the test "world +1 iff statistic > tau", tau chosen on the first half of the
trials, its false-positive and false-negative counts on the second half
(:func:`~.stats.pure_split_audit`).

**Membership.** The add/remove game of :class:`~.harness.MembershipTrials`: world "in" is the
``s = +1`` shadow (the canary sample), "out" the midpoint (the run); each trial releases its
world's blocks through another copy of the Laplace mechanism with a noise stream of its own,
and the observer's score is the Laplace log-likelihood ratio of "in" against "out" summed
over blocks and messages. Its advantage bound is the pure-DP one at the link's epsilon,
``(e^eps - 1)/(e^eps + 1)`` (:func:`~.stats.eps_advantage_bound` at delta = 0).

Two problems are audited, each with the canary its sample history can hold:

* ``aggregative-quadratic``: its history is two running sums, so a canary world is the
  run's problem with ``s/2`` of the change added to the sums (above);
* ``personalised`` (the digits task, ``ldp-aggregative-digits``): its samples are records
  of the agent's finite local set, kept as count weights over the distinct points drawn
  (:class:`~mpi_privopt.problems.aggregative.sample_history.SampleHistory`). A record has
  no midpoint, so the replace-one pair is the run's own first sample (worlds ``s = -1``
  and ``s = 0``: the run) against a canary record in its place (world ``s = +1``): the
  same image with every pixel inverted (``1 - a``, still in [0, 1], the record domain)
  and the next label. World +1's history is the run's with that one record replaced
  (:class:`RecordCanary`).
"""
from __future__ import annotations

import copy
import math

import numpy as np

from ... import display
from .aggregative_parts import RobustTracking
from ...errors import ConfigError
from .ldp_budget import BLOCKS
from ...audit import stats
from ...audit.harness import MembershipTrials, audit_noise, trial_copy
from ...audit.method_audit import AuditRun, MethodAudit
from ...audit.shift import shift_ratio
from ...audit.verdict import PASS, decide, format_verdict

__all__ = ["CANARY_SIZE", "CANARY_TIME", "AggregativeAudit", "AggregativeTrials",
           "check_aggregative_audit",
           "canary_change", "summarise_pure", "format_pure_report"]

#: the method audited here
METHOD = "ldp-aggregative"
#: the problems whose history the canary can be written into (module docstring)
PROBLEMS = ("aggregative-quadratic", "personalised")
PROBLEM = PROBLEMS[0]
#: the time index of the canary sample (Definition 1's k): the first, so it stays in every
#: later history average
CANARY_TIME = 0
#: the l1 size of the change of each sample component (xi and phi) between the two worlds
CANARY_SIZE = 1.0
#: worlds of the shadow states: minus, midpoint (the run), plus
WORLDS = (-1.0, 0.0, 1.0)
#: a realised shift above the booked sensitivity by more than this (relative) is flagged
SHIFT_TOLERANCE = 1e-9


def check_aggregative_audit(cfg) -> None:
    """Refuse an ldp-aggregative run the audit cannot read (one message)."""
    if cfg.problem.name not in PROBLEMS:
        raise ConfigError(f"the audit of {METHOD} writes its canary into the sample history "
                          f"of {' or '.join(map(repr, PROBLEMS))}, not {cfg.problem.name!r}",
                          f'set [problem] name = "{PROBLEM}" (e.g. the packaged experiment '
                          "ldp-aggregative-quadratic, or ldp-aggregative-digits)")
    params = cfg.algorithm.params
    sigmas = [getattr(params, f"sigma_{b}") for b in BLOCKS]
    flat = [float(v) for s in sigmas if s is not None
            for v in (s if isinstance(s, (list, tuple)) else [s])]
    if any(v == 0.0 for v in flat):
        raise ConfigError(f"{METHOD} with sigma = 0 on a block sends it in the clear: its loss "
                          "is unbounded, nothing to audit",
                          "set algorithm.sigma_x, sigma_y and sigma_z > 0")


def canary_change(problem) -> tuple[np.ndarray, np.ndarray]:
    """(u_xi, u_phi): the change of the canary record between the two worlds, each of l1
    size :data:`CANARY_SIZE` along the first coordinate (the shift then sits in few
    coordinates of each block, where a Laplace test sees it best)."""
    u_xi = np.zeros(problem.aggregate_size)
    u_phi = np.zeros(problem.block_size)
    u_xi[0] = u_phi[0] = CANARY_SIZE
    return u_xi, u_phi


def _with_canary(problem, sign: float, change: tuple[np.ndarray, np.ndarray]):
    """The problem of world ``sign``: its history sums carry ``sign/2`` of the change."""
    world = copy.copy(problem)
    world.sum_xi = problem.sum_xi + 0.5 * sign * change[0]
    world.sum_phi = problem.sum_phi + 0.5 * sign * change[1]
    return world


class _CanaryHistory:
    """A :class:`~mpi_privopt.problems.aggregative.sample_history.SampleHistory` with one
    drawn record replaced: the record of ``point`` counts once less, ``record`` once (a
    row of its own, last); the rest is the history's, read as it is now."""

    def __init__(self, history, point: int, record: tuple[np.ndarray, ...]) -> None:
        self._history, self._point, self._record = history, point, record

    @property
    def version(self):
        return ("canary", self._history.version)

    @property
    def rows(self) -> tuple[np.ndarray, ...]:
        return tuple(np.concatenate([rows, one[None]])
                     for rows, one in zip(self._history.rows, self._record))

    @property
    def weights(self) -> np.ndarray:
        history = self._history
        counts = history.counts[history.points].astype(float)
        counts[history.points == self._point] -= 1.0
        return np.append(counts, 1.0) / float(history.total)


class RecordCanary:
    """The canary of a problem whose samples are records of a finite local set (the
    personalised task, module docstring): the target's first sample (time 0) replaced in
    world +1 by the same image inverted (``1 - a``) with the next label."""

    def __init__(self) -> None:
        self.point: int | None = None
        self.record: tuple[np.ndarray, np.ndarray] | None = None

    def world(self, problem, sign: float):
        """The problem of world ``sign`` (> 0: the canary in place of the first sample)."""
        if sign <= 0:
            return problem  # the run's own records
        history = problem.history
        if self.point is None:  # the first sample drawn: first in first-seen order
            self.point = int(history.points[0])
            image, label = (rows[0] for rows in history.rows)
            self.record = (1.0 - image, (label + 1) % problem.data.classes)
        world = copy.copy(problem)
        world.history = _CanaryHistory(history, self.point, self.record)
        world._history_losses = type(problem._history_losses)()  # its own cache
        return world

    def describe(self) -> dict:
        return {"time": CANARY_TIME, "point": self.point,
                "record": "the first sample's image inverted (1 - a), its label + 1"}


class AggregativeTrials:
    """The white-box trials of an ldp-aggregative target (module docstring).

    Parameters
    ----------
    agent, algorithm
        The target and its method (from the engine's ``on_setup``).
    positive : numpy.ndarray of bool
        The world of each trial (True: ``s = +1``).
    noise
        The trials' noise source (:func:`~.harness.audit_noise`).
    membership : MembershipTrials, optional
        The membership attack's trials (worlds "in" and "out").
    membership_noise
        The membership trials' noise source (required with ``membership``).
    """

    def __init__(self, agent, algorithm, positive: np.ndarray, noise,
                 membership: MembershipTrials | None = None, membership_noise=None) -> None:
        self.agent, self.algorithm, self.positive = agent, algorithm, positive
        self.membership = membership
        if membership is not None:
            self._membership_mechanism = trial_copy(algorithm.core.mechanism, membership_noise)
        self.core = algorithm.core
        self.change = canary_change(agent.problem)
        #: the personalised task's canary (a record in place of the first sample)
        self.record = RecordCanary() if hasattr(agent.problem, "history") else None
        self.statistic = np.zeros(positive.size)
        self._mechanism = copy.copy(self.core.mechanism)
        self._mechanism.noise = noise
        self._shadows = {s: (self.core.X.copy(), self.core.y.copy(), self.core.z.copy())
                         for s in WORLDS}
        self._t = 0  # updates done
        self.booked_epsilon = 0.0
        self.shift_epsilon = 0.0
        #: the largest ||c+_v - c-_v||_1 / Delta_v^t over blocks and messages
        self.worst_shift_ratio = 0.0
        #: (t, block, ratio) per message and block with a booked sensitivity
        self.shift_ratios: list[tuple[int, str, float]] = []
        self.worst_mismatch = 0.0
        self.releases = 0

    def attach(self) -> None:
        """Wrap the target's ``core.update`` (shadows follow) and ``core.send`` (trials)."""
        core = self.core
        update, send = core.update, core.send

        def wrapped_update(lam, beta=1.0):
            update(lam, beta)
            self.on_update(lam, beta)

        def wrapped_send(t, budgets, clear):
            send(t, budgets, clear)
            self.on_send(t, budgets)

        core.update, core.send = wrapped_update, wrapped_send

    def on_update(self, lam, beta: float) -> None:
        """Move each world's shadow by the method's own update, with the same messages."""
        core = self.core
        for s in WORLDS:
            shadow = copy.copy(core)
            shadow._tracker_listeners = []  # the diagnostics hook is the run's
            sign = s if self._t >= CANARY_TIME else 0.0
            shadow.problem = (self.record.world(core.problem, sign) if self.record else
                              _with_canary(core.problem, sign, self.change))
            shadow.X, shadow.y, shadow.z = self._shadows[s]
            RobustTracking.update(shadow, lam, beta)
            self._shadows[s] = (shadow.X, shadow.y, shadow.z)
        self._t += 1

    def _blocks(self, s: float) -> dict[str, np.ndarray]:
        X, y, z = self._shadows[s]
        return {"y": y, "z": z, "x": X}

    def on_send(self, t: int, budgets: dict) -> None:
        """The trials of the message of time ``t``: every block, every trial at once."""
        real = {"y": self.core.y, "z": self.core.z, "x": self.core.X}
        mid, plus, minus = self._blocks(0.0), self._blocks(1.0), self._blocks(-1.0)
        for block in BLOCKS:
            self.worst_mismatch = max(self.worst_mismatch, float(np.max(
                np.abs(mid[block] - real[block]), initial=0.0)))
            shift = plus[block] - minus[block]
            values = np.where(self.positive[:, None], plus[block], minus[block])
            budget = budgets[block]
            trial = self._mechanism.release(values, budget.sensitivity(t), budget.scale(t))
            event = trial.event
            centre = 0.5 * (plus[block] + minus[block])
            self.statistic += stats.laplace_lr(trial.payload - centre, shift, event.scale)
            l1 = float(np.abs(shift).sum())
            self.booked_epsilon += event.sensitivity / event.scale
            self.shift_epsilon += l1 / event.scale
            # the one formula of every audit (inf: a shift where nothing was booked)
            ratio = shift_ratio(plus[block], minus[block], event.sensitivity, order=1)
            if event.sensitivity > 0 or ratio > 0:
                self.shift_ratios.append((int(t), block, ratio))
                self.worst_shift_ratio = max(self.worst_shift_ratio, ratio)
            if self.membership is not None:
                self._membership_release(t, budget, mid[block], plus[block])
        self.releases += 1

    def _membership_release(self, t: int, budget, out: np.ndarray,
                            inside: np.ndarray) -> None:
        """One block of the membership trials: "in" releases ``inside``, "out" ``out``."""
        m = self.membership
        trial = self._membership_mechanism.release(m.worlds(out, inside),
                                                   budget.sensitivity(t), budget.scale(t))
        m.add(stats.laplace_lr(trial.payload - 0.5 * (inside + out), inside - out,
                               trial.event.scale))

    def to_dict(self) -> dict:
        ratios = {b: max((r for _, v, r in self.shift_ratios if v == b), default=0.0)
                  for b in BLOCKS}
        return {"statistic": self.statistic, "positive": self.positive,
                "booked_epsilon": self.booked_epsilon, "shift_epsilon": self.shift_epsilon,
                "worst_shift_ratio": self.worst_shift_ratio, "block_shift_ratio": ratios,
                "worst_mismatch": self.worst_mismatch, "releases": self.releases,
                "canary": (self.record.describe() if self.record else
                           {"time": CANARY_TIME, "size_l1": CANARY_SIZE,
                            "change_xi": self.change[0].tolist(),
                            "change_phi": self.change[1].tolist()}),
                "membership": (self.membership.to_dict() if self.membership is not None
                               else None),
                # the nominal accounting's label, shown beside the ledger's epsilon
                "epsilon_label": self.algorithm.epsilon_label}


def summarise_pure(cfg, records: list[dict], target: int, receiver: int, confidence: float,
                   seconds: float, trials: int) -> dict:
    """The report of a pure-epsilon audit (rank 0)."""
    me = next(r for r in records if r["agent"] == target)
    h = me["harness"]
    ledger_eps = me["ledger"][receiver]["pure_epsilon"]
    bound = stats.pure_split_audit(h["statistic"], h["positive"], confidence)
    flags = []
    if bound["eps_lower"] > ledger_eps:
        flags.append(f"epsilon: lower bound {display.lower_bound(bound['eps_lower'])} > "
                     f"ledger epsilon {display.loss(ledger_eps)} on link {target}->{receiver}"
                     + (f" ({h['epsilon_label']})" if h.get("epsilon_label") else ""))
    if h["worst_shift_ratio"] > 1.0 + SHIFT_TOLERANCE:
        worst = max(h["block_shift_ratio"], key=h["block_shift_ratio"].get)
        flags.append(f"sensitivity: the canary moves block {worst} by "
                     f"{h['worst_shift_ratio']:.4g} times its booked l1 sensitivity")
    report = {
        "algorithm": cfg.algorithm.name, "agents": len(records), "link": [target, receiver],
        "trials": trials, "iterations": cfg.run.iterations, "releases": h["releases"],
        "confidence": confidence, "seed": cfg.run.seed, "noise_mode": cfg.privacy.noise,
        "guarantee": "pure epsilon (delta = 0)",
        "ledger_epsilon": ledger_eps, "booked_epsilon": h["booked_epsilon"],
        "shift_epsilon": h["shift_epsilon"], "bound": dict(bound),
        "gap_ratio": bound["eps_lower"] / ledger_eps if ledger_eps > 0 else math.inf,
        "worst_shift_ratio": h["worst_shift_ratio"],
        "block_shift_ratio": h["block_shift_ratio"], "worst_mismatch": h["worst_mismatch"],
        "canary": h["canary"], "seconds": seconds, "flags": flags,
        "planned_epsilon": me["plan"]["planned_epsilon"], "trials_needed": me["plan"]["needed"],
        "trials_enough": me["plan"]["enough"],
        **({"epsilon_label": h["epsilon_label"]} if h.get("epsilon_label") else {}),
    }
    # the bound with no error on the held-out trials: at or below the ledger's epsilon, the
    # audit could not have failed on it (INCONCLUSIVE, unless the white-box check flags)
    report["best_possible_epsilon"] = stats.audit_bound(
        0, bound["negatives"], 0, bound["positives"], confidence, 0.0)["eps_lower"]
    report["verdict"] = decide(flags, report["best_possible_epsilon"], ledger_eps)
    report["passed"] = report["verdict"] == PASS
    if h.get("membership") is not None:
        m = h["membership"]
        attack = stats.membership_attack(stats.round_pure_scores(m["score"]), m["member"],
                                         confidence)
        attack["pure_bound"] = stats.eps_advantage_bound(ledger_eps, 0.0)
        attack["exceeds_bound"] = attack["advantage_lower"] > attack["pure_bound"]
        report["membership"] = attack
    return report


def format_pure_report(report: dict) -> str:
    """The pure-epsilon audit report as the command prints it."""
    b = report["bound"]
    i, j = report["link"]
    ratios = ", ".join(f"{k} {v:.4g}" for k, v in report["block_shift_ratio"].items())
    label = f"; {report['epsilon_label']}" if report.get("epsilon_label") else ""
    lines = [
        f"audit of {report['algorithm']} on link {i}->{j} ({report['agents']} agents, "
        f"{report['releases']} messages, {report['trials']} trials, seed {report['seed']}, "
        f"{report['noise_mode']} noise)",
        # the ledger's losses rounded up, the audit's lower bound down: both claims hold
        f"  ledger epsilon      {display.loss(report['ledger_epsilon']):<6}   (pure, delta = 0; "
        f"the trials booked {display.loss(report['booked_epsilon'])}{label})",
        f"  audited epsilon >=  {display.lower_bound(b['eps_lower']):<6}   "
        f"(gap ratio {report['gap_ratio']:.3f}; "
        f"threshold {b['threshold']:.4g}, FPR {b['fpr']:.4f} <= {b['fpr_upper']:.4f}, FNR "
        f"{b['fnr']:.4f} <= {b['fnr_upper']:.4f} on {b['negatives'] + b['positives']} held-out "
        f"trials, Clopper-Pearson at {b['confidence']:g})",
        f"  realised shift eps  {report['shift_epsilon']:.4f}   (largest l1 shift / booked "
        f"sensitivity {report['worst_shift_ratio']:.4f}; per block {ratios})",
    ]
    if "membership" in report:
        m = report["membership"]
        lines.append(f"  membership attack   advantage {m['advantage']:.4f} (>= "
                     f"{m['advantage_lower']:.4f}) vs pure-DP bound (e^eps - 1)/(e^eps + 1) "
                     f"= {m['pure_bound']:.4f}" + ("   ABOVE THE BOUND" if m["exceeds_bound"]
                                                   else ""))
    if not report["trials_enough"]:
        needed = report["trials_needed"]
        lines.append("  note: --force with fewer trials than " + (
            f"the {needed} a test that never errs needs" if needed is not None else
            "any audit can run") + " to reach half the ledger's epsilon")
    lines += [
        f"  time                {display.duration(report['seconds'])}",
        format_verdict(report["verdict"], report["flags"], report["best_possible_epsilon"],
                       report["ledger_epsilon"], "epsilon",
                       "the bound grows with the number of trials, --trials",
                       report.get("epsilon_label")),
    ]
    return "\n".join(lines)


class AggregativeAudit(MethodAudit):
    """ldp-aggregative's pure-epsilon audit (module docstring): ``LDPAggregative.audit()``
    returns one. No wire record: the trials replay the method's own update."""

    def check(self, cfg) -> None:
        check_aggregative_audit(cfg)

    def attach(self, run: AuditRun, agent, algorithm):
        if agent.id != run.target:
            run.agree(lambda: None)
            return None
        # the link's planned pure epsilon: the method's own plan of its releases
        planned = algorithm.planned_events(1, agent.iterations)
        run.agree(lambda: run.check_pure_trials(
            math.fsum(getattr(e, "epsilon", math.inf) for e in planned)))
        harness = AggregativeTrials(agent, algorithm, run.worlds(1),
                                    audit_noise(agent.noise, run.seed, run.target),
                                    *run.own_membership(agent.noise))
        harness.attach()
        return harness

    def summarise(self, cfg, graph, records: list[dict], target: int, receiver: int,
                  all_links: bool, confidence: float, seconds: float, trials: int) -> dict:
        return summarise_pure(cfg, records, target, receiver, confidence, seconds, trials)

    def format(self, report: dict) -> str:
        return format_pure_report(report)

r"""LDP distributed stochastic aggregative optimisation (Chen & Wang 2025, Algorithm 1).

Agent i holds the stacked estimate **x**_i of every agent's block (length n = sum_j n_j;
its own block is x_i = R_i **x**_i), the aggregate tracker y_i and the y-gradient tracker
z_i (length r each). With A = I + W (a_ii = 1 - |w_ii|, a_ij = w_ij on the links), for
t = 0, 1, ..., T-1 (engine iteration n = t + 1)::

    line 3    draw new samples; f_i^t and g_i^t average over the whole history
    line 4    y_i^{t+1} = y_i^t + sum_{j in N_i} w_ij (y_j^t + chi_j^t - y_i^t) + lam_y^t g_i^t(x_i^t)
              ytilde_i^t = (y_i^{t+1} - y_i^t) / lam_y^t                    (estimate of g(x^t))
    lines 5-6 z_i^{t+1} = z_i^t + sum_j w_ij (z_j^t + zeta_j^t - z_i^t) + lam_z^t grad_y f_i^t(x_i^t, ytilde_i^t)
              ztilde_i^t = (z_i^{t+1} - z_i^t) / lam_z^t     (estimate of (1/m) sum_j grad_y f_j)
    lines 7-9 **x**_i^{t+1} = P_Omega[ **x**_i^t + sum_j w_ij (**x**_j^t + theta_j^t - **x**_i^t)
                              - lam_x^t R_i^T ( grad_x f_i^t(x_i^t, ytilde_i^t)
                                                + grad g_i^t(x_i^t) ztilde_i^t ) ]
    line 10   phase "yzx": broadcast [y_i^{t+1} + chi_i^{t+1}, z_i^{t+1} + zeta_i^{t+1},
              **x**_i^{t+1} + theta_i^{t+1}] (one buffer of 2r + n floats) to every neighbour

with lam_v^t = lam_v^0 (t+1)^-v_v and Laplace noises of scale
``b = sig_{i,v} (t+1)^-vs_{i,v} / sqrt(2)`` per coordinate (standard deviation
sig_{i,v} (t+1)^-vs_{i,v}), drawn once per sender and message, so every neighbour receives
the same message. The t = 0 message (line 1: y_i^0 = z_i^0 = 0, **x**_i^0 with every block j
at the public seeded x_j^0, docs/methods/chen2025.md, "Initialisation") is sent at the start
of iteration 1: a run of
T iterations sends T + 1 messages on every link, releases t = 0..T. The receiver combines
its own clean state with the neighbours' noisy messages. Omega is the box
[-box, box]^n (``box = inf``: no projection).

Privacy: pure epsilon local DP (:mod:`mpi_privopt.methods.chen2025.ldp_budget`): each message is
one packed Laplace event booked once per sender, 0 for the t = 0 message; the ledger then
holds eq. (21) on every link. Its sensitivities are, under ``privacy.accounting``:
``derived`` (the default; :mod:`~mpi_privopt.methods.chen2025.derived`) the proof's
recursion per agent and t with the problem's record bounds, the finite box and ztilde
clipped to ``clip_z`` at the x-update (ytilde to the aggregate's range where the problem
declares one); ``nominal`` those of eqs. (17), (19), (20) times the constants
``sensitivity_x|y|z`` (1: docs/methods/chen2025.md, "Nominal accounting"), on the paper's
algorithm without clips. With
sig = 0 on a block (the noise-off ablation: all three) the messages are sent in the clear
and the loss is unbounded. The summary's headline is the pure epsilon (delta = 0). The
schedule is public: ``planned_events`` gives the events of any iterations ahead, so a
resume that would exceed ``privacy.epsilon`` is refused before any release.

The state and the two moves (lines 3-9, line 10) are the shared
:class:`~mpi_privopt.methods.chen2025.aggregative_parts.RobustTracking`, which PDOP and [51]
run with their own schedules (:mod:`~mpi_privopt.methods.chen2025.aggregative_frameworks`).

Checks: Assumption 3 on A (doubly stochastic, ||A - 11^T/m|| < 1) and Assumption 4 for
every agent are refused with the value found; Theorem 1's conditions for the configured
case (``theory_case``) that fail give one warning, and the run goes on.
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from ...errors import ConfigError
from .ldp_budget import (BLOCKS, BlockBudget, accounting_fields, check_assumption4,
                         report_epsilon_label, sensitivity_exponents)
from .aggregative_parts import RobustTracking, planned_framework_events, step_sizes
from .derived import (DERIVED, DerivedBlock, DerivedSensitivities, accounting_of,
                      check_derived, enforce_bounds)
from ..contract import Algorithm

#: named settings of the schedules (docs/methods/chen2025.md, "Theorem 1 and Corollary 1")
PRESETS = ("", "chen2025", "corollary1-i", "corollary1-ii", "corollary1-exact")
#: the cases of Theorem 1 whose conditions are checked
THEORY_CASES = ("strongly-convex", "convex", "nonconvex")
#: the paper's step exponents (Section VI)
PAPER_STEPS = {"x": 0.55, "y": 0.02, "z": 0.03}
#: the paper's noise standard deviation at t = 0
PAPER_SIGMA = 0.01


@dataclasses.dataclass
class LDPAggregativeParams:
    """The ``[algorithm]`` keys of ``ldp-aggregative`` (see docs/algorithms/ldp-aggregative.md).

    A per-agent key (``sigma_*``, ``vs_*``, ``sensitivity_*``) is one number for every
    agent or a list with one number per agent. Unset exponents come from ``preset``.
    """

    preset: str = ""
    delta: float = 0.01
    lam_x0: float = 1.0
    lam_y0: float = 1.0
    lam_z0: float = 1.0
    v_x: float | None = None
    v_y: float | None = None
    v_z: float | None = None
    sigma_x: float | list | None = None
    sigma_y: float | list | None = None
    sigma_z: float | list | None = None
    vs_x: float | list | None = None
    vs_y: float | list | None = None
    vs_z: float | list | None = None
    sensitivity_x: float | list = 1.0
    sensitivity_y: float | list = 1.0
    sensitivity_z: float | list = 1.0
    box: float = 1e6
    clip_z: float = 1.0
    constant_weight: float = 0.0
    samples: int = 1
    theory_case: str = "strongly-convex"


@dataclasses.dataclass(frozen=True)
class Schedules:
    """The resolved schedules of a run: step exponents and per-agent noise (K x 3 by BLOCKS)."""

    lam0: dict[str, float]
    v: dict[str, float]
    sigma: np.ndarray
    vs: np.ndarray
    constants: np.ndarray

    def block_budgets(self, agent: int) -> dict[str, BlockBudget]:
        """Agent ``agent``'s blocks (only those with noise) for eq. (21)."""
        exponents = sensitivity_exponents(self.v["x"], self.v["y"], self.v["z"])
        return {v: BlockBudget(float(self.constants[agent, b]), exponents[v],
                               float(self.sigma[agent, b]), float(self.vs[agent, b]))
                for b, v in enumerate(BLOCKS) if self.sigma[agent, b] > 0}


def _preset_values(preset: str, delta: float, n_agents: int) -> dict[str, object]:
    """What ``preset`` sets: step exponents, and noise decays (per agent for chen2025)."""
    i = np.arange(1, n_agents + 1)
    if preset == "chen2025":  # Section VI: 0.01 (t+1)^(-0.505 + 0.001 i), i = 1..m
        return {"v": dict(PAPER_STEPS), "vs": {"x": 0.505 - 0.001 * i, "y": 0.005 - 0.001 * i,
                                               "z": 0.015 - 0.001 * i}}
    if preset == "corollary1-i":  # strongly convex
        return {"v": {"x": 0.5 + 7 * delta, "y": 2 * delta, "z": 3 * delta},
                "vs": {"x": 0.5 + 3 * delta, "y": delta, "z": 2 * delta}}
    if preset == "corollary1-ii":  # convex and nonconvex
        return {"v": {"x": 0.5 + 5 * delta, "y": 2 * delta, "z": 3 * delta},
                "vs": {"x": 0.5 + delta, "y": delta, "z": 2 * delta}}
    if preset == "corollary1-exact":  # the paper's steps, Corollary 1 noise
        return {"v": dict(PAPER_STEPS), "vs": {"x": 0.51, "y": 0.01, "z": 0.02}}
    return {"v": dict(PAPER_STEPS), "vs": {"x": 0.505, "y": 0.005, "z": 0.015}}


def _per_agent(params, key: str, default, n_agents: int) -> np.ndarray:
    value = getattr(params, key)
    if value is None:
        value = default
    values = np.asarray(value, dtype=float)
    if values.ndim == 0:
        return np.full(n_agents, float(values))
    if values.shape != (n_agents,):
        raise ConfigError(f"algorithm.{key} has {values.size} values for {n_agents} agents",
                          f"give one number for every agent, or a list of {n_agents}")
    return values


def resolve_schedules(params: LDPAggregativeParams, n_agents: int) -> Schedules:
    """Steps and per-agent noise of a run: explicit keys, else the preset, else the paper."""
    preset = _preset_values(params.preset, params.delta, n_agents)
    v = {b: getattr(params, f"v_{b}") if getattr(params, f"v_{b}") is not None
         else preset["v"][b] for b in ("x", "y", "z")}
    lam0 = {b: getattr(params, f"lam_{b}0") for b in ("x", "y", "z")}
    sigma = np.column_stack([_per_agent(params, f"sigma_{b}", PAPER_SIGMA, n_agents)
                             for b in BLOCKS])
    vs = np.column_stack([_per_agent(params, f"vs_{b}", preset["vs"][b], n_agents)
                          for b in BLOCKS])
    constants = np.column_stack([_per_agent(params, f"sensitivity_{b}", 1.0, n_agents)
                                 for b in BLOCKS])
    for name, values in (("sigma", sigma), ("sensitivity", constants)):
        bad = np.argwhere(~(np.isfinite(values) & (values >= 0)))
        if bad.size:
            agent, b = bad[0]
            raise ConfigError(f"algorithm.{name}_{BLOCKS[b]} = {values[agent, b]} for agent "
                              f"{agent} must be a finite number >= 0", "give values >= 0")
    return Schedules(lam0, v, sigma, vs, constants)


def tracker_noise(params, n_agents: int) -> dict[str, tuple[np.ndarray, ...]]:
    """Algorithm 1's y and z noise for a baseline that shares only its trackers
    (docs/methods/chen2025.md, "Baselines' noise and data"): block -> (sigma, vs, sensitivity
    constant), one value per agent, from the
    baseline's ``preset``, ``delta``, ``sigma_*``, ``vs_*`` and ``sensitivity_*`` keys."""
    keys = {key: getattr(params, key) for key in
            ("preset", "delta", "sigma_y", "sigma_z", "vs_y", "vs_z",
             "sensitivity_y", "sensitivity_z")}
    schedules = resolve_schedules(LDPAggregativeParams(**keys), n_agents)
    return {block: (schedules.sigma[:, b], schedules.vs[:, b], schedules.constants[:, b])
            for b, block in enumerate(BLOCKS) if block in ("y", "z")}


def per_agent_values(values: list[float]) -> list[float] | float:
    """One value per agent, or the value itself when every agent has the same."""
    return values[0] if all(v == values[0] for v in values) else values


def theorem1_failures(case: str, v: dict[str, float], vs: np.ndarray,
                      projected: bool) -> list[str]:
    """Theorem 1's conditions for ``case`` that fail, with the worst-case vs = min_i vs_i
    (docs/methods/chen2025.md, "Theorem 1 and Corollary 1"); each entry names the inequality
    (and its bound's value)."""
    vs_min = {b: float(np.min(vs[:, i])) for i, b in enumerate(BLOCKS)}
    vx, vy, vz = v["x"], v["y"], v["z"]
    sx, sy, sz = vs_min["x"], vs_min["y"], vs_min["z"]
    conditions = [("1 > v_x > v_z", 1 > vx > vz), ("1/2 > v_z > v_y > 0", 0.5 > vz > vy > 0)]
    if case == "strongly-convex":
        conditions += [
            (f"vs_x > max(v_y - vs_y, v_z - vs_z, v_x/2) = {max(vy - sy, vz - sz, vx / 2):g}",
             sx > max(vy - sy, vz - sz, vx / 2)),
            (f"vs_y > v_y - 1/2 = {vy - 0.5:g}", sy > vy - 0.5),
            (f"vs_z > v_z - 1/2 = {vz - 0.5:g}", sz > vz - 0.5)]
    else:
        conditions += [
            ("vs_x > 1/2", sx > 0.5),
            (f"vs_y > v_y - 1/2 + (1 - v_x) = {vy - 0.5 + 1 - vx:g}", sy > vy - 0.5 + 1 - vx),
            (f"vs_z > v_z - 1/2 + (1 - v_x) = {vz - 0.5 + 1 - vx:g}", sz > vz - 0.5 + 1 - vx)]
        if case == "nonconvex":
            conditions.append(("Omega = R^n (no projection: algorithm.box = inf)", not projected))
    return [text for text, holds in conditions if not holds]


def _check_params(name: str, params: LDPAggregativeParams) -> None:
    if params.preset not in PRESETS:
        raise ConfigError(f"algorithm.preset = {params.preset!r} is unknown for {name!r}",
                          f"valid: {', '.join(repr(p) for p in PRESETS)}")
    if params.theory_case not in THEORY_CASES:
        raise ConfigError(f"algorithm.theory_case = {params.theory_case!r} is unknown",
                          f"valid: {', '.join(THEORY_CASES)}")
    if params.constant_weight < 0:
        raise ConfigError(f"algorithm.constant_weight = {params.constant_weight} must be >= 0",
                          "0 uses Metropolis weights; the paper's ring uses 0.3")




class LDPAggregative(Algorithm):
    __doc__ = __doc__

    name = "ldp-aggregative"
    summary = "LDP stochastic aggregative optimisation, robust tracking (Chen & Wang 2025)"
    private = True
    problem_kind = "aggregative"
    #: the summary's headline is pure epsilon (delta = 0), from privacy.json's pure matrix
    pure_headline = True
    epsilon_label = property(report_epsilon_label)  # nominal: not a guarantee
    Params = LDPAggregativeParams
    positive = ("lam_x0", "lam_y0", "lam_z0", "box", "clip_z", "samples", "delta")
    choices = {}
    param_checks = (_check_params,)
    config_checks = (check_derived,)
    planned_events = planned_framework_events
    blocks = BLOCKS

    @classmethod
    def block_budgets(cls, params, agent: int, n_agents: int) -> dict:
        return resolve_schedules(params, n_agents).block_budgets(agent)

    @classmethod
    def released_after(cls, n: int) -> int:
        return n + 1  # t = 0..n: the t = n message goes out at the end

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        K, me = agent.n_agents, agent.id
        self.problem = agent.problem
        self.schedules = resolve_schedules(params, K)
        for k in range(K):  # public schedules: every agent refuses the same one
            check_assumption4(k, self.schedules.v,
                              dict(zip(BLOCKS, self.schedules.vs[k])),
                              dict(zip(BLOCKS, self.schedules.sigma[k])))
        self.core = RobustTracking(agent, params.constant_weight, params.box, self.name)
        if me == 0:
            failures = theorem1_failures(params.theory_case, self.schedules.v,
                                         self.schedules.vs, math.isfinite(params.box))
            if failures:
                v, vs = self.schedules.v, self.schedules.vs.min(axis=0)
                warnings.warn(
                    f"ldp-aggregative: Theorem 1 ({params.theory_case} case) does not "
                    f"guarantee convergence: {'; '.join(failures)} (with v = ({v['x']:g}, "
                    f"{v['y']:g}, {v['z']:g}) and min_i vs = ({vs[2]:g}, {vs[0]:g}, "
                    f"{vs[1]:g}) for x, y, z); the run goes on", stacklevel=2)
        #: "derived" (proven bounds, the default) or "nominal" (the paper's constants)
        self.accounting = accounting_of(agent)
        #: every sigma's factor, calibrated to a finite privacy.epsilon (derived only)
        self.sigma_multiplier = 1.0
        if self.accounting == "derived":
            self.budgets = self._derived_budgets(agent, params)
        else:
            self.budgets = self.schedules.block_budgets(me)
        #: blocks sent in the clear (sig = 0): the message is then non-private
        self.clear = [b for i, b in enumerate(BLOCKS) if self.schedules.sigma[me, i] == 0]

    def _derived_budgets(self, agent, params) -> dict:
        """The derived accounting (docs/methods/chen2025.md, "Derived accounting"): the
        problem's record bounds on the box, the ztilde (and ytilde) clip enforced on the
        update, and Delta_v^t from the proof's recursion for this agent."""
        core, me = self.core, agent.id
        constants, self.record_domain = enforce_bounds(core, self.problem, params, me,
                                                       self.name)
        source = DerivedSensitivities(constants, self.schedules.lam0, self.schedules.v,
                                      agent.iterations + 2)
        budgets = {v: DerivedBlock(source, v, float(self.schedules.sigma[me, b]),
                                   float(self.schedules.vs[me, b]))
                   for b, v in enumerate(BLOCKS) if self.schedules.sigma[me, b] > 0}
        budget = math.inf if agent.privacy is None else agent.privacy.epsilon
        if math.isfinite(budget) and len(budgets) == len(BLOCKS):
            budgets = self._calibrated(budgets, budget, agent.iterations)
        return budgets

    def _calibrated(self, budgets: dict, budget: float, T: int) -> dict:
        """Every sigma times the multiplier k that makes this agent's derived epsilon after
        the releases t = 0..T equal ``privacy.epsilon`` (eq. (21) is linear in 1/sigma, so
        k = eps(T) / budget), less a 1e-9 margin for the ledger's own rounding
        (docs/methods/chen2025.md, "Derived accounting": calibration)."""
        spent = sum(b.partial_sum(T) for b in budgets.values())
        if not math.isfinite(spent):
            raise ConfigError(
                f"privacy.epsilon = {budget:g}: agent {self.agent.id}'s derived sensitivity "
                f"bound overflows within T = {T} releases, so no noise multiplier meets it",
                "run fewer iterations, use smaller steps (lam_x0, lam_y0, lam_z0), or set "
                "privacy.epsilon = inf")
        self.sigma_multiplier = spent / (budget * (1.0 - 1e-9))
        self.setup_note = (f"privacy.epsilon = {budget:g}: the derived accounting scales "
                           f"every sigma by {self.sigma_multiplier:.4g} on agent "
                           f"{self.agent.id} (each agent by its own), so its epsilon after "
                           f"T = {T} iterations meets the budget")
        return {v: dataclasses.replace(b, sigma=b.sigma * self.sigma_multiplier)
                for v, b in budgets.items()}

    def step(self, n: int) -> None:
        t, core = n - 1, self.core
        if n == 1:
            core.send(0, self.budgets, self.clear)  # line 1: the initial messages
        self.problem.observe(self.params.samples)  # line 3
        core.update(step_sizes(self.schedules.lam0, self.schedules.v, t))
        core.send(t + 1, self.budgets, self.clear)

    @property
    def estimate(self) -> np.ndarray:
        return self.core.X

    @classmethod
    def audit(cls):
        """The pure-epsilon trial audit on shadow trajectories (the family's audit.py)."""
        from .audit import AggregativeAudit
        return AggregativeAudit()

    def report(self) -> dict:
        """Every agent's eq. (21) budget (public schedules), labelled."""
        T = self.agent.iterations
        K = self.agent.n_agents
        if self.clear:
            return {"guarantee": "noise off (sigma = 0): messages in the clear, loss unbounded"}
        if self.accounting == "derived":
            # each agent's constants are its own (its data's bounds): rank 0 reports its
            # own; privacy.json holds every agent's booked loss
            epsilon = sum(b.partial_sum(T) for b in self.budgets.values())
            guarantee = ("pure epsilon local DP (delta = 0), releases t = 0..T, the t = 0 "
                         "release with sensitivity 0" if math.isfinite(epsilon) else
                         "none: the derived sensitivity bound overflowed (infinite), so the "
                         "releases after it are booked as non-private")
            return {"guarantee": guarantee, "accounting": DERIVED,
                    "record_domain": self.record_domain,
                    "sigma_multiplier_agent0": self.sigma_multiplier,
                    "epsilon_eq21_T_agent0": epsilon if math.isfinite(epsilon)
                    else "unbounded"}
        schedules = self.schedules

        def each(figure) -> list[float] | float:
            # an agent with a block in the clear has no finite budget
            return per_agent_values([
                sum(figure(b) for b in schedules.block_budgets(k).values())
                if np.all(schedules.sigma[k] > 0) else math.inf for k in range(K)])

        return {
            "guarantee": "pure epsilon local DP (delta = 0), releases t = 0..T, "
                       "the t = 0 release with sensitivity 0",
            **accounting_fields(schedules.constants.ravel().tolist()),
            "epsilon_eq21_T": each(lambda b: b.partial_sum(T)),
            "epsilon_limit_exact_series": each(BlockBudget.limit),
            "epsilon_limit_bound_155": each(BlockBudget.bound_155),
        }

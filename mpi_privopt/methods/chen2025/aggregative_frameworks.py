r"""PDOP [26] and [51] run inside Algorithm 1's framework (Chen & Wang 2025, Section VI).

Both keep Algorithm 1's exact updates (the shared :class:`RobustTracking`: stacked **x**_i,
robust trackers y_i, z_i, one packed message of 2r + n floats per neighbour and time,
t = 0..T) and change only the schedules
(docs/methods/chen2025.md, "PDOP [26] in Algorithm 1's framework" and the [51] section after it):

``pdop-aggregative`` (Huang, Mitra & Vaidya 2015) geometric steps and noise::

    lam_v^t = lam_v0 q_v^t,   sigma_v^t = sigma_v0 q_sig^t        (MNIST: lam0 = 0.1,
    q = (0.94, 0.98, 0.97) for x, y, z; sigma0 = (0.07, 0.008, 0.008), q_sig = 0.99)

so sum_t lam_x^t is finite (about 1.67): learning stops after about 100 iterations, and the
noise in ytilde, chi / lam_y, grows like (0.99/0.98)^t (faithful to the equations).

``tvs-aggregative`` ([51], Wang & Zhang 2024, time-varying sample sizes)::

    lam_v^t = lam_v0 (t+1)^-v_v             (0.05, exponents 0.76, 0.11, 0.65)
    sigma_v^t = sigma_v0 (t+1)^growth       (0.1, 0.01, 0.01; growth 0.01: increasing)
    every consensus increment sum_j w_ij (m_j - s_i) multiplied by beta^t = beta0 (t+1)^-v_beta
                                            (0.05, 0.51)
    f_i^t, g_i^t on gamma_t = ceil((t+1)^1.4) fresh samples (not the history)

Privacy, under ``privacy.accounting``: ``derived`` (the default;
docs/methods/chen2025.md, "Derived accounting") books the proof's recursion for the
method's own schedule (:func:`~mpi_privopt.methods.chen2025.sensitivity.recursion_for_steps`:
PDOP's geometric steps; [51]'s steps, own-state weight 1 - beta^t |w_ii| and batch gamma_t),
with the problem's record bounds, a finite box and ztilde clipped to ``clip_z``;
``nominal`` (the constants 1, docs/methods/chen2025.md, "Nominal accounting"):
release t of block v has sensitivity
``C_v lam_v^t`` (PDOP) or ``C_v lam_v^t / gamma_t`` ([51]), 0 at t = 0, with the scale of its
noise; each message is one packed Laplace event booked once per sender, and the summary's
headline is the pure epsilon (delta = 0). Both budgets converge as T -> inf: PDOP's to a
geometric series' sum, [51]'s below a zeta bound. The schedules are public:
``planned_events`` gives the events of any iterations ahead (a resume past the budget is
refused before any release).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .ldp_budget import (BLOCKS, GeometricBlock, SampledBlock, accounting_fields,
                         fresh_batch, report_epsilon_label)
from .aggregative_parts import RobustTracking, planned_framework_events
from .derived import (DERIVED, DerivedScheduleBlock, DerivedSensitivities, accounting_of,
                      check_derived, enforce_bounds)
from ..contract import Algorithm
from ...errors import ConfigError

NO_NOISE = "noise off (sigma = 0): messages in the clear, loss unbounded"

#: the per-block noise and sensitivity keys both frameworks check for >= 0
NOISE_KEYS = {f"{key}_{b}": "the noise std at t = 0 (0: none)" if key == "sigma" else
              "the sensitivity constant" for key in ("sigma", "sensitivity") for b in BLOCKS}


def _noisy_blocks(params, make) -> tuple[dict, list[str]]:
    """``make(b)`` for every block b with noise (sigma_b > 0), and the blocks sent clear."""
    budgets = {b: make(b) for b in BLOCKS if getattr(params, f"sigma_{b}") > 0}
    return budgets, [b for b in BLOCKS if b not in budgets]


def _geometric(params):
    """PDOP's block b: geometric step and noise (:class:`GeometricBlock`)."""
    return lambda b: GeometricBlock(
        getattr(params, f"sensitivity_{b}"), getattr(params, f"lam_{b}0"),
        getattr(params, f"rate_{b}"), getattr(params, f"sigma_{b}"), params.noise_rate)


def _sampled(params):
    """[51]'s block b: decaying step, growing noise and batches (:class:`SampledBlock`)."""
    return lambda b: SampledBlock(
        getattr(params, f"sensitivity_{b}"), getattr(params, f"lam_{b}0"),
        getattr(params, f"v_{b}"), getattr(params, f"sigma_{b}"), params.noise_growth,
        params.batch_exponent)


def _framework_budgets(cls, params, agent: int, n_agents: int) -> dict:
    """Both frameworks' ``block_budgets``: the noisy blocks' rules (``cls.block_rule``)."""
    return _noisy_blocks(params, cls.block_rule(params))[0]


def _after_the_last_message(cls, n: int) -> int:
    """Both frameworks' ``released_after``: Algorithm 1's framework sends t = 0..n, the
    t = n message at the end."""
    return n + 1


def _check_rate_z(name: str, cfg) -> None:
    """PDOP under the derived accounting: lam_z^t = lam_z0 rate_z^t must stay <= 1."""
    if cfg.privacy.accounting == "derived" and cfg.algorithm.params.rate_z > 1:
        raise ConfigError(f"algorithm.rate_z = {cfg.algorithm.params.rate_z} > 1 grows lam_z^t "
                          "past 1, where the proof's recursion no longer covers the ztilde "
                          "clip (d_z / lam_z)",
                          'set algorithm.rate_z <= 1, or privacy.accounting = "nominal"')


@dataclasses.dataclass(frozen=True)
class PDOPSteps:
    """PDOP's steps for the recursion: lam_v^t = lam_v0 q_v^t. (A class, not a closure:
    the derived sensitivities keep it, and a checkpoint saves them.)"""

    params: "PDOPParams"

    def __call__(self, T: int) -> dict:
        t = np.arange(float(T))
        params = self.params
        return {"lam": {b: getattr(params, f"lam_{b}0") * getattr(params, f"rate_{b}") ** t
                        for b in "xyz"}}


@dataclasses.dataclass(frozen=True)
class TVSSteps:
    """[51]'s for the recursion: polynomial steps, the own state's weight
    1 - beta^t |w_ii| and the fresh batch gamma_t as the averages' count."""

    params: "TVSParams"
    self_weight: float

    def __call__(self, T: int) -> dict:
        params = self.params
        t1 = np.arange(1.0, T + 1.0)
        beta = params.beta0 * t1 ** (-params.v_beta)
        return {"lam": {b: getattr(params, f"lam_{b}0") * t1 ** (-getattr(params, f"v_{b}"))
                        for b in "xyz"},
                "self_weight": 1.0 - beta * (1.0 - self.self_weight),
                "count": np.array([fresh_batch(t, params.batch_exponent) for t in range(T)],
                                  dtype=float)}


def _framework_setup(algorithm, agent, params, steps) -> None:
    """The method's budgets and clear blocks: the nominal rules, or under the derived
    accounting (docs/methods/chen2025.md, "Derived accounting") the proof's recursion for
    the method's own schedule, with the nominal blocks' noise."""
    algorithm.budgets, algorithm.clear = _noisy_blocks(params, algorithm.block_rule(params))
    algorithm.accounting = accounting_of(agent)
    if algorithm.accounting == "derived":
        constants, algorithm.record_domain = enforce_bounds(
            algorithm.core, agent.problem, params, agent.id, algorithm.name)
        source = DerivedSensitivities(constants, horizon=agent.iterations + 2,
                                      steps=steps(algorithm.core.self_weight))
        algorithm.budgets = {b: DerivedScheduleBlock(source, b, noise)
                             for b, noise in algorithm.budgets.items()}


def _derived_report(algorithm) -> dict:
    if algorithm.clear:
        return {"guarantee": NO_NOISE}
    epsilon = sum(b.partial_sum(algorithm.agent.iterations)
                  for b in algorithm.budgets.values())
    return {"guarantee": "pure epsilon local DP (delta = 0), releases t = 0..T, the t = 0 "
                         "release with sensitivity 0" if math.isfinite(epsilon) else
                         "none: the derived sensitivity bound overflowed (infinite)",
            "accounting": DERIVED, "record_domain": algorithm.record_domain,
            "epsilon_T_agent0": epsilon if math.isfinite(epsilon) else "unbounded"}


def _budget_report(blocks: dict, constants: list[float], T: int, limit) -> dict:
    if len(blocks) < len(BLOCKS):
        return {"guarantee": NO_NOISE}
    return {"guarantee": "pure epsilon local DP (delta = 0), releases t = 0..T, the t = 0 "
                         "release with sensitivity 0; the same for every agent",
            **accounting_fields(constants),
            "epsilon_T": sum(b.partial_sum(T) for b in blocks.values()),
            **limit(blocks)}


def _run_framework(algorithm, n: int, lam: dict, beta: float, count: int,
                   fresh: bool) -> None:
    """One iteration of Algorithm 1 with the method's schedules of time t = n - 1."""
    core, t = algorithm.core, n - 1
    if n == 1:
        core.send(0, algorithm.budgets, algorithm.clear)
    algorithm.agent.problem.observe(count, fresh=fresh)
    core.update(lam, beta)
    core.send(t + 1, algorithm.budgets, algorithm.clear)


@dataclasses.dataclass
class PDOPParams:
    """The ``[algorithm]`` keys of ``pdop-aggregative`` (the paper's MNIST values)."""

    lam_x0: float = 0.1
    lam_y0: float = 0.1
    lam_z0: float = 0.1
    rate_x: float = 0.94
    rate_y: float = 0.98
    rate_z: float = 0.97
    sigma_x: float = 0.07
    sigma_y: float = 0.008
    sigma_z: float = 0.008
    noise_rate: float = 0.99
    sensitivity_x: float = 1.0
    sensitivity_y: float = 1.0
    sensitivity_z: float = 1.0
    box: float = 1e6
    clip_z: float = 1.0
    constant_weight: float = 0.0
    samples: int = 1


class PDOPAggregative(Algorithm):
    __doc__ = __doc__

    name = "pdop-aggregative"
    summary = "PDOP's geometric schedules in Algorithm 1's framework ([26], baseline)"
    private = True
    problem_kind = "aggregative"
    pure_headline = True
    epsilon_label = property(report_epsilon_label)  # nominal: not a guarantee
    Params = PDOPParams
    positive = ("lam_x0", "lam_y0", "lam_z0", "rate_x", "rate_y", "rate_z", "noise_rate",
                "box", "clip_z", "samples")
    non_negative = NOISE_KEYS
    choices = {}
    blocks = BLOCKS
    planned_events = planned_framework_events
    config_checks = (check_derived, _check_rate_z)

    #: block b's release rule
    block_rule = staticmethod(_geometric)
    block_budgets = classmethod(_framework_budgets)
    released_after = classmethod(_after_the_last_message)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.core = RobustTracking(agent, params.constant_weight, params.box, self.name)
        _framework_setup(self, agent, params, lambda self_weight: PDOPSteps(params))

    def step(self, n: int) -> None:
        p, t = self.params, n - 1
        lam = {b: getattr(p, f"lam_{b}0") * getattr(p, f"rate_{b}") ** t for b in "xyz"}
        _run_framework(self, n, lam, 1.0, p.samples, False)

    @property
    def estimate(self):
        return self.core.X

    def report(self) -> dict:
        if self.accounting == "derived":
            return _derived_report(self)
        p = self.params
        return _budget_report(self.budgets, [p.sensitivity_x, p.sensitivity_y,
                                             p.sensitivity_z], self.agent.iterations,
                              lambda blocks: {"epsilon_limit_geometric_series":
                                              sum(b.limit() for b in blocks.values())})


@dataclasses.dataclass
class TVSParams:
    """The ``[algorithm]`` keys of ``tvs-aggregative`` (the paper's MNIST values)."""

    lam_x0: float = 0.05
    lam_y0: float = 0.05
    lam_z0: float = 0.05
    v_x: float = 0.76
    v_y: float = 0.11
    v_z: float = 0.65
    sigma_x: float = 0.1
    sigma_y: float = 0.01
    sigma_z: float = 0.01
    noise_growth: float = 0.01
    beta0: float = 0.05
    v_beta: float = 0.51
    batch_exponent: float = 1.4
    sensitivity_x: float = 1.0
    sensitivity_y: float = 1.0
    sensitivity_z: float = 1.0
    box: float = 1e6
    clip_z: float = 1.0
    constant_weight: float = 0.0


class TVSAggregative(Algorithm):
    __doc__ = __doc__

    name = "tvs-aggregative"
    summary = "[51]'s decaying consensus and growing fresh batches in Algorithm 1's framework"
    private = True
    problem_kind = "aggregative"
    pure_headline = True
    epsilon_label = property(report_epsilon_label)  # nominal: not a guarantee
    Params = TVSParams
    positive = ("lam_x0", "lam_y0", "lam_z0", "beta0", "box", "clip_z")
    non_negative = {"batch_exponent": "gamma_t = ceil((t+1)^batch_exponent)", **NOISE_KEYS}
    choices = {}
    blocks = BLOCKS
    planned_events = planned_framework_events
    config_checks = (check_derived,)

    #: block b's release rule
    block_rule = staticmethod(_sampled)
    block_budgets = classmethod(_framework_budgets)
    released_after = classmethod(_after_the_last_message)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.core = RobustTracking(agent, params.constant_weight, params.box, self.name)
        _framework_setup(self, agent, params, lambda self_weight: TVSSteps(params,
                                                                            self_weight))

    def step(self, n: int) -> None:
        p, t = self.params, n - 1
        lam = {b: getattr(p, f"lam_{b}0") * (t + 1.0) ** (-getattr(p, f"v_{b}")) for b in "xyz"}
        beta = p.beta0 * (t + 1.0) ** (-p.v_beta)
        _run_framework(self, n, lam, beta, fresh_batch(t, p.batch_exponent), True)

    @property
    def estimate(self):
        return self.core.X

    def report(self) -> dict:
        if self.accounting == "derived":
            return _derived_report(self)
        p = self.params
        return _budget_report(self.budgets, [p.sensitivity_x, p.sensitivity_y,
                                             p.sensitivity_z], self.agent.iterations,
                              lambda blocks: {"epsilon_limit_at_most":
                                              sum(b.limit_bound() for b in blocks.values())})

r"""Projected aggregative tracking (Carnevale, Camisa & Notarstefano 2023, [6] of Chen &
Wang 2025), with Laplace noise on the shared trackers
(docs/methods/chen2025.md, "Carnevale et al. [6]: projected aggregative tracking").

Agent i keeps its block x_i and the trackers s_i (aggregate) and v_i (average
y-gradient), here ``y`` and ``z`` as in :mod:`~mpi_privopt.methods.chen2025.aggregative_gt`,
whose tracker update it shares. For t = 0, 1, ..., T-1::

    init      s_i^0 = g_i^0(x_i^0),  v_i^0 = grad_y f_i^0(x_i^0, s_i^0)
    xtil_i^t  = P_Omega_i[ x_i^t - alpha ( grad_x f_i^t(x_i^t, s_i^t) + grad g_i^t(x_i^t) v_i^t ) ]
    x_i^{t+1} = x_i^t + delta ( xtil_i^t - x_i^t )
    phase "yz": broadcast [s_i^t + chi_i^t, v_i^t + zeta_i^t] (2r floats) to every neighbour
    s_i^{t+1} = a_ii s_i^t + sum_j a_ij (s_j^t + chi_j^t) + g_i^{t+1}(x_i^{t+1}) - g_i^t(x_i^t)
    v_i^{t+1} = a_ii v_i^t + sum_j a_ij (v_j^t + zeta_j^t)
                + grad_y f_i^{t+1}(x_i^{t+1}, s_i^{t+1}) - grad_y f_i^t(x_i^t, s_i^t)

with constant alpha and delta (the experiments: alpha = 1, delta = 0.5, Sec. IV of [6]; the
update rule is not written out in Chen & Wang and follows the standard form of [6]).
Noise and privacy as ``aggregative-gt``: Algorithm 1's y and z schedules, constant stated
sensitivities, a budget without a finite limit.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...errors import ConfigError
from .aggregative_gt import (NO_DERIVED_TRACKERS, TrackerKeys, TrackerPair,
                             planned_tracker_events, tracker_block_budgets,
                             tracking_direction, tracking_report)
from .aggregative_parts import project_box
from .ldp_budget import report_epsilon_label
from ..contract import Algorithm
from .ldp_aggregative import PRESETS


@dataclasses.dataclass
class PATParams(TrackerKeys):
    """The ``[algorithm]`` keys of ``aggregative-pat``: alpha and delta (``delta_step``; the
    key ``delta`` is Corollary 1's knob of the noise presets), then the trackers' keys."""

    alpha: float = 1.0
    delta_step: float = 0.5


def _check_delta_step(name: str, params: PATParams) -> None:
    if not 0 < params.delta_step <= 1:
        raise ConfigError(f"algorithm.delta_step = {params.delta_step} must be in (0, 1] "
                          f"for {name!r}", "the paper's experiments use 0.5")


class AggregativePAT(Algorithm):
    __doc__ = __doc__

    name = "aggregative-pat"
    summary = "projected aggregative tracking, noisy trackers ([6], baseline)"
    private = True
    problem_kind = "aggregative"
    pure_headline = True
    epsilon_label = property(report_epsilon_label)  # nominal: not a guarantee
    Params = PATParams
    positive = ("alpha", "box", "samples", "delta")
    choices = {"preset": PRESETS}
    param_checks = (_check_delta_step,)
    config_checks = (NO_DERIVED_TRACKERS,)
    planned_events = planned_tracker_events
    blocks = ("y", "z")  # one message per iteration (released_after: the default)

    block_budgets = classmethod(tracker_block_budgets)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.trackers = TrackerPair(agent, params, self.name)
        self.x = np.asarray(agent.problem.initial_block(), dtype=float).copy()

    def step(self, n: int) -> None:
        params, problem = self.params, self.agent.problem
        if n == 1:
            self.trackers.initialise(self.x)
        x_tilde = project_box(self.x - params.alpha * tracking_direction(problem, self.x,
                                                                         self.trackers),
                              params.box)
        x_next = self.x + params.delta_step * (x_tilde - self.x)
        self.trackers.advance(self.x, x_next, n - 1)
        self.x = x_next

    @property
    def estimate(self) -> np.ndarray:
        return self.x

    def report(self) -> dict:
        return tracking_report(self.params, self.agent.n_agents, self.agent.iterations)

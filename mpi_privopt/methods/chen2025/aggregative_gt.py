r"""Conventional gradient tracking for aggregative optimisation (Li, Yi & Xie 2022, [36] of
Chen & Wang 2025), with Laplace noise on the shared trackers
(docs/methods/chen2025.md, "Li et al. [36]: gradient tracking"; docs/methods/chen2025.md,
"Baselines' noise and data").

Agent i keeps only its own block x_i and the trackers y_i (of the aggregate) and z_i (of
the average y-gradient). With A = I + W (a_ii = 1 - |w_ii|), for t = 0, 1, ..., T-1
(engine iteration n = t + 1)::

    init      y_i^0 = g_i^0(x_i^0),  z_i^0 = grad_y f_i^0(x_i^0, y_i^0)          (GT initialisation)
    x_i^{t+1} = P_Omega_i[ x_i^t - alpha_t ( grad_x f_i^t(x_i^t, y_i^t) + grad g_i^t(x_i^t) z_i^t ) ]
    phase "yz": broadcast [y_i^t + chi_i^t, z_i^t + zeta_i^t] (2r floats) to every neighbour
    draw new samples (the history now covers t + 1)
    y_i^{t+1} = a_ii y_i^t + sum_{j in N_i} a_ij (y_j^t + chi_j^t) + g_i^{t+1}(x_i^{t+1}) - g_i^t(x_i^t)
    z_i^{t+1} = a_ii z_i^t + sum_j a_ij (z_j^t + zeta_j^t)
                + grad_y f_i^{t+1}(x_i^{t+1}, y_i^{t+1}) - grad_y f_i^t(x_i^t, y_i^t)

alpha_t = alpha0 (t+1)^-v_alpha (the experiments: (t+1)^-0.5). The agent uses its own
clean state for j = i (the paper's sum over all j is ambiguous on this point). The noise
is Algorithm 1's y and z schedules,
``b = sigma (t+1)^-vs / sqrt(2)`` per coordinate (a conservative choice, favourable to this
baseline): it accumulates in the trackers' average as a random walk (eq. 4;
docs/methods/chen2025.md, "Robust tracking"),
so the error does not vanish.

Privacy: T messages (t = 0..T-1), each a packed Laplace event of the y and z blocks. The
sensitivity does not decay here: every message is booked with the stated constant
sensitivities ``sensitivity_y`` and ``sensitivity_z`` (1: nominal), from t = 0 (y_i^0 already
depends on the first sample), so the budget grows without bound with T. The schedule is public:
``planned_events`` gives the events of any iterations ahead (a resume past the budget is
refused before any release).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .ldp_budget import BlockBudget, accounting_fields, report_epsilon_label
from .derived import refuse_derived
from ...privacy.mechanisms import LaplaceMechanism
from ...privacy.events import PrivacyEvent
from ...problems.aggregative.objective import tracker_recorder
from .aggregative_parts import (check_mixing, mixing_matrix, packed_release,
                                planned_packed_events, project_box)
from ..contract import Algorithm
from .ldp_aggregative import PRESETS, per_agent_values, tracker_noise


@dataclasses.dataclass
class TrackerKeys:
    """The ``[algorithm]`` keys the tracking baselines share: their trackers' noise (as
    ldp-aggregative's y and z keys), Omega, the weights and the samples per iteration."""

    preset: str = ""
    delta: float = 0.01
    sigma_y: float | list | None = None
    sigma_z: float | list | None = None
    vs_y: float | list | None = None
    vs_z: float | list | None = None
    sensitivity_y: float | list = 1.0
    sensitivity_z: float | list = 1.0
    box: float = 1e6
    constant_weight: float = 0.0
    samples: int = 1


@dataclasses.dataclass
class GTParams(TrackerKeys):
    """The ``[algorithm]`` keys of ``aggregative-gt`` (docs/algorithms/aggregative-gt.md)."""

    alpha0: float = 1.0
    v_alpha: float = 0.5


def tracker_block_budgets(cls, params, agent: int, n_agents: int) -> dict:
    """The ``block_budgets`` hook of the tracker methods ([36], [6]): the noisy blocks'
    rules of :func:`tracking_budgets`."""
    return tracking_budgets(params, agent, n_agents)[0]


def tracking_budgets(params, agent: int, n_agents: int) -> tuple[dict[str, BlockBudget], list[str]]:
    """The y and z blocks' release rules (constant sensitivity from t = 0, Algorithm 1's
    noise schedules) and the blocks sent in the clear (sigma 0)."""
    noise = tracker_noise(params, n_agents)
    budgets, clear = {}, []
    for block in ("y", "z"):
        sigma, decay, constant = (float(v[agent]) for v in noise[block])
        if sigma == 0:
            clear.append(block)
        else:
            budgets[block] = BlockBudget(constant, 0.0, sigma, decay, first=0)
    return budgets, clear


def tracking_report(params, n_agents: int, T: int) -> dict:
    """The baselines' budget after T messages, by Lemma 1 with their stated sensitivity."""
    per_agent = [tracking_budgets(params, k, n_agents) for k in range(n_agents)]
    if any(clear for _, clear in per_agent):
        return {"guarantee": "noise off (sigma = 0): messages in the clear, loss unbounded"}
    constants = [c for b in ("y", "z")
                 for c in np.ravel(getattr(params, f"sensitivity_{b}")).tolist()]
    return {"guarantee": "pure epsilon local DP (delta = 0) with a constant stated "
                         "sensitivity: grows without bound with T",
            **accounting_fields(constants),
            "epsilon_T": per_agent_values([sum(b.partial_sum(T - 1) for b in budgets.values())
                                           for budgets, _ in per_agent]),
            "epsilon_limit": "inf (the sensitivity does not decay)"}


#: the tracking baselines refuse the derived accounting (docs/methods/chen2025.md,
#: "Derived accounting")
NO_DERIVED_TRACKERS = refuse_derived(
    "no sensitivity bound is proven for its noisy trackers (the paper gives none, and a "
    "changed sample stays in the tracked history average y_i, z_i without decay)")


class TrackerPair:
    """The two noisy trackers the tracking baselines share ([36] and [6]): y (aggregate)
    and z (average y-gradient), their GT initialisation, their message and their update.

    Parameters
    ----------
    agent : Agent
    params
        The method's Params (noise keys as :func:`tracking_budgets`, ``constant_weight``,
        ``samples``).
    method : str
        The method's name (for the note of a message sent in the clear).
    """

    def __init__(self, agent, params, method: str) -> None:
        problem = self.problem = agent.problem
        A = mixing_matrix(agent.graph, params.constant_weight, agent.weights)
        check_mixing(A)
        me = agent.id
        self.self_weight = float(A[me, me])
        self.neighbour_weights = A[me, agent.net.in_neighbors]
        r = self.r = problem.aggregate_size
        self.channel = agent.net.broadcast_channel("yz", 2 * r, buffers=2)
        self.mechanism = LaplaceMechanism(agent.noise, owner=me, unit="record")
        self.budgets, self.clear = tracking_budgets(params, me, agent.n_agents)
        self.samples = params.samples
        self.method = method
        self.y = np.zeros(r)
        self.z = np.zeros(r)
        #: the problem's optional diagnostics hook (its trackers are the estimates)
        self._record = tracker_recorder(problem)

    def initialise(self, x: np.ndarray) -> None:
        """y^0 = g^0(x^0), z^0 = grad_y f^0(x^0, y^0), on the first samples."""
        self.problem.observe(self.samples)
        self.y = self.problem.aggregate(x)
        self.z = self.problem.grad_y(x, self.y)

    def _views(self, buffer: np.ndarray) -> dict[str, np.ndarray]:
        return {"y": buffer[:self.r], "z": buffer[self.r:]}

    def planned(self, first: int, last: int) -> list[PrivacyEvent]:
        """The events the messages of iterations ``first`` .. ``last`` will book: iteration
        n sends the trackers of time t = n - 1 (:meth:`advance`)."""
        return planned_packed_events(self.mechanism, self._views(self.channel.outgoing),
                                     self.budgets, range(first - 1, last), self.clear,
                                     self.method)

    def advance(self, x: np.ndarray, x_next: np.ndarray, t: int) -> None:
        """Send the noisy trackers of time t, draw new samples, and track the change
        from x^t to x^{t+1}."""
        problem = self.problem
        if self._record is not None:
            self._record(x, self.y, self.z)
        g_before, gy_before = problem.aggregate(x), problem.grad_y(x, self.y)
        out = self.channel.outgoing
        self.channel.exchange(packed_release(self.mechanism, self._views(out),
                                             {"y": self.y, "z": self.z}, self.budgets, t,
                                             out, self.clear, self.method))
        heard = self._views(self.neighbour_weights @ self.channel.received)
        problem.observe(self.samples)
        a = self.self_weight
        y_next = a * self.y + heard["y"] + problem.aggregate(x_next) - g_before
        self.z = a * self.z + heard["z"] + problem.grad_y(x_next, y_next) - gy_before
        self.y = y_next


def planned_tracker_events(method, first: int, last: int) -> list[PrivacyEvent]:
    """:meth:`Algorithm.planned_events` of a tracking baseline (``method.trackers`` a
    :class:`TrackerPair`)."""
    return method.trackers.planned(first, last)


def tracking_direction(problem, x: np.ndarray, trackers: TrackerPair) -> np.ndarray:
    """grad_x f_i^t(x, y_i) + grad g_i^t(x) z_i, with the trackers as the estimates."""
    return problem.grad_x(x, trackers.y) + problem.aggregate_vjp(x, trackers.z)


class AggregativeGT(Algorithm):
    __doc__ = __doc__

    name = "aggregative-gt"
    summary = "gradient tracking for aggregative optimisation, noisy trackers ([36], baseline)"
    private = True
    problem_kind = "aggregative"
    pure_headline = True
    epsilon_label = property(report_epsilon_label)  # nominal: not a guarantee
    Params = GTParams
    positive = ("alpha0", "box", "samples", "delta")
    non_negative = {"v_alpha": "alpha_t = alpha0 (t+1)^-v_alpha"}
    choices = {"preset": PRESETS}

    planned_events = planned_tracker_events
    blocks = ("y", "z")  # one message per iteration (released_after: the default)
    config_checks = (NO_DERIVED_TRACKERS,)

    block_budgets = classmethod(tracker_block_budgets)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.trackers = TrackerPair(agent, params, self.name)
        self.x = np.asarray(agent.problem.initial_block(), dtype=float).copy()

    def step(self, n: int) -> None:
        t, params, problem = n - 1, self.params, self.agent.problem
        if n == 1:
            self.trackers.initialise(self.x)
        alpha = params.alpha0 * (t + 1.0) ** (-params.v_alpha)
        x_next = project_box(self.x - alpha * tracking_direction(problem, self.x, self.trackers),
                             params.box)
        self.trackers.advance(self.x, x_next, t)
        self.x = x_next

    @property
    def estimate(self) -> np.ndarray:
        return self.x

    def report(self) -> dict:
        return tracking_report(self.params, self.agent.n_agents, self.agent.iterations)

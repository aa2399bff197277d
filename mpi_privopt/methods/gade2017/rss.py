"""Randomized State Sharing (Gade & Vaidya 2017, Algorithms 1 and 2): RSS-NB and RSS-LB.

Both are the paper's DGD (gradient at the fused point, projection onto X) in which the
state an agent shares is perturbed by structured noise that cancels in the network
average, so the iterates still converge to the optimum of the sum (Theorem 1) while
neighbours never see a clean iterate. This is not differential privacy: every message is
booked as non-private, and what a run may claim is the topology certificate in its report.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from ...errors import ConfigError
from .certificate import ADVERSARIES_MEANING, certificate_report
from ...privacy.release import Release
from ..contract import Algorithm
from ..baselines.dgd import DGD_CHOICES, box_or_none, initial_point, projected_step, validate_box
from .perturbations import (LB_DISTRIBUTIONS, LB_SCALES, NB_DISTRIBUTIONS,
                            locally_balanced_noise, network_balanced_shares)
from ..steps import curvature, step_size

NB_NOTE = ("RSS-NB structured randomization: not differential privacy; "
           "see the topology certificate")
NB_SHARE_NOTE = ("RSS-NB noise share s^{j,i} (data-independent, secret to the link): "
                 "not differential privacy; see the topology certificate")
LB_NOTE = ("RSS-LB structured randomization: not differential privacy; "
           "see the topology certificate")

RSS_SCOPE = ("Gade & Vaidya prove Theorem 2 for FS only; for RSS the conditions are "
             "necessary (a coalition that violates them recovers gradients exactly) but no "
             "guarantee is proved, and zero-mean noise can be averaged out over iterations")


@dataclasses.dataclass
class RSSParams:
    """The ``[algorithm]`` keys RSS-NB and RSS-LB share."""

    step: float = 1.0
    schedule: str = "inverse"
    box: float = math.inf
    init: str = "zero"
    delta: float = 1.0
    noise: str = "ball"
    adversaries: int = 1


def validate_delta(name: str, params: RSSParams) -> None:
    """Raise ConfigError for a perturbation bound Delta that is negative or infinite."""
    if not (params.delta >= 0 and math.isfinite(params.delta)):
        raise ConfigError(f"algorithm.delta = {params.delta} must be finite and >= 0",
                          "Delta bounds the perturbation; 0 gives plain DGD")


class StructuredDescent:
    """The step RSS-NB and RSS-LB share, held by each as a component (Algorithms 1 and 2,
    lines 8-9): the projected gradient step at the fused point,

        v_k^j     = fuse(alpha_k)                       (the variant's perturbed fusion)
        x_{k+1}^j = P_X[ v_k^j - alpha_k grad f_j(v_k^j) ]

    ``x`` and ``gradient_point`` (v_k^j, where the last gradient was taken) are what a
    curious neighbour's transcript reads.
    """

    def __init__(self, agent, params: RSSParams) -> None:
        self.agent = agent
        self.params = params
        self.self_weight, self.neighbor_weights = agent.mixing_row()
        self.x = initial_point(agent, params.init, params.box)
        self.gradient_point = self.x
        self._box = box_or_none(params.box)

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        """alpha_k at iteration ``n`` and the problem's curvature (the contract's
        ``gradient_step``)."""
        return ("algorithm.step", step_size(self.params.schedule, self.params.step, n),
                curvature(self.agent.problem))

    def step(self, n: int, fuse: Callable[[float], np.ndarray]) -> None:
        alpha = step_size(self.params.schedule, self.params.step, n)
        v = self.gradient_point = fuse(alpha)
        self.x = projected_step(v, alpha, self.agent.problem.subgradient(v), self._box)


#: the checks of the ``[algorithm]`` keys RSS-NB and RSS-LB share (no gradient_at: the
#: gradient is always taken at the fused point)
RSS_PARAM_CHECKS = (validate_box, validate_delta)


class RSSNB(Algorithm):
    r"""RSS-NB, Randomized State Sharing, Network Balanced (Gade & Vaidya, Algorithm 1).

    Agent j, with s_1^{j,i} = s_1^{i,j} = 0, for k = 1, 2, ...::

        d_k^j     = sum_{i in N_j} s_k^{i,j} - sum_{i in N_j} s_k^{j,i}     (eq. 2)
        w_k^j     = x_k^j + alpha_k d_k^j                                  (eq. 1)
        phase "w" (broadcast): w_k^j to every neighbour; receive w_k^i
        phase "s" (scatter):   a fresh s_{k+1}^{j,i} to each neighbour i; receive s_{k+1}^{i,j}
        v_k^j     = sum_{i in N_j U {j}} B[j,i] w_k^i                      (own w, not x)
        x_{k+1}^j = P_X[ v_k^j - alpha_k grad f_j(v_k^j) ]

    Each share enters the receiver's d with + and the sender's with -, so
    sum_j d_k^j = 0 at every k (eq. 3) and the network average is never perturbed. Shares
    are drawn by the sender from its own stream with ||s|| <= Delta / (2n) (``noise``:
    ``ball``, ``cube``, or ``biased`` with non-zero mean), hence ||d_k^j|| <= Delta.
    The shares for iteration k + 1 travel with the state of iteration k (the paper's
    pipeline); both exchanges are posted together and completed together.

    Parameters (``[algorithm]``): ``step``, ``schedule`` (alpha_k; the paper's Theorem 1
    uses a/k: ``inverse``), ``box``, ``init`` as for DGD; ``delta`` (Delta); ``noise``;
    ``adversaries`` (f for the certificate in the report).
    """

    name = "rss-nb"
    summary = "RSS-NB structured randomization, network-balanced (Gade & Vaidya 2017; not DP)"
    Params = RSSParams
    positive = ("step",)
    non_negative = {"adversaries": ADVERSARIES_MEANING}
    choices = {**DGD_CHOICES, "noise": NB_DISTRIBUTIONS}
    param_checks = RSS_PARAM_CHECKS

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.descent = StructuredDescent(agent, params)
        net, dim = agent.net, agent.problem.n_features
        self.share_bound = params.delta / (2 * agent.n_agents)
        self.shares_sent = np.zeros((net.n_out, dim))       # s_k^{j,i}
        self.shares_received = np.zeros((net.n_in, dim))    # s_k^{i,j}
        self.perturbation = np.zeros(dim)                   # d_k^j
        self._shares_in = np.empty((net.n_in, dim))
        self._received = np.empty((net.n_in, dim))

    def step(self, n: int) -> None:
        self.descent.step(n, self.fuse)

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        return self.descent.gradient_step(n)

    def fuse(self, alpha: float) -> np.ndarray:
        """Perturb, exchange states ("w") and the next shares ("s"), return v_k^j."""
        net, x, descent = self.agent.net, self.descent.x, self.descent
        self.perturbation = self.shares_received.sum(axis=0) - self.shares_sent.sum(axis=0)
        w = x + alpha * self.perturbation
        upcoming = network_balanced_shares(self.agent.rng, self.agent.id, net.out_neighbors,
                                           x.size, self.share_bound, self.params.noise)
        states = net.ibroadcast(Release.nonprivate(w, note=NB_NOTE), "w", out=self._received)
        shares = (net.iscatter([Release.nonprivate(s, note=NB_SHARE_NOTE) for s in upcoming],
                               "s", out=self._shares_in) if net.n_out else None)
        received = states.wait()
        if shares is not None:
            # read at the top of the next fuse, before the next exchange reuses the buffer
            self.shares_received = shares.wait()
        self.shares_sent = upcoming
        return descent.self_weight * w + descent.neighbor_weights @ received

    @property
    def x(self) -> np.ndarray:
        """x_k^j, the agent's iterate (RSS-LB shares this accessor)."""
        return self.descent.x

    @property
    def gradient_point(self) -> np.ndarray:
        """v_k^j, where the last gradient was taken."""
        return self.descent.gradient_point

    estimate = x

    def report(self) -> dict:
        return certificate_report(self.agent.graph, self.params.adversaries, RSS_SCOPE)


class RSSLB(Algorithm):
    r"""RSS-LB, Randomized State Sharing, Locally Balanced (Gade & Vaidya, Algorithm 2).

    Agent j, for k = 1, 2, ...::

        choose d_k^{j,i} for i in N_j with  sum_{i in N_j} B[i,j] d_k^{j,i} = 0,
               d_k^{j,j} = 0,  ||d_k^{j,i}|| <= Delta                       (eq. 4)
        w_k^{j,i} = x_k^j + alpha_k d_k^{j,i}                               (eq. 5)
        phase "w-link" (scatter): w_k^{j,i} to neighbour i, a different value on each link;
                                  receive w_k^{i,j}
        v_k^j     = B[j,j] x_k^j + sum_{i in N_j} B[j,i] w_k^{i,j}
        x_{k+1}^j = P_X[ v_k^j - alpha_k grad f_j(v_k^j) ]

    The noise is drawn from the agent's own stream (docs/methods/gade2017.md, "RSS-LB noise
    construction"): raw vectors (``noise``:
    ``ball`` or ``gaussian``) centred by their B[., j]-weighted mean, then scaled so the
    largest norm is Delta * U(0, 1] (``scale = "random"``) or Delta (``"max"``). Eq. 4
    gives sum_j e_k^j = 0 for the fused noise e_k^j = sum_i B[j,i] d_k^{i,j}, so again the
    network average is never perturbed. An agent with one neighbour gets d = 0 (eq. 4
    leaves no freedom): its state goes out in the clear.

    Parameters (``[algorithm]``): as RSS-NB, plus ``scale``; ``noise`` is the raw
    distribution.
    """

    name = "rss-lb"
    summary = "RSS-LB structured randomization, locally balanced, per-link states (not DP)"
    positive = ("step",)
    non_negative = {"adversaries": ADVERSARIES_MEANING}
    choices = {**DGD_CHOICES, "noise": LB_DISTRIBUTIONS, "scale": LB_SCALES}
    param_checks = RSS_PARAM_CHECKS

    @dataclasses.dataclass
    class Params(RSSParams):
        scale: str = "random"

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        self.descent = StructuredDescent(agent, params)
        net, dim = agent.net, agent.problem.n_features
        # Metropolis weights are symmetric, so the column B[i, j] over the out-links
        # equals this agent's row B[j, i]
        self.column_weights = self.descent.neighbor_weights
        self.link_noise = np.zeros((net.n_out, dim))  # d_k^{j,i}
        self._received = np.empty((net.n_in, dim))

    def step(self, n: int) -> None:
        self.descent.step(n, self.fuse)

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        return self.descent.gradient_step(n)

    def fuse(self, alpha: float) -> np.ndarray:
        """Draw d_k^{j,i}, scatter the per-link states ("w-link"), return v_k^j."""
        x, descent = self.descent.x, self.descent
        self.link_noise = locally_balanced_noise(
            self.agent.rng, self.column_weights, x.size, self.params.delta,
            self.params.noise, self.params.scale)
        states = x + alpha * self.link_noise  # w_k^{j,i}, one row per out-link
        releases = [Release.nonprivate(row, note=LB_NOTE) for row in states]
        received = self.agent.net.scatter(releases, "w-link", out=self._received)
        return descent.self_weight * x + descent.neighbor_weights @ received

    x = RSSNB.x
    gradient_point = RSSNB.gradient_point
    estimate = x
    report = RSSNB.report

"""Decentralized consensus ADMM in linearised form (the zCDP-NFL update without noise).

Also home of what the ADMM family (admm, zcdp-nfl, eps-delta-nfl, p-admm) shares, as
functions and one component rather than a class hierarchy: the linearised primal step (7)
(:func:`linearised_primal`), the dual step (9) (:func:`dual_step`), and the state an agent
carries between them with its phase "w" exchange (:class:`ConsensusState`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..contract import Algorithm
from ..perturbed import IterateRelease
from ..steps import curvature, step_size


def linearised_primal(wt: np.ndarray, gradient: np.ndarray, gamma: np.ndarray,
                      neighbour_sum: np.ndarray, rho: float, degree: int,
                      eta: float) -> np.ndarray:
    """Eq. (7): ``wt - (g + gamma + rho (d wt - sum_l wt_l)) / (1/eta + 2 rho d)``."""
    disagreement = degree * wt - neighbour_sum
    return wt - (gradient + gamma + rho * disagreement) / (1.0 / eta + 2.0 * rho * degree)


def dual_step(gamma: np.ndarray, rho: float, degree: int, wt: np.ndarray,
              neighbour_sum: np.ndarray) -> np.ndarray:
    """Eq. (9): ``gamma + rho sum_l (wt_k - wt_l)``."""
    return gamma + rho * (degree * wt - neighbour_sum)


class ConsensusState:
    """What an ADMM agent carries: the last value it sent wt_k, its dual gamma_k and
    sum_l wt_l, with the phase "w" exchange that updates them.

    wt_k lives in a double-buffered broadcast channel: the release of step n is written
    into :attr:`outgoing` while wt^(n-1) stays readable as :attr:`wt`. wt^(0) = 0 and
    gamma^(0) = 0 (data-independent, so nothing is sent before n = 1).
    """

    def __init__(self, net, dim: int, rho: float) -> None:
        self.channel = net.broadcast_channel("w", dim, buffers=2)
        self.rho = rho
        self.degree = net.n_in
        self.gamma = np.zeros(dim)
        # sum_l wt_l: needed by the dual update at the end of iteration n and by the primal
        # update at the start of n+1; summed once when the values arrive.
        self.neighbour_sum = np.zeros(dim)

    @property
    def wt(self) -> np.ndarray:
        """wt_k, the last value sent (0 before the first exchange)."""
        return self.channel.last_sent

    @property
    def outgoing(self) -> np.ndarray:
        """Where the next release is written."""
        return self.channel.outgoing

    def linearised_primal(self, problem, eta: float) -> np.ndarray:
        """Eq. (7) with g_k the subgradient of f_k at the released wt_k."""
        wt = self.channel.last_sent
        return linearised_primal(wt, problem.subgradient(wt), self.gamma, self.neighbour_sum,
                                 self.rho, self.degree, eta)

    def exchange(self, release) -> None:
        """Phase "w": send wt_k (the release, made in :attr:`outgoing`), receive the
        neighbours' wt_l, then eq. (9)."""
        received = self.channel.exchange(release)
        self.neighbour_sum = received.sum(axis=0)
        self.gamma = dual_step(self.gamma, self.rho, self.degree, release.payload,
                               self.neighbour_sum)


def linearised_gradient_step(method, n: int) -> tuple[str, float, float | None]:
    """(7)'s gradient step at iteration ``n``, 1 / (1/eta^(n) + 2 rho d_k), set by
    ``algorithm.eta`` (the ``gradient_step`` of every linearised ADMM)."""
    params = method.params
    eta = step_size(params.schedule, params.eta, n)
    return ("algorithm.eta", 1.0 / (1.0 / eta + 2.0 * params.rho * method.state.degree),
            curvature(method.agent.problem))


class LinearizedADMM(Algorithm):
    r"""Linearised decentralized ADMM (Gauthier et al. 2024, Algorithm 1, eqs. 7-9).

    Agent k keeps the last value it sent, wt_k, and its aggregated dual gamma_k, both
    starting at 0 (wt^(0) = 0 is data-independent, so nothing is sent before n = 1).
    For n = 1, 2, ..., with d_k = |N_k| and g_k^(n-1) a subgradient of f_k at wt_k^(n-1)::

        (7)  w_k^(n) = wt_k^(n-1) - ( g_k^(n-1) + gamma_k^(n-1)
                                      + rho sum_{l in N_k} (wt_k^(n-1) - wt_l^(n-1)) )
                                    / ( 1/eta^(n) + 2 rho d_k )
        (8)  wt_k^(n) = w_k^(n) + xi_k^(n)                    (xi = 0 here: no noise)
             phase "w": broadcast wt_k^(n) to every neighbour, receive wt_l^(n)
        (9)  gamma_k^(n) = gamma_k^(n-1) + rho sum_{l in N_k} (wt_k^(n) - wt_l^(n))

    (7) is the closed-form minimiser of the first-order model of f_k around wt_k^(n-1)
    with prox weight 1/(2 eta^(n)), plus the dual and consensus terms. The step eta^(n) is
    ``eta``, ``eta/sqrt(n)`` or ``eta/n`` by ``schedule``.

    In matrix form (paper eq. 16, L+ / L- the signless / ordinary Laplacian, M = Deg):
    ``w^(n) = (I/eta + 2 rho M)^-1 (wt^(n-1)/eta - f'(wt^(n-1)) - gamma^(n-1) + rho L+ wt^(n-1))``,
    ``gamma^(n) = gamma^(n-1) + rho L- wt^(n)``. Because 1^T L- = 0, sum_k gamma_k = 0 always.

    This method sends w_k in the clear (a non-private baseline: unbounded privacy loss);
    zCDP-NFL and (eps, delta)DP-NFL are the same steps with a noisy release.
    """

    name = "admm"
    summary = "linearised decentralized consensus ADMM (non-private)"

    @dataclasses.dataclass
    class Params:
        rho: float = 1.0
        eta: float = 0.1
        schedule: str = "constant"

    positive = ("rho", "eta")

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        dim = agent.problem.n_features
        self.state = ConsensusState(agent.net, dim, params.rho)
        self.release = IterateRelease(agent.noise, None)  # in the clear
        self.w = np.zeros(dim)

    gradient_step = linearised_gradient_step

    def step(self, n: int) -> None:
        eta = step_size(self.params.schedule, self.params.eta, n)
        self.w = self.state.linearised_primal(self.agent.problem, eta)      # (7)
        self.state.exchange(self.release(self.w, n, 0.0, self.state.outgoing))  # (8), (9)

    @property
    def estimate(self) -> np.ndarray:
        return self.w

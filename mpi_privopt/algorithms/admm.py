"""Decentralized consensus ADMM in linearised form (the zCDP-NFL update without noise)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..privacy.release import Release
from .base import Algorithm, register
from .steps import step_size


@register
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

    This class sends w_k in the clear (a non-private baseline: unbounded privacy loss).
    Private variants override :meth:`perturb`.
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
        p = agent.problem.n_features
        self.w = np.zeros(p)
        # wt^(n-1) and wt^(n) live in the two send buffers of a persistent broadcast: the
        # release of step n is written into the buffer wt^(n-1) is not in (``spare``).
        self._channel = agent.net.broadcast_channel("w", p, buffers=2)
        self.wt, self.spare = self._channel.sends
        self.gamma = np.zeros(p)
        # sum_l wt_l: needed by the dual update at the end of iteration n and by the primal
        # update at the start of n+1; summed once when the values arrive.
        self.neighbour_sum = np.zeros(p)
        self.degree = agent.net.n_in

    def perturb(self, w: np.ndarray, n: int, eta: float, out: np.ndarray) -> Release:
        """Turn the clean iterate into what is sent, written into ``out``; here, as it is
        (non-private)."""
        np.copyto(out, w)
        return Release.nonprivate(out)

    def step(self, n: int) -> None:
        rho, d = self.params.rho, self.degree
        eta = step_size(self.params.schedule, self.params.eta, n)
        g = self.agent.problem.subgradient(self.wt)
        disagreement = d * self.wt - self.neighbour_sum
        self.w = self.wt - (g + self.gamma + rho * disagreement) / (1.0 / eta + 2.0 * rho * d)
        self.exchange(self.perturb(self.w, n, eta, self.spare))

    def exchange(self, release: Release) -> None:
        """Phase "w": send wt_k (the release, made in :attr:`spare`), receive the
        neighbours', update gamma_k."""
        rho, d = self.params.rho, self.degree
        received = self._channel.exchange(release)
        self.spare, self.wt = self.wt, release.payload
        self.neighbour_sum = received.sum(axis=0)
        self.gamma = self.gamma + rho * (d * self.wt - self.neighbour_sum)

    @property
    def estimate(self) -> np.ndarray:
        return self.w

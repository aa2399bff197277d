"""Distributed subgradient descent (Nedic & Ozdaglar 2009), non-private."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..privacy.release import Release
from ..topology import metropolis_row
from .base import Algorithm, register
from .steps import step_size


@register
class DGD(Algorithm):
    r"""Distributed (sub)gradient descent with Metropolis mixing.

    At agent k, with x_k^(0) = 0, for n = 1, 2, ...::

        phase "x":  broadcast x_k^(n-1) to every neighbour, receive x_l^(n-1), l in N_k
        x_k^(n) = sum_{l in N_k U {k}} W_kl x_l^(n-1)  -  alpha_n g_k(x_k^(n-1))

    where g_k is a subgradient of the local objective f_k and W are the Metropolis weights
    of ``topology.weights`` (``standard``: W_kl = 1/(1 + max(d_k, d_l))). The step is
    ``alpha_n = step``, ``step/sqrt(n)`` or ``step/n`` by ``schedule``.

    Theory: with a constant step the agents reach a neighbourhood of the optimum whose size
    shrinks with the step (O(alpha) in distance for strongly convex f); with a diminishing,
    non-summable step (sqrt, inverse) they converge to the optimum.

    The message is the agent's clean iterate, so this baseline is **not private**: its
    releases are marked non-private and every link's privacy loss is unbounded.
    """

    name = "dgd"
    summary = "distributed subgradient descent, Metropolis weights (non-private)"

    @dataclasses.dataclass
    class Params:
        step: float = 0.05
        schedule: str = "sqrt"

    positive = ("step",)

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        net = agent.net
        degrees = dict(agent.graph.degree())
        self.self_weight, self.neighbor_weights = metropolis_row(
            agent.id, net.in_neighbors, degrees, agent.weights)
        self.x = np.zeros(agent.problem.n_features)
        self._received = np.empty((net.n_in, agent.problem.n_features))

    def step(self, n: int) -> None:
        received = self.agent.net.broadcast(Release.nonprivate(self.x), "x", out=self._received)
        alpha = step_size(self.params.schedule, self.params.step, n)
        gradient = self.agent.problem.subgradient(self.x)
        self.x = self.self_weight * self.x + self.neighbor_weights @ received - alpha * gradient

    @property
    def estimate(self) -> np.ndarray:
        return self.x

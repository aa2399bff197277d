"""Distributed subgradient descent (Nedic & Ozdaglar 2009), non-private."""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from ..errors import ConfigError
from ..privacy.release import Release
from .base import Algorithm, register
from .steps import step_size

#: where x_1 starts: 0, spread evenly over [-box, box] by agent id, or uniform in the box
INITS = ("zero", "spread", "uniform")
#: where the gradient is taken: at the agent's own iterate, or at the fused point v
GRADIENT_POINTS = ("own", "fused")


def initial_point(agent, init: str, box: float) -> np.ndarray:
    """x_1 of ``agent``: ``zero``; ``spread`` = box * (2 id / (K - 1) - 1) in every
    coordinate (Fig. 1's (-30, -15, 0, 15, 30) for K = 5, box = 30); ``uniform`` in the box,
    drawn first from the agent's stream so every method starts from the same point."""
    dim = agent.problem.n_features
    if init == "zero":
        return np.zeros(dim)
    if init == "spread":
        n = agent.n_agents
        position = 0.0 if n == 1 else 2.0 * agent.id / (n - 1) - 1.0
        return np.full(dim, box * position)
    if init == "uniform":
        return agent.rng.uniform(-box, box, dim)
    raise ValueError(f"unknown init {init!r}; valid: {', '.join(INITS)}")


@register
class DGD(Algorithm):
    r"""Distributed (sub)gradient descent with Metropolis mixing.

    At agent k, with x_k^(0) = 0, for n = 1, 2, ...::

        phase "x":  broadcast x_k^(n-1) to every neighbour, receive x_l^(n-1), l in N_k
        x_k^(n) = sum_{l in N_k U {k}} W_kl x_l^(n-1)  -  alpha_n g_k(x_k^(n-1))

    where g_k is a subgradient of the local objective f_k and W are the Metropolis weights
    of ``topology.weights`` (``standard``: W_kl = 1/(1 + max(d_k, d_l))). The step is
    ``alpha_n = step``, ``step/sqrt(n)`` or ``step/n`` by ``schedule``.

    Gade & Vaidya's form (their Sec. II, the baseline of RSS and FS) is selected with
    ``gradient_at = "fused"``, ``box`` and ``topology.weights = "self-inclusive"``::

        v_k      = sum_{l in N_k U {k}} B_kl x_l^(n-1)          (information fusion)
        x_k^(n)  = P_X[ v_k - alpha_n grad f_k(v_k) ]           (projected gradient step)

    with X = [-box, box]^D (``box = inf``: no projection). ``init`` places x^(0): ``zero``
    (the default), ``spread`` over the box by agent id, or ``uniform`` in the box.

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
        box: float = math.inf
        gradient_at: str = "own"
        init: str = "zero"

    positive = ("step",)
    choices = {**Algorithm.choices, "init": INITS, "gradient_at": GRADIENT_POINTS}
    #: the note the ledger keeps with phase "x" releases
    release_note: ClassVar[str] = ""
    #: whether phase "x" is sent (through a persistent channel); methods that override
    #: :meth:`fuse` to send something else set it False
    sends_x: ClassVar[bool] = True

    @classmethod
    def validate(cls, params) -> None:
        super().validate(params)
        if not params.box > 0:
            raise ConfigError(f"algorithm.box = {params.box} must be positive for {cls.name!r}",
                              "give the half-width of the box X = [-box, box]^D, or inf for none")
        if params.init != "zero" and not math.isfinite(params.box):
            raise ConfigError(f"algorithm.init = {params.init!r} needs a finite algorithm.box",
                              "set algorithm.box (the initial points are placed in the box)")

    def __init__(self, agent, params) -> None:
        super().__init__(agent, params)
        net = agent.net
        self.self_weight, self.neighbor_weights = agent.mixing_row()
        # x^(n) and x^(n+1) live in two buffers, those of a persistent broadcast when x is
        # sent: the step writes the next iterate into the buffer the last one is not in,
        # so the exchange runs on fixed buffers (set up once) and the previous iterate
        # stays readable until the step after.
        dim = agent.problem.n_features
        if self.sends_x:
            channel = net.broadcast_channel("x", dim, buffers=2)
            buffers, self._received = channel.sends, channel.received
            self._exchange = channel.exchange
        else:
            buffers, self._received = (np.zeros(dim), np.zeros(dim)), np.zeros((net.n_in, dim))
        self.x, self._spare = buffers
        self.x[...] = initial_point(agent, params.init, params.box)
        # A release only wraps its buffer, so each buffer's release is made once.
        self._release, self._spare_release = (
            Release.nonprivate(buffer, self.release_note) for buffer in buffers)
        #: the function whose gradient the agent follows (FS replaces it by f-hat)
        self.objective = agent.problem
        #: where the last gradient was taken (v_k, or x_k for gradient_at = "own")
        self.gradient_point = self.x
        # Fixed for the run; read once here rather than on every step.
        self._fused = self.fused_gradient
        self._projected = math.isfinite(params.box)  # no projection onto X = R^D
        self._constant_step = params.schedule == "constant"

    @property
    def fused_gradient(self) -> bool:
        """Whether the gradient is taken at the fused point v (Gade & Vaidya's form)."""
        return self.params.gradient_at == "fused"

    def fuse(self, alpha: float) -> np.ndarray:
        """Phase "x": broadcast x, return sum_l W_kl x_l over N_k U {k}."""
        received = self._exchange(self._release)
        return self.self_weight * self.x + self.neighbor_weights @ received

    def step(self, n: int) -> None:
        params = self.params
        alpha = (params.step if self._constant_step
                 else step_size(params.schedule, params.step, n))
        v = self.fuse(alpha)  # no fuse changes self.x
        point = self.gradient_point = v if self._fused else self.x
        x = self._spare
        np.subtract(v, alpha * self.objective.subgradient(point), out=x)
        if self._projected:
            np.clip(x, -params.box, params.box, out=x)
        self._spare, self.x = self.x, x
        self._spare_release, self._release = self._release, self._spare_release

    @property
    def estimate(self) -> np.ndarray:
        return self.x

"""Distributed subgradient descent (Nedic & Ozdaglar 2009), non-private.

Also home of what the methods built on the paper's DGD share (FS runs a DGD; RSS-NB and
RSS-LB take its projected step after their own perturbed fusion), as functions:
:func:`initial_point`, :func:`validate_box` and :func:`projected_step`.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...errors import ConfigError
from ...privacy.release import Release
from ..contract import Algorithm
from ..steps import curvature, step_size

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


@dataclasses.dataclass
class DGDParams:
    """The ``[algorithm]`` keys of DGD (FS adds its own to them)."""

    step: float = 0.05
    schedule: str = "sqrt"
    box: float = math.inf
    gradient_at: str = "own"
    init: str = "zero"


#: the option keys of the DGD family, with their options
DGD_CHOICES = {**Algorithm.choices, "init": INITS, "gradient_at": GRADIENT_POINTS}


def validate_box(name: str, params) -> None:
    """Raise ConfigError for a box X = [-box, box]^D the method cannot use."""
    if not params.box > 0:
        raise ConfigError(f"algorithm.box = {params.box} must be positive for {name!r}",
                          "give the half-width of the box X = [-box, box]^D, or inf for none")
    if params.init != "zero" and not math.isfinite(params.box):
        raise ConfigError(f"algorithm.init = {params.init!r} needs a finite algorithm.box",
                          "set algorithm.box (the initial points are placed in the box)")


def projected_step(v: np.ndarray, alpha: float, gradient: np.ndarray, box: float | None,
                   out: np.ndarray | None = None) -> np.ndarray:
    """``P_X[v - alpha gradient]`` with X = [-box, box]^D (``box`` None: X = R^D), written
    into ``out`` (a new array by default)."""
    x = np.subtract(v, alpha * gradient, out=out)
    if box is not None:
        np.clip(x, -box, box, out=x)
    return x


def box_or_none(box: float) -> float | None:
    """The box of :func:`projected_step`: None when it is infinite (no projection)."""
    return box if math.isfinite(box) else None


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

    Parameters beyond the contract (for a method that runs a DGD, e.g. FS): ``note``, the
    note the ledger keeps with the phase "x" releases. :attr:`objective` is the function
    whose gradient the agent follows (f_k; FS sets its f-hat_k).
    """

    name = "dgd"
    summary = "distributed subgradient descent, Metropolis weights (non-private)"
    Params = DGDParams
    positive = ("step",)
    choices = DGD_CHOICES
    param_checks = (validate_box,)

    def __init__(self, agent, params, note: str = "") -> None:
        super().__init__(agent, params)
        self.self_weight, self.neighbor_weights = agent.mixing_row()
        # x^(n-1) is sent from the channel while x^(n) is computed into channel.outgoing;
        # the clear message is wrapped once per buffer, not once per iteration.
        self.channel = agent.net.broadcast_channel("x", agent.problem.n_features, buffers=2)
        self.channel.wrap(lambda buffer: Release.nonprivate(buffer, note))
        self.x = self.channel.outgoing
        self.x[...] = initial_point(agent, params.init, params.box)
        #: the function whose gradient the agent follows (FS replaces it by f-hat)
        self.objective = agent.problem
        #: where the last gradient was taken (v_k, or x_k for gradient_at = "own")
        self.gradient_point = self.x
        # Fixed for the run; read once here rather than on every step.
        self._fused = params.gradient_at == "fused"
        self._box = box_or_none(params.box)
        self._constant_step = params.schedule == "constant"

    def step(self, n: int) -> None:
        params, channel = self.params, self.channel
        alpha = (params.step if self._constant_step
                 else step_size(params.schedule, params.step, n))
        # phase "x": send x^(n-1), fuse with the neighbours' (x^(n-1) stays in self.x);
        # channel.mix written out (one call less per iteration): last_sent is the payload
        received = channel.exchange(channel.outgoing_release)
        v = self.self_weight * channel.last_sent + self.neighbor_weights @ received
        point = self.gradient_point = v if self._fused else self.x
        self.x = projected_step(v, alpha, self.objective.subgradient(point), self._box,
                                out=channel.outgoing)

    def gradient_step(self, n: int) -> tuple[str, float, float | None]:
        return ("algorithm.step", step_size(self.params.schedule, self.params.step, n),
                curvature(self.objective))

    @property
    def estimate(self) -> np.ndarray:
        return self.x

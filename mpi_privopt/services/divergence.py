"""No silent divergence: an agent whose iterate blows up stops the run and says why.

After every iteration each agent checks its own model w_k (an O(dim) norm, no
communication): a non-finite entry, or ``||w_k|| > DIVERGENCE_FACTOR * scale`` where
``scale = max(||w_k^(0)||, 1)`` is the size the run started from, stops the run. The agent
records ``diverged-agent-K.json`` (iteration, norm, cause, its ledger) and the agents that
diverged at that iteration speak with one message (:mod:`mpi_privopt.services.budget_stop`), exit
status 3. The likely cause is named: the privacy noise when its scale at that iteration is
itself beyond the threshold (a budget spread over too many iterations: the default
experiment with ``run.iterations = 50000`` calibrates a noise of 2.1e108 at n = 1), a step
size or problem the method does not converge on otherwise.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import UserError

__all__ = ["DIVERGENCE_FACTOR", "DIVERGENCE_MODES", "Diverged", "DivergenceGuard", "NoiseWatch"]

#: ``run.on_divergence``: stop the run at the first diverged iterate, or finish it and
#: record the divergence in the summary (for studying a method known to diverge, such as
#: a tracking baseline under noise)
DIVERGENCE_MODES = ("stop", "record")

#: how far beyond its starting size an iterate may grow before the run is stopped
DIVERGENCE_FACTOR = 1e6


class Diverged(UserError):
    """An agent's iterate is not finite or has grown beyond any sane size."""

    status = 3


class NoiseWatch:
    """A release listener remembering the noise scale of the agent's last release."""

    def __init__(self) -> None:
        self.scale: float | None = None

    def on_release(self, release, receivers: Sequence[int], phase: str, round: int) -> None:
        self.watch(release)

    def booker(self, receivers: Sequence[int]):
        """The network's fast path for repeated broadcasts (as the ledger's): without it
        every broadcast would fall back to ``on_release`` for every listener."""
        return self.watch

    def watch(self, release) -> None:
        event = release.event
        scale = getattr(event, "sigma", None)
        if scale is None:
            scale = getattr(event, "scale", None)
        self.scale = scale


class DivergenceGuard:
    """Checks one agent's iterate after every iteration (see the module docstring)."""

    def __init__(self, initial: np.ndarray, noise: NoiseWatch | None = None,
                 factor: float = DIVERGENCE_FACTOR, mode: str = "stop") -> None:
        self.scale = max(float(np.linalg.norm(initial)), 1.0)
        self.limit = factor * self.scale
        self.noise = noise
        self.mode = mode
        #: the first iteration at which the iterate diverged (record mode), else None
        self.first: int | None = None

    def check(self, w: np.ndarray, iteration: int) -> None:
        """Raise :class:`Diverged` if ``w`` is not finite or larger than the limit (in
        record mode remember the first such iteration instead)."""
        with np.errstate(over="ignore", invalid="ignore"):  # inf/nan is the answer here
            norm = float(np.linalg.norm(w))
        if norm <= self.limit:  # also False for nan: checked below
            return
        if self.mode == "record":
            if self.first is None:
                self.first = iteration
            return
        what = (f"the iterate is not finite at iteration {iteration}"
                if not math.isfinite(norm) else
                f"the iterate's norm reached {norm:.3g} at iteration {iteration}, more than "
                f"{self.limit / self.scale:.0e} times its starting size {self.scale:.3g}")
        noise = self.noise.scale if self.noise is not None else None
        if noise is not None and not noise <= self.limit:
            cause = (f"the privacy noise: its scale at this iteration is {noise:.3g} (a budget "
                     "spread over too many iterations, or too small)")
            fix = ("raise privacy.epsilon, or lower run.iterations (the noise is calibrated "
                   "over all of them)")
        else:
            cause = "the method does not converge here: a step size too large for the problem"
            fix = ("lower the step size (algorithm.eta, algorithm.step, ...) or check the "
                   "problem's scale; what was measured up to now is in the run directory")
        raise Diverged(f"{what}; likely cause: {cause}", fix)

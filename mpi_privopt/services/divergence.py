"""No silent divergence: an agent whose iterate blows up stops the run and says why.

After every iteration each agent checks its own model w_k (an O(dim) norm, no
communication): a non-finite entry, or ``||w_k|| > DIVERGENCE_FACTOR * scale`` where
``scale = max(||w_k^(0)||, 1)`` is the size the run started from, stops the run. The agent
records ``diverged-agent-K.json`` (iteration, norm, cause, its ledger) and the agents that
diverged at that iteration speak with one message (:mod:`mpi_privopt.services.budget_stop`), exit
status 3. The likely cause is named from what was measured (:func:`likely_cause`): the
privacy noise when one release's noise is a sizeable share of the iterate (a budget spread
over too many iterations: the default experiment with ``run.iterations = 3000`` releases
noise of norm 1.4e6 by iteration 3, as large as the iterate), else the step size when the
method's gradient step times the curvature it descends exceeds 2, else the method or the
problem's scale.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import UserError

__all__ = ["DIVERGENCE_FACTOR", "DIVERGENCE_MODES", "NOISE_SHARE", "Diverged", "DivergenceGuard",
           "NoiseWatch", "likely_cause"]

#: ``run.on_divergence``: stop the run at the first diverged iterate, or finish it and
#: record the divergence in the summary (for studying a method known to diverge, such as
#: a tracking baseline under noise)
DIVERGENCE_MODES = ("stop", "record")

#: how far beyond its starting size an iterate may grow before the run is stopped
DIVERGENCE_FACTOR = 1e6

#: the share of the iterate's norm from which one release's noise is named as the cause
#: of a divergence (:func:`likely_cause`)
NOISE_SHARE = 0.01


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

    def check(self, w: np.ndarray, iteration: int, method=None) -> None:
        """Raise :class:`Diverged` if ``w`` is not finite or larger than the limit (in
        record mode remember the first such iteration instead); ``method`` (the agent's
        Algorithm) says its gradient step, to name the cause (:func:`likely_cause`)."""
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
        cause, fix = likely_cause(norm if math.isfinite(norm) else self.limit, noise,
                                  w.size, method.gradient_step(iteration)
                                  if method is not None else None,
                                  method.agent.id if method is not None else None)
        raise Diverged(f"{what}; likely cause: {cause}", fix)


def likely_cause(size: float, noise: float | None, dim: int,
                 step: tuple[str, float, float | None] | None,
                 agent: int | None) -> tuple[str, str]:
    """The likely cause of a divergence and its fix, from what was measured.

    ``size``: the iterate's norm (the limit when it is not finite); ``noise``: the scale
    of the agent's last release per coordinate (None: it releases no noise), so one
    release's noise has norm about ``noise * sqrt(dim)``; ``step``: the method's
    ``gradient_step`` (config key, step, curvature L) at that iteration.

    The noise is named when one release's noise is at least :data:`NOISE_SHARE` of the
    iterate: a stable method drifts by the noise it is fed, while an unstable step grows
    the iterate geometrically past any noise. Otherwise the step is named when step x L
    > 2, where a gradient step on an L-smooth function moves away from the minimum
    instead of towards it.
    """
    noise = noise or None  # a release in the clear (scale 0) adds no noise
    noise_norm = noise * math.sqrt(dim) if noise is not None else 0.0
    share = noise_norm / size if size > 0 else math.inf
    if noise is not None and (share >= NOISE_SHARE or not math.isfinite(noise)):
        return (f"the privacy noise: one release's noise has norm about {noise_norm:.3g} "
                f"(scale {noise:.3g} on each of {dim} coordinates), {share:.2g} times the "
                "iterate's (a budget spread over too many iterations, or too small)",
                "raise privacy.epsilon, or lower run.iterations (the noise is calibrated "
                "over all of them)")
    noise_said = ("no privacy noise" if noise is None else
                  f"the privacy noise is {share:.2g} of the iterate's norm")
    if step is not None and step[2] is not None:
        key, value, curvature = step
        product = value * curvature
        against = (f"the gradient step {value:.3g} ({key}) times the curvature of agent "
                   f"{agent}'s objective, L = {curvature:.3g} (its gradient's Lipschitz "
                   f"constant), is {product:.3g}")
        if product > 2:
            return (f"a step size too large for the problem: {against}, above 2, where a "
                    f"gradient step moves away from the minimum ({noise_said})",
                    f"lower {key} so that the step stays below 2 / L = {2 / curvature:.3g} "
                    "(or choose a decreasing algorithm.schedule)")
        return (f"the method does not converge here although {against}, at most 2, and "
                f"{noise_said}: the coupling between the agents or the problem's scale",
                "lower algorithm.rho or the step size, or check the problem's scale; what "
                "was measured up to now is in the run directory")
    if step is not None:  # the step is known, the curvature is not
        key, value, _ = step
        return (f"the method does not converge here ({noise_said}): a step size too large "
                f"for the problem (the gradient step was {value:.3g}, set by {key}; the "
                "problem does not state its curvature, so the step could not be set "
                "against it)",
                f"lower {key} (or choose a decreasing algorithm.schedule), or check the "
                "problem's scale; what was measured up to now is in the run directory")
    return (f"the method does not converge here ({noise_said}): a step size too large for "
            "the problem",
            "lower the step size (algorithm.eta, algorithm.step, ...) or check the "
            "problem's scale; what was measured up to now is in the run directory")

"""Step-size schedules: a number, or a function of the iteration n = 1, 2, ..."""
from __future__ import annotations

import math

SCHEDULES = ("constant", "sqrt", "inverse")


def step_size(schedule: str, base: float, n: int) -> float:
    """The step at iteration ``n``: ``base``, ``base/sqrt(n)`` or ``base/n``."""
    if schedule == "constant":
        return base
    if schedule == "sqrt":
        return base / math.sqrt(n)
    if schedule == "inverse":
        return base / n
    raise ValueError(f"unknown schedule {schedule!r}; valid: {', '.join(SCHEDULES)}")


def curvature(problem) -> float | None:
    """The Lipschitz constant of ``problem``'s gradient, or None where it does not know
    it (a nonsmooth loss, a problem without the constant): what a method's
    ``gradient_step`` sets its step against."""
    smoothness = getattr(problem, "smoothness", None)
    return smoothness() if smoothness is not None else None

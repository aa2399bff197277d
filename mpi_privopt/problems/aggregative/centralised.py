r"""Centralised stochastic gradient descent on an aggregative problem (one process, no MPI).

A check that a task learns, and the noise-free, perfect-communication limit of the
distributed methods: every agent's objective lives in one process, the aggregate and the
average y-gradient are computed exactly, and each block takes the exact gradient of
F^t(x) = sum_i f_i^t(x_i, g^t(x)) (notes 1.1, appendix eq. 53)::

    each iteration t = 0, 1, ...:
        every agent observes one new batch (its history grows)
        y^t = (1/m) sum_i g_i^t(x_i^t)                     exact aggregate
        z^t = (1/m) sum_i nabla_y f_i^t(x_i^t, y^t)         exact average y-gradient
        x_i^{t+1} = x_i^t - step(t) [ nabla_x f_i^t(x_i^t, y^t) + nabla g_i^t(x_i^t) z^t ]

It uses only the ``AggregativeObjective`` methods (observe, aggregate, aggregate_vjp,
grad_x, grad_y), so any aggregative problem can be driven.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["centralised_descent", "total_gradient"]


def total_gradient(objectives: Sequence, blocks: Sequence[np.ndarray]) -> list[np.ndarray]:
    """nabla_{x_i} F^t(x) for every block, with the exact aggregate (no new samples)."""
    m = len(objectives)
    y = sum(o.aggregate(x) for o, x in zip(objectives, blocks)) / m
    z = sum(o.grad_y(x, y) for o, x in zip(objectives, blocks)) / m
    return [o.grad_x(x, y) + o.aggregate_vjp(x, z) for o, x in zip(objectives, blocks)]


def centralised_descent(objectives: Sequence, blocks: Sequence[np.ndarray], iterations: int,
                        step: Callable[[int], float]) -> list[np.ndarray]:
    """Run the iteration above from ``blocks`` (x_i^0); returns the final blocks.

    Parameters
    ----------
    objectives : sequence of AggregativeObjective
        One per agent (each observes from its own sampling stream).
    blocks : sequence of ndarray
        The initial blocks x_i^0 (not modified).
    iterations : int
    step : callable
        t -> step size.
    """
    x = [np.array(b, dtype=np.float64) for b in blocks]
    for t in range(int(iterations)):
        for objective in objectives:
            objective.observe()
        grads = total_gradient(objectives, x)
        lr = float(step(t))
        x = [xi - lr * gi for xi, gi in zip(x, grads)]
    return x

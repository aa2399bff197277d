"""Synthetic linear-model data, reproducible per agent.

Each agent's draw depends only on ``(seed, agent)``: the generator is seeded from
``SeedSequence([seed, 0x5EED, 1, agent])``, never from the rank, the process placement
or the order in which agents are generated. The true parameter ``w0 ~ N(0, I_P)`` is
shared by all agents and drawn from ``SeedSequence([seed, 0x5EED, 0])``, so every agent
can rebuild it without communication.
"""
from __future__ import annotations

import numpy as np

__all__ = ["true_parameter", "synthetic_agent_data"]

_TAG = 0x5EED
_W0_STREAM = 0
_AGENT_STREAM = 1


def true_parameter(seed: int, features: int) -> np.ndarray:
    """The shared ground-truth parameter ``w0 ~ N(0, I_P)``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TAG, _W0_STREAM]))
    return rng.standard_normal(features)


def synthetic_agent_data(
    seed: int,
    agent: int,
    samples: int,
    features: int,
    noise: float,
    task: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Agent ``agent``'s ``(X_k, y_k)``.

    ``X_k ~ N(0, I)`` of shape (samples, features); regression labels are
    ``X_k w0 + noise * N(0, 1)``, classification labels ``sign(X_k w0 + noise * N(0, 1))``
    with sign(0) -> +1, as float64 in {-1, +1}.
    """
    w0 = true_parameter(seed, features)
    rng = np.random.default_rng(np.random.SeedSequence([seed, _TAG, _AGENT_STREAM, agent]))
    X = rng.standard_normal((samples, features))
    z = X @ w0 + noise * rng.standard_normal(samples)
    if task == "classification":
        return X, np.where(z < 0.0, -1.0, 1.0)
    return X, z

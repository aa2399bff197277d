"""The sampling oracle's random rows: minibatches of one agent's own data.

Each agent draws its minibatches from its own generator, seeded from the run seed and the
agent id alone (``SeedSequence(seed)`` spawned per agent, then the agent's first child),
so the batches do not depend on how processes are placed, and they never touch the
agent's other random streams (noise, initialisation).
"""
from __future__ import annotations

import numpy as np

__all__ = ["sampling_rng", "MinibatchSampler"]


def sampling_rng(seed: int, agent: int) -> np.random.Generator:
    """Agent ``agent``'s generator for minibatches.

    The agent's own sequence is ``SeedSequence(seed).spawn(K)[agent]`` (spawn key
    ``(agent,)``, the one the agent's general stream uses); minibatches use its first
    child (spawn key ``(agent, 0)``), independent of K and of every other stream.
    """
    own = np.random.SeedSequence(seed, spawn_key=(int(agent),))
    return np.random.default_rng(own.spawn(1)[0])


class MinibatchSampler:
    """Row indices of minibatches drawn from ``n_samples`` rows with ``rng``.

    Parameters
    ----------
    n_samples : int
        M_k, the number of rows of the agent's data.
    rng : numpy.random.Generator
        The agent's sampling generator (:func:`sampling_rng`).
    """

    def __init__(self, n_samples: int, rng: np.random.Generator) -> None:
        self.n_samples = int(n_samples)
        self.rng = rng

    def draw(self, size: int) -> np.ndarray:
        """``size`` distinct row indices, uniformly without replacement (sorted).

        Successive batches are independent (rows may recur across batches).
        """
        if not 1 <= size <= self.n_samples:
            raise ValueError(f"a minibatch of {size} rows cannot be drawn from "
                             f"{self.n_samples} rows: use 1 <= size <= {self.n_samples}")
        return np.sort(self.rng.choice(self.n_samples, size=int(size), replace=False))

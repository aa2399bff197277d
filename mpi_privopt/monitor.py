"""Evaluation on a separate communicator: distance to the optimum, objective, consensus.

The monitor is an observer outside the algorithm: it gathers every agent's current model
on its own communicator (a duplicate of the world), so none of this is counted as the
algorithm's traffic or privacy loss.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI


@dataclass
class Evaluation:
    """One row of ``metrics.csv``.

    Attributes
    ----------
    error : float
        Normalised error sum_k ||w_k - w_c||^2 / ||w_c||^2 (a sum over agents, so it
        starts at K when every w_k = 0).
    objective_gap : float
        sum_k f_k(w_k) - F(w_c).
    consensus_gap : float
        (1/K) sum_k ||w_k - w_bar||^2.
    """

    iteration: int
    error: float
    objective_gap: float
    consensus_gap: float
    elapsed: float


def normalised_error(W: np.ndarray, w_c: np.ndarray) -> float:
    """sum_k ||W[k] - w_c||^2 / ||w_c||^2 (unnormalised when w_c = 0)."""
    scale = float(w_c @ w_c)
    total = float(np.sum((W - w_c) ** 2))
    return total / scale if scale > 0 else total


def consensus_gap(W: np.ndarray) -> float:
    return float(np.mean(np.sum((W - W.mean(axis=0)) ** 2, axis=1)))


class Monitor:
    """Collective evaluation; rank 0 receives the numbers.

    Parameters
    ----------
    comm : MPI.Intracomm
        The evaluation communicator (never the algorithm's).
    global_problem : GlobalProblem or None
        All agents' objectives, on rank 0 only.
    w_c : numpy.ndarray or None
        The centralised optimum, on rank 0 only.
    optimum_value : float
        F(w_c), on rank 0.
    """

    def __init__(self, comm: MPI.Intracomm, n_features: int, global_problem=None,
                 w_c: np.ndarray | None = None, optimum_value: float = 0.0) -> None:
        self.comm = comm
        self.global_problem = global_problem
        self.w_c = w_c
        self.optimum_value = optimum_value
        self._gathered = (np.empty((comm.Get_size(), n_features))
                          if comm.Get_rank() == 0 else None)

    def gather(self, w: np.ndarray) -> np.ndarray | None:
        """Every agent's model stacked K x P on rank 0 (None elsewhere)."""
        self.comm.Gather(np.ascontiguousarray(w, dtype=np.float64), self._gathered, root=0)
        return self._gathered

    def evaluate(self, iteration: int, w: np.ndarray, elapsed: float) -> Evaluation | None:
        W = self.gather(w)
        if W is None:
            return None
        return Evaluation(
            iteration=iteration,
            error=normalised_error(W, self.w_c),
            objective_gap=self.global_problem.value_at(W) - self.optimum_value,
            consensus_gap=consensus_gap(W),
            elapsed=elapsed,
        )

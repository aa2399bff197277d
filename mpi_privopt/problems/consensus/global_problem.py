"""The centralised objective ``F(w) = sum_k f_k(w)``: evaluation and reference only.

An agent never builds this: it holds every agent's data.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mpi_privopt.errors import ConfigError
from mpi_privopt.problems.consensus.local import LocalProblem

__all__ = ["GlobalProblem"]


def sum_of_local_values(locals_: Sequence, n_features: int, W: np.ndarray) -> float:
    """``sum_k f_k(W[k])``: each local objective at its agent's row of ``W`` (K, P)."""
    W = np.asarray(W, dtype=float)
    if W.shape != (len(locals_), n_features):
        raise ValueError(f"W has shape {W.shape}, expected {(len(locals_), n_features)}")
    return float(sum(lp.value(W[k]) for k, lp in enumerate(locals_)))


class GlobalProblem:
    """All agents' local problems together.

    ``F(w) = sum_k f_k(w) = sum_k mean_j loss_kj(w) + R(w)``: equivalently a single
    weighted problem over the stacked samples with weight ``1 / M_k`` on agent k's rows.

    Parameters
    ----------
    locals : list of LocalProblem
        One per agent, in agent order; they must share loss, l1, l2, P, and have
        ``n_agents == len(locals)`` so that R is counted exactly once.
    """

    def __init__(self, locals: list[LocalProblem]) -> None:
        locals = list(locals)
        if not locals:
            raise ConfigError("a GlobalProblem needs at least one agent", "pass one LocalProblem per agent")
        first = locals[0]
        for k, lp in enumerate(locals):
            mismatch = [
                attr
                for attr in ("n_features", "l1", "l2", "loss")
                if getattr(lp, attr) != getattr(first, attr)
            ]
            if mismatch:
                raise ConfigError(
                    f"agent {k}'s local problem differs from agent 0's in {mismatch}",
                    "build every agent's problem from the same [problem] section and l1 value",
                )
            if lp.n_agents != len(locals):
                raise ConfigError(
                    f"agent {k} was built for K = {lp.n_agents} agents but {len(locals)} were given",
                    "build the local problems with n_agents equal to the number of agents",
                )
        self.locals = locals
        self.n_agents = len(locals)
        self.n_features = first.n_features
        self.loss = first.loss
        self.l1 = first.l1
        self.l2 = first.l2
        self.X = np.vstack([lp.X for lp in locals])
        self.y = np.concatenate([lp.y for lp in locals])
        # F weights each sample of agent k by 1 / M_k
        self.weights = np.concatenate([np.full(lp.n_samples, 1.0 / lp.n_samples) for lp in locals])

    def __repr__(self) -> str:
        return (
            f"GlobalProblem(loss={self.loss.name}, K={self.n_agents}, N={len(self.y)}, "
            f"P={self.n_features}, l1={self.l1:g}, l2={self.l2:g})"
        )

    def data_value(self, w: np.ndarray) -> float:
        """``sum_k mean_j loss_kj(w)``."""
        return float(self.weights @ self.loss.value(self.X @ w, self.y))

    def value(self, w: np.ndarray) -> float:
        """``F(w) = sum_k f_k(w)`` (unclipped)."""
        w = np.asarray(w, dtype=float)
        return self.data_value(w) + self.l1 * float(np.abs(w).sum()) + self.l2 * float(w @ w)

    def value_at(self, W: np.ndarray) -> float:
        """``sum_k f_k(W[k])`` for per-agent estimates ``W`` of shape (K, P)."""
        return sum_of_local_values(self.locals, self.n_features, W)

    def smooth_gradient(self, w: np.ndarray) -> np.ndarray:
        """Unclipped gradient of ``F`` without its l1 term (a subgradient for nonsmooth losses)."""
        d = self.loss.derivative(self.X @ w, self.y)
        return self.X.T @ (self.weights * d) + 2.0 * self.l2 * w

    def subgradient(self, w: np.ndarray, *, clipped: bool = False) -> np.ndarray:
        """A subgradient of ``F`` (sign(0) = 0).

        By default unclipped (of the true objective); ``clipped=True`` sums the agents'
        clipped oracles instead.
        """
        w = np.asarray(w, dtype=float)
        if clipped:
            return np.sum([lp.subgradient(w, clipped=True) for lp in self.locals], axis=0)
        return self.smooth_gradient(w) + self.l1 * np.sign(w)

    def hessian(self, w: np.ndarray) -> np.ndarray:
        """Hessian of the smooth part (smooth losses only), P x P."""
        h = self.weights * self.loss.curvature(self.X @ w, self.y)
        return (self.X.T * h) @ self.X + 2.0 * self.l2 * np.eye(self.n_features)

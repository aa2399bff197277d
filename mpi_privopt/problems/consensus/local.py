"""One agent's local objective ``f_k(w) = (1/M_k) sum_j loss_kj(w) + (1/K) R(w)``."""
from __future__ import annotations

import numpy as np

from mpi_privopt.errors import DataError
from mpi_privopt.problems.config import ProblemConfig, problem_loss, resolve_l2
from mpi_privopt.problems.consensus.losses import Loss, make_loss
from mpi_privopt.problems.metrics import (
    LOCAL, REFERENCE, AgentMetrics, ConsensusToReference, Evaluator, Metric)
from mpi_privopt.problems.consensus.regularizers import penalty_value
from mpi_privopt.problems.sampling import MinibatchSampler

__all__ = ["LocalProblem", "make_local_problem"]


class LocalProblem:
    """``f_k`` for one agent: its data, loss, regulariser share 1/K, and clipping.

    Parameters
    ----------
    X : ndarray, shape (M_k, P)
        This agent's features.
    y : ndarray, shape (M_k,)
        This agent's labels.
    loss : Loss or str
        The per-sample loss, or its name in :data:`LOSSES`.
    l1, l2 : float
        Coefficients of ``R(w) = l1 ||w||_1 + l2 ||w||^2`` (the global regulariser;
        each agent carries ``R / K``).
    n_agents : int
        K.
    clip : float, optional
        Per-sample gradient clipping threshold c1; ``<= 0`` or None is off.
    huber_delta : float, optional
        Used only when ``loss`` is the string "huber".
    rng : numpy.random.Generator, optional
        The agent's sampling generator (:func:`~mpi_privopt.problems.sampling.sampling_rng`)
        for the sampling oracle (:meth:`minibatch`, :meth:`stochastic_subgradient`);
        without it the oracle is unavailable.

    Notes
    -----
    Clipping changes only the gradient oracle (:meth:`loss_gradient`, :meth:`subgradient`):
    the agents then follow the gradient of a clipped surrogate, while :meth:`value`
    stays the true unclipped ``f_k``.
    """

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        loss: Loss | str,
        l1: float,
        l2: float,
        n_agents: int,
        clip: float | None = 0.0,
        huber_delta: float = 1.0,
        rng: np.random.Generator | None = None,
    ) -> None:
        X = np.ascontiguousarray(X, dtype=np.float64)
        y = np.ascontiguousarray(y, dtype=np.float64)
        if X.ndim != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
            raise DataError(
                f"local data must be X of shape (M, P) and y of shape (M,) with M >= 1, "
                f"got X {X.shape} and y {y.shape}",
                "pass one row of X per label and at least one sample",
            )
        self.loss: Loss = make_loss(loss, huber_delta) if isinstance(loss, str) else loss
        self.X = X
        self.y = y
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self.n_agents = int(n_agents)
        self.l1 = float(l1)
        self.l2 = float(l2)
        self.clip = float(clip) if clip is not None and clip > 0 else 0.0
        # row norms are fixed: clipping and gradient bounds reuse them every iteration
        self.row_norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        self._lambda_max: float | None = None
        # The gradient runs every iteration and, for the papers' small models, costs a few
        # microseconds of which most is per-operation overhead: fold every constant once.
        self._inv_samples = 1.0 / self.n_samples
        self._l1_share = self.l1 / self.n_agents
        self._l2_share = 2.0 * self.l2 / self.n_agents
        self.sampler = MinibatchSampler(self.n_samples, rng) if rng is not None else None

    def __repr__(self) -> str:
        return (
            f"LocalProblem(loss={self.loss.name}, M={self.n_samples}, P={self.n_features}, "
            f"K={self.n_agents}, l1={self.l1:g}, l2={self.l2:g}, clip={self.clip:g})"
        )

    # -- values ------------------------------------------------------------------------

    def data_value(self, w: np.ndarray) -> float:
        """``(1/M_k) sum_j loss(x_j^T w, y_j)``."""
        return float(np.mean(self.loss.value(self.X @ w, self.y)))

    def value(self, w: np.ndarray) -> float:
        """``f_k(w)`` (unclipped)."""
        return self.data_value(w) + penalty_value(w, self.l1, self.l2) / self.n_agents

    # -- gradients ---------------------------------------------------------------------

    def per_sample_gradients(self, w: np.ndarray) -> np.ndarray:
        """Unclipped per-sample loss (sub)gradients, shape (M_k, P)."""
        return self.loss.derivative(self.X @ w, self.y)[:, None] * self.X

    def clip_factors(self, d: np.ndarray) -> np.ndarray:
        """``min(1, c1 / ||g_j||)`` per sample for derivatives ``d`` (ones if clipping is off)."""
        if not self.clip:
            return np.ones_like(d)
        return self._clip_factors(d, self.row_norms)

    def _clip_factors(self, d: np.ndarray, row_norms: np.ndarray) -> np.ndarray:
        # ||g_j|| = |d_j| ||x_j||; c1 / max(||g_j||, c1) avoids dividing by a zero norm
        return self.clip / np.maximum(np.abs(d) * row_norms, self.clip)

    def loss_gradient(self, w: np.ndarray, *, clipped: bool = True) -> np.ndarray:
        """``(1/M_k) sum_j clip(g_j)``: the data term only.

        ``clipped=False`` gives the unclipped data (sub)gradient.
        """
        return self._data_gradient(self.X, self.y, self.row_norms, self._inv_samples, w,
                                   clipped)

    def _data_gradient(self, X: np.ndarray, y: np.ndarray, row_norms: np.ndarray,
                       inv_rows: float, w: np.ndarray, clipped: bool) -> np.ndarray:
        # the one formula of the (clipped) mean data gradient, on all rows or a batch
        d, scale = self.loss.scaled_derivative(X @ w, y)
        if clipped and self.clip:
            d = d * scale  # clipping needs the derivative itself
            d *= self._clip_factors(d, row_norms)
            scale = 1.0
        gradient = X.T @ d
        gradient *= scale * inv_rows
        return gradient

    # -- sampling oracle ---------------------------------------------------------------

    def minibatch(self, size: int) -> np.ndarray:
        """Row indices of a fresh minibatch of ``size`` of this agent's own rows.

        Drawn without replacement from the agent's sampling generator.
        """
        if self.sampler is None:
            raise ValueError("this local problem was built without a sampling generator: "
                             "pass rng= (the engine passes sampling_rng(seed, agent))")
        return self.sampler.draw(size)

    def batch_loss_gradient(self, w: np.ndarray, rows: np.ndarray, *,
                            clipped: bool = True) -> np.ndarray:
        """The data gradient of :meth:`loss_gradient` on the rows ``rows`` only."""
        rows = np.asarray(rows)
        return self._data_gradient(self.X[rows], self.y[rows], self.row_norms[rows],
                                   1.0 / rows.size, w, clipped)

    def stochastic_subgradient(self, w: np.ndarray, size: int, *,
                               clipped: bool = True) -> np.ndarray:
        """:meth:`subgradient` with the data term on a fresh minibatch of ``size`` rows."""
        gradient = self.batch_loss_gradient(w, self.minibatch(size), clipped=clipped)
        return self._add_penalty_subgradient(gradient, w)

    def subgradient(self, w: np.ndarray, *, clipped: bool = True) -> np.ndarray:
        """``loss_gradient(w) + (1/K) R'(w)``, sign(0) = 0 for the l1 part; R' is never clipped."""
        # loss_gradient's body, one call less: this runs every iteration of every method
        gradient = self._data_gradient(self.X, self.y, self.row_norms, self._inv_samples, w,
                                       clipped)
        return self._add_penalty_subgradient(gradient, w)

    def _add_penalty_subgradient(self, gradient: np.ndarray, w: np.ndarray) -> np.ndarray:
        # Added in place, with the 1/K shares folded once: this runs every iteration.
        if self._l2_share:
            gradient += self._l2_share * w
        if self._l1_share:
            gradient += self._l1_share * np.sign(w)
        return gradient

    # -- metrics -----------------------------------------------------------------------

    def evaluator(self, mode: str, reference=None) -> Evaluator | None:
        """The metrics of this consensus problem in evaluation mode ``mode``.

        ``reference``: error, objective gap and consensus gap to ``reference`` (a
        :class:`~mpi_privopt.problems.reference.solution.ReferenceSolution`). ``local``: objective
        sum_k f_k(w_k), mean training loss, and mean training accuracy for classification.
        ``none``: None (nothing is measured).
        """
        if mode == REFERENCE:
            return ConsensusToReference(self.value, reference.w, reference.value)
        if mode != LOCAL:
            return None
        metrics = [Metric("objective", "sum"), Metric("training_loss", "mean")]
        if self.loss.task == "classification":
            metrics.append(Metric("training_accuracy", "mean"))
            return AgentMetrics(metrics, lambda w, _: (self.value(w), self.data_value(w),
                                                       self.accuracy(w)))
        return AgentMetrics(metrics, lambda w, _: (self.value(w), self.data_value(w)))

    def accuracy(self, w: np.ndarray) -> float:
        """Fraction of this agent's rows whose label has the sign of ``x^T w`` (classification)."""
        return float(np.mean(np.where(self.X @ w >= 0, 1.0, -1.0) == self.y))

    # -- constants ---------------------------------------------------------------------

    def gradient_bound(self, radius: float) -> float:
        """Upper bound on the unclipped per-sample loss (sub)gradient norm over ``||w|| <= radius``.

        Max over this agent's samples of ``||x_j|| * |loss'|``-bound: squared
        ``2 ||x|| (||x|| R + |y|)``, absolute ``||x||``, hinge ``|y| ||x||``, huber
        ``min(delta, ||x|| R + |y|) ||x||``, logistic ``|y| sigma(|y| ||x|| R) ||x|| <= ||x||``.
        With clipping on, the clipped gradients are bounded by ``min(clip, this)``.
        """
        if radius < 0:
            raise ValueError(f"radius = {radius} must be >= 0")
        bounds = self.loss.derivative_bound(self.row_norms, self.y, float(radius))
        return float(np.max(self.row_norms * bounds))

    def lambda_max(self) -> float:
        """Largest eigenvalue of ``X_k^T X_k`` (cached)."""
        if self._lambda_max is None:
            self._lambda_max = float(np.linalg.norm(self.X, 2) ** 2)
        return self._lambda_max

    def smoothness(self) -> float | None:
        """Lipschitz constant of the gradient of the smooth part of ``f_k``, or None.

        ``max_curvature * lambda_max(X^T X) / M_k + 2 l2 / K`` (squared: curvature 2,
        huber 1, logistic 1/4); None for nonsmooth losses. The l1 term is not smooth and
        is not included; the constant is for the unclipped gradient.
        """
        if not self.loss.smooth:
            return None
        data = self.loss.max_curvature * self.lambda_max() / self.n_samples
        return data + 2.0 * self.l2 / self.n_agents


def make_local_problem(
    cfg: ProblemConfig, X: np.ndarray, y: np.ndarray, n_agents: int, l1_value: float,
    rng: np.random.Generator | None = None,
) -> LocalProblem:
    """Build agent k's :class:`LocalProblem` from the config and its data.

    ``l1_value`` is the numeric l1 from :func:`resolve_l1` (it may need global data);
    l2, the loss (with its override and huber_delta) and clip come from ``cfg``; ``rng``
    is the agent's sampling generator (optional).
    """
    return LocalProblem(
        X,
        y,
        problem_loss(cfg),
        l1=l1_value,
        l2=resolve_l2(cfg),
        n_agents=n_agents,
        clip=cfg.clip,
        rng=rng,
    )

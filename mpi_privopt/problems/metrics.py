"""What a problem measures: metrics as reductions of per-agent quantities.

A problem states its metrics by handing the monitor an :class:`Evaluator` for the run's
evaluation mode (``run.evaluate``). The evaluator never communicates: the monitor (engine
layer) does the reductions, in at most two rounds per evaluation:

1. optionally an **aggregate**: every agent computes its share (a vector of length
   ``aggregate_size``) with :meth:`Evaluator.aggregate_share`; the monitor averages the
   shares over the agents and hands the mean back to every agent;
2. the **terms**: every agent computes a few scalars with :meth:`Evaluator.terms` (given
   the aggregate); the monitor stacks them K x n on rank 0, where :meth:`Evaluator.combine`
   turns them into the metric columns of ``metrics.csv``.

Which metrics exist in which mode
---------------------------------
``reference`` (simulation)
    May use a centralised reference solution computed once from every agent's data, and
    may reduce vectors (the average model, an r-vector aggregate). Consensus problems
    report :class:`ConsensusToReference`: ``error``, ``objective_gap``, ``consensus_gap``.
``local``
    Each agent evaluates itself; only scalars are reduced: terms, and an aggregate only if
    it is a scalar (``aggregate_size <= 1``; the monitor refuses more). Consensus problems
    report :class:`AgentMetrics`: ``objective`` (sum_k f_k(w_k)), ``training_loss``
    (mean over agents of the data loss) and, for classification, ``training_accuracy``.
    An aggregative problem (F(x) = sum_i f_i(x_i, g(x)), g = (1/m) sum_i g_i(x_i)) has
    ``cost`` F(x) here when its aggregate is scalar (r = 1), and per-agent training loss
    and test accuracy in any case.
``none`` (deployment)
    No metric: nothing is reduced during the run (the problem returns no evaluator).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["EVALUATE_MODES", "REFERENCE", "LOCAL", "NONE", "Evaluator", "Metric",
           "AgentMetrics", "ConsensusToReference", "REDUCTIONS"]

REFERENCE, LOCAL, NONE = "reference", "local", "none"
#: the values of ``run.evaluate``
EVALUATE_MODES = (REFERENCE, LOCAL, NONE)


def _ordered_sum(column: np.ndarray) -> float:
    # agent order, left to right: the same number whatever the MPI reduction tree
    return float(sum(column.tolist()))


def _squared_distance(w: np.ndarray, v: np.ndarray) -> float:
    return float(np.sum((w - v) ** 2))


#: how per-agent scalars are combined into one metric value
REDUCTIONS: dict[str, Callable[[np.ndarray], float]] = {
    "sum": _ordered_sum,
    "mean": lambda column: float(np.mean(column)),
    "max": lambda column: float(np.max(column)),
}


class Evaluator(Protocol):
    """The metrics of one problem in one evaluation mode (see the module docstring)."""

    #: metric column names, in ``metrics.csv`` order
    columns: tuple[str, ...]
    #: length of the vector averaged over agents before the terms (0: no aggregate)
    aggregate_size: int

    def aggregate_share(self, w: np.ndarray) -> np.ndarray:
        """This agent's share of the aggregate (averaged over agents by the monitor)."""
        ...

    def terms(self, w: np.ndarray, aggregate: np.ndarray | None) -> np.ndarray:
        """This agent's scalars, given the averaged aggregate (None without one)."""
        ...

    def combine(self, terms: np.ndarray) -> dict[str, float]:
        """The metric columns from every agent's terms (K x n, row k = agent k)."""
        ...


@dataclass(frozen=True)
class Metric:
    """One column: a per-agent scalar and the reduction over agents (a key of REDUCTIONS)."""

    name: str
    reduce: str


class AgentMetrics:
    """Metrics that are plain reductions of per-agent scalars (no reference needed).

    Parameters
    ----------
    metrics : sequence of Metric
        The columns and how each is reduced.
    terms : callable
        ``terms(w, aggregate)`` -> one scalar per metric, for this agent.
    aggregate : callable, optional
        ``aggregate(w)`` -> this agent's share of an aggregate of length
        ``aggregate_size`` (for aggregative problems).
    aggregate_size : int
        0 without an aggregate.
    """

    def __init__(self, metrics: Sequence[Metric],
                 terms: Callable[[np.ndarray, np.ndarray | None], Sequence[float]],
                 aggregate: Callable[[np.ndarray], np.ndarray] | None = None,
                 aggregate_size: int = 0) -> None:
        unknown = [m.reduce for m in metrics if m.reduce not in REDUCTIONS]
        if unknown:
            raise ValueError(f"unknown reductions {unknown}; use one of {list(REDUCTIONS)}")
        if (aggregate is None) != (aggregate_size == 0):
            raise ValueError("give an aggregate function exactly when aggregate_size > 0")
        self.metrics = tuple(metrics)
        self.columns = tuple(m.name for m in self.metrics)
        self.aggregate_size = int(aggregate_size)
        self._terms = terms
        self._aggregate = aggregate

    def aggregate_share(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(self._aggregate(w), dtype=np.float64).reshape(self.aggregate_size)

    def terms(self, w: np.ndarray, aggregate: np.ndarray | None) -> np.ndarray:
        return np.asarray(self._terms(w, aggregate), dtype=np.float64).reshape(len(self.metrics))

    def combine(self, terms: np.ndarray) -> dict[str, float]:
        return {m.name: REDUCTIONS[m.reduce](terms[:, i]) for i, m in enumerate(self.metrics)}


class ConsensusToReference:
    """Distance of consensus iterates to the centralised optimum (``reference`` mode only).

    Columns
    -------
    error
        ``sum_k ||w_k - w_c||^2 / ||w_c||^2`` (unnormalised when w_c = 0); a sum over
        agents, so it starts at K when every w_k = 0.
    objective_gap
        ``sum_k f_k(w_k) - F(w_c)``.
    consensus_gap
        ``(1/K) sum_k ||w_k - w_bar||^2``, w_bar the average model (the aggregate).

    Parameters
    ----------
    value : callable
        This agent's objective f_k.
    w_c : ndarray
        The centralised optimum (known to every agent in reference mode).
    optimum_value : float
        F(w_c).
    """

    columns = ("error", "objective_gap", "consensus_gap")

    def __init__(self, value: Callable[[np.ndarray], float], w_c: np.ndarray,
                 optimum_value: float) -> None:
        self._value = value
        self.w_c = np.ascontiguousarray(w_c, dtype=np.float64)
        self.optimum_value = float(optimum_value)
        self.aggregate_size = self.w_c.size

    def aggregate_share(self, w: np.ndarray) -> np.ndarray:
        return w  # averaged: the network's average model w_bar

    def terms(self, w: np.ndarray, aggregate: np.ndarray | None) -> np.ndarray:
        return np.append(self.local_terms(w), _squared_distance(w, aggregate))

    # One round instead of two: the term that needs the aggregate depends on the agent's
    # share (its model) alone, so whoever holds every share computes it.
    def local_terms(self, w: np.ndarray) -> np.ndarray:
        """The terms that do not need the aggregate: distance to w_c and f_k(w)."""
        return np.array([_squared_distance(w, self.w_c), self._value(w)])

    def combine_gathered(self, shares: np.ndarray, local_terms: np.ndarray) -> dict[str, float]:
        """:meth:`combine` from every agent's share (K x P) and :meth:`local_terms`; the same
        numbers as the two rounds (the mean of the shares, then each agent's distance)."""
        aggregate = shares.mean(axis=0)
        gaps = [_squared_distance(w, aggregate) for w in shares]
        return self.combine(np.column_stack([local_terms, gaps]))

    def combine(self, terms: np.ndarray) -> dict[str, float]:
        scale = float(self.w_c @ self.w_c)
        distance = _ordered_sum(terms[:, 0])
        return {"error": distance / scale if scale > 0 else distance,
                "objective_gap": _ordered_sum(terms[:, 1]) - self.optimum_value,
                "consensus_gap": float(np.mean(terms[:, 2]))}

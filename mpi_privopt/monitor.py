"""Evaluation on a separate communicator: metrics as reductions of per-agent quantities.

The monitor is an observer outside the algorithm: it talks on its own communicator (a
duplicate of the world), so none of this is counted as the algorithm's traffic or privacy
loss. It does the communication of the problem's :class:`~mpi_privopt.problems.metrics.Evaluator`
(which never communicates itself): per evaluation,

1. an aggregate, if the evaluator has one: every agent's share is gathered on rank 0,
   averaged in agent order and broadcast back (``reference`` mode; in ``local`` mode only a
   scalar aggregate is allowed);
2. the terms: every agent's scalars, with its two cost counters appended (the bytes it
   has sent so far, all links, algorithm traffic only; its ledger's worst per-link
   epsilon), gathered K x n on rank 0, which combines them into one ``metrics.csv`` row.

Reductions are done on rank 0 in agent order rather than by ``MPI_Allreduce``, whose
association may depend on the process placement: same seed, same numbers, bitwise. In
``none`` mode (deployment) the monitor sends nothing at all during the run.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from .problems.metrics import LOCAL, Evaluator
from .traffic import TrafficMeter

#: the cost columns every metrics row carries after the problem's metrics
COST_COLUMNS = ("bytes_total", "worst_link_epsilon")


@dataclass
class Evaluation:
    """One row of ``metrics.csv``.

    Attributes
    ----------
    iteration : int
    values : dict
        The problem's metrics in this mode, column -> value (see
        :mod:`mpi_privopt.problems.metrics`); also readable as ``row["error"]`` or
        ``row.error``.
    elapsed : float
        Seconds of algorithm time so far (evaluation excluded).
    bytes_total : int
        Payload bytes the algorithm has sent so far, summed over all links.
    worst_link_epsilon : float
        The largest per-link privacy loss booked so far (at the run's delta).
    """

    iteration: int
    values: dict[str, float]
    elapsed: float
    bytes_total: int = 0
    worst_link_epsilon: float = 0.0

    def __getitem__(self, column: str) -> float:
        return self.values[column]

    def __getattr__(self, name: str) -> float:
        # only reached when ``name`` is not a field: a metric column
        values = self.__dict__.get("values")
        if values is not None and name in values:
            return values[name]
        raise AttributeError(name)


def sent_bytes(meter: TrafficMeter) -> int:
    """Payload bytes one agent has sent so far, over all its out-links and phases."""
    return sum(int(c.per_link("bytes").sum()) for c in meter.by_phase.values())


class Monitor:
    """Collective evaluation; rank 0 receives the rows.

    Parameters
    ----------
    comm : MPI.Intracomm
        The evaluation communicator (never the algorithm's).
    evaluator : Evaluator or None
        This agent's metrics (None: ``run.evaluate = "none"``, nothing is evaluated).
    mode : str
        ``run.evaluate``.
    """

    def __init__(self, comm: MPI.Intracomm, evaluator: Evaluator | None, mode: str) -> None:
        self.comm = comm
        self.evaluator = evaluator
        self.mode = mode
        self.root = comm.Get_rank() == 0
        K = comm.Get_size()
        r = evaluator.aggregate_size if evaluator is not None else 0
        if mode == LOCAL and r > 1:
            raise ValueError(f"run.evaluate = \"local\" reduces only scalars, but the "
                             f"problem's metrics need an aggregate of {r} numbers")
        self.columns: tuple[str, ...] = evaluator.columns if evaluator is not None else ()
        self._aggregate = np.empty(r)
        self._shares = np.empty((K, r)) if self.root and r else None
        self._terms = np.empty((K, len(self.columns) + len(COST_COLUMNS))) if self.root else None

    @property
    def active(self) -> bool:
        """Whether anything is evaluated (False in ``none`` mode)."""
        return self.evaluator is not None

    def evaluate(self, iteration: int, w: np.ndarray, elapsed: float, bytes_sent: int,
                 worst_link_epsilon: float) -> Evaluation | None:
        """Collective: this agent's model ``w`` and cost counters into one row on rank 0."""
        evaluator = self.evaluator
        if evaluator is None:
            return None
        w = np.ascontiguousarray(w, dtype=np.float64)
        aggregate = None
        if self._aggregate.size:
            share = np.ascontiguousarray(evaluator.aggregate_share(w), dtype=np.float64)
            self.comm.Gather(share, self._shares, root=0)
            if self.root:
                self._aggregate[:] = self._shares.mean(axis=0)
            self.comm.Bcast(self._aggregate, root=0)
            aggregate = self._aggregate
        mine = np.concatenate([evaluator.terms(w, aggregate),
                               [float(bytes_sent), float(worst_link_epsilon)]])
        self.comm.Gather(mine, self._terms, root=0)
        if not self.root:
            return None
        n = len(self.columns)
        return Evaluation(iteration=iteration, values=evaluator.combine(self._terms[:, :n]),
                          elapsed=elapsed, bytes_total=int(self._terms[:, n].sum()),
                          worst_link_epsilon=float(self._terms[:, n + 1].max()))

    def gather_models(self, w: np.ndarray) -> np.ndarray | None:
        """Every agent's model stacked K x P on rank 0 (``reference`` mode only)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        stacked = np.empty((self.comm.Get_size(), w.size)) if self.root else None
        self.comm.Gather(w, stacked, root=0)
        return stacked

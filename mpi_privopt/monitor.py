"""Evaluation on a separate communicator: metrics as reductions of per-agent quantities.

The monitor is an observer outside the algorithm: it talks on its own communicator (a
duplicate of the world), so none of this is counted as the algorithm's traffic or privacy
loss. It does the communication of the problem's :class:`~mpi_privopt.problems.metrics.Evaluator`
(which never communicates itself). Per evaluation, **one nonblocking gather** to rank 0 of
every agent's row:

* the evaluator's terms. When the terms need an aggregate (the average model in
  ``reference`` mode), an evaluator that can combine from the shares themselves
  (``combine_gathered``: the consensus metrics) sends its share beside the other terms and
  rank 0 does the rest; otherwise the aggregate is a blocking round first (every agent's
  share gathered on rank 0, averaged in agent order, broadcast back), as for the
  aggregative problems;
* the agent's two cost counters: the bytes it has sent so far (all links, algorithm
  traffic only) and the :meth:`~mpi_privopt.privacy.accountants.HeadlineAccountant.exposure`
  of its most exposed link (the totals its epsilon depends on, not the epsilon: rank 0
  converts the largest once for all agents, so the other ranks need no root finder).

Rank 0 combines each row in agent order (not by ``MPI_Allreduce``, whose association may
depend on the process placement: same seed, same numbers, bitwise). The other ranks do not
wait for the gather: they post their row and go on iterating, and rank 0 completes the rows
in order as they arrive (so the progress lines may trail by an iteration or two), all of
them by :meth:`Monitor.flush` at the end (and when an agent stops the run: the engine
flushes before it leaves). Measured in docs/performance.md ("Scale"): one nonblocking
gather instead of three collectives and a barrier took the evaluation from about 70% of a
50-rank run to under 10%. In ``none`` mode (deployment) the monitor sends nothing at all during the run.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from .privacy.accountants import HeadlineAccountant, most_exposed
from .problems.metrics import LOCAL, Evaluator
from .network.traffic import TrafficMeter

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
    delta : float
        The delta of the worst-link epsilon column.
    """

    #: rows a rank leaves in flight before it waits for the oldest
    MAX_IN_FLIGHT = 64

    def __init__(self, comm: MPI.Intracomm, evaluator: Evaluator | None, mode: str,
                 delta: float = 1e-5) -> None:
        self.comm = comm
        self.evaluator = evaluator
        self.mode = mode
        self.delta = delta
        self.root = comm.Get_rank() == 0
        K = comm.Get_size()
        r = evaluator.aggregate_size if evaluator is not None else 0
        if mode == LOCAL and r > 1:
            raise ValueError(f"run.evaluate = \"local\" reduces only scalars, but the "
                             f"problem's metrics need an aggregate of {r} numbers")
        self.columns: tuple[str, ...] = evaluator.columns if evaluator is not None else ()
        #: the shares travel with the terms and rank 0 combines (one round)
        self._with_shares = r > 0 and hasattr(evaluator, "combine_gathered")
        self._aggregate = np.empty(r)
        self._shares = np.empty((K, r)) if self.root and r and not self._with_shares else None
        #: (iteration, elapsed, request, send buffer, receive buffer) of rows in flight
        self._in_flight: deque = deque()
        self._epsilon_cache: dict[tuple[float, ...], float] = {}

    @property
    def active(self) -> bool:
        """Whether anything is evaluated (False in ``none`` mode)."""
        return self.evaluator is not None

    def evaluate(self, iteration: int, w: np.ndarray, elapsed: float, bytes_sent: int,
                 worst_link: tuple[float, ...] | None) -> list[Evaluation]:
        """Collective: post this agent's row; the rows completed so far (rank 0, in order).

        ``worst_link``: the exposure of this agent's most exposed link
        (:meth:`~mpi_privopt.privacy.ledger.Ledger.worst_link_exposure`), None without links.
        """
        evaluator = self.evaluator
        if evaluator is None:
            return []
        w = np.ascontiguousarray(w, dtype=np.float64)
        if self._with_shares:
            terms = np.concatenate([np.ascontiguousarray(evaluator.aggregate_share(w),
                                                         dtype=np.float64).ravel(),
                                    evaluator.local_terms(w)])
        else:
            aggregate = None
            if self._aggregate.size:
                share = np.ascontiguousarray(evaluator.aggregate_share(w), dtype=np.float64)
                self.comm.Gather(share, self._shares, root=0)
                if self.root:
                    self._aggregate[:] = self._shares.mean(axis=0)
                self.comm.Bcast(self._aggregate, root=0)
                aggregate = self._aggregate
            terms = evaluator.terms(w, aggregate)
        # no link: flags -1 (an exposure's flags are 0..7)
        exposure = worst_link if worst_link is not None else (-1.0, 0.0, 0.0, 0.0)
        mine = np.concatenate([terms, [float(bytes_sent)], exposure])
        rows = np.empty((self.comm.Get_size(), mine.size)) if self.root else None
        request = self.comm.Igather(mine, rows, root=0)
        self._in_flight.append((iteration, elapsed, request, mine, rows))
        return self._complete(wait_all=False)

    def flush(self) -> list[Evaluation]:
        """Complete this rank's rows in flight; rank 0's rows, in order. Rank 0 returns
        once every agent has posted them (every agent flushes at the end of a run)."""
        return self._complete(wait_all=True)

    def completed(self) -> list[Evaluation]:
        """The rows whose every agent's share has arrived, without waiting (rank 0, in
        order; other ranks return ``[]``): what rank 0 can write while it waits."""
        return self._complete(wait_all=False, at_most=0)

    def _complete(self, wait_all: bool, at_most: int | None = None) -> list[Evaluation]:
        # more than at_most rows in flight (default MAX_IN_FLIGHT): the oldest are waited
        # for; at_most=0 waits for none
        at_most = self.MAX_IN_FLIGHT if at_most is None else at_most
        done = []
        flight = self._in_flight
        while flight and (wait_all or (at_most and len(flight) > at_most)
                          or flight[0][2].Test()):
            iteration, elapsed, request, _, rows = flight.popleft()
            request.Wait()  # a no-op once Test succeeded
            if self.root:
                done.append(self._row(iteration, elapsed, rows))
        return done

    def _row(self, iteration: int, elapsed: float, rows: np.ndarray) -> Evaluation:
        """One metrics row from every agent's gathered row (rank 0)."""
        n_exposure = len(HeadlineAccountant.EXPOSURE)
        terms, bytes_column = rows[:, :-n_exposure - 1], rows[:, -n_exposure - 1]
        if self._with_shares:
            r = self._aggregate.size
            values = self.evaluator.combine_gathered(terms[:, :r], terms[:, r:])
        else:
            values = self.evaluator.combine(terms)
        exposures = rows[rows[:, -n_exposure] >= 0, -n_exposure:]
        worst = most_exposed(exposures, self.delta, self._epsilon)
        return Evaluation(iteration=iteration, values=values, elapsed=elapsed,
                          bytes_total=int(bytes_column.sum()),
                          worst_link_epsilon=(0.0 if worst is None
                                              else max(self._epsilon_of(exposures[worst]), 0.0)))

    def _epsilon_of(self, exposure: np.ndarray) -> float:
        return self._epsilon(HeadlineAccountant.from_exposure(exposure))

    def _epsilon(self, accountant: HeadlineAccountant) -> float:
        """The headline epsilon, remembered by exposure (rows repeat the same totals)."""
        key = accountant.exposure()
        eps = self._epsilon_cache.get(key)
        if eps is None:
            if len(self._epsilon_cache) > 4096:
                self._epsilon_cache.clear()
            eps = self._epsilon_cache[key] = accountant.epsilon(self.delta)["best"]
        return eps

    def gather_models(self, w: np.ndarray) -> np.ndarray | None:
        """Every agent's model stacked K x P on rank 0 (``reference`` mode only)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        stacked = np.empty((self.comm.Get_size(), w.size)) if self.root else None
        self.comm.Gather(w, stacked, root=0)
        return stacked

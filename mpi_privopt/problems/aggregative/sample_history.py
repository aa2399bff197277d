"""The history of samples an agent has drawn from its finite local set, as count weights.

Chen & Wang 2025 average the empirical f_i^t and g_i^t over *every* sample drawn so far
(eq. 3). Samples are drawn i.i.d. with replacement from the agent's N_i local points (notes
7 item 7), so the history average of any per-sample function h equals a count-weighted
average over the distinct points drawn (notes 2.7):

    (1/|D^t|) sum_{k in history} h(xi_k) = sum_p (c_p / |D^t|) h(xi_p),

exact, with integer counts c_p, at a cost of O(min(|D^t|, N_i)) per evaluation instead of
O(|D^t|). The distinct points are kept in order of first appearance, their rows copied once
into buffers (``rows``) so that an evaluation slices views, never gathers.
"""
from __future__ import annotations

import numpy as np

__all__ = ["SampleHistory"]


class SampleHistory:
    """Count weights of the samples drawn so far from ``N`` local points.

    Parameters
    ----------
    arrays : sequence of ndarray
        The local data, each with the N points along axis 0 (e.g. images and labels).
    rng : numpy.random.Generator
        The agent's sampling stream (draws only, nothing else).
    """

    def __init__(self, arrays, rng: np.random.Generator) -> None:
        self._arrays = tuple(np.asarray(a) for a in arrays)
        self.n_points = int(self._arrays[0].shape[0])
        if self.n_points < 1 or any(a.shape[0] != self.n_points for a in self._arrays):
            raise ValueError("a history needs at least one point and arrays of equal length")
        self.rng = rng
        self.counts = np.zeros(self.n_points, dtype=np.int64)    # c_p, by point index
        self._order = np.empty(self.n_points, dtype=np.int64)    # points, first-seen order
        self._buffers = tuple(np.empty_like(a) for a in self._arrays)
        self.distinct = 0                                        # points drawn at least once
        self.total = 0                                           # |D^t|, with repeats
        #: bumped by every draw, so a cache of values over the history can tell it is stale
        self.version = 0

    def draw(self, count: int, *, fresh: bool = False) -> np.ndarray:
        """Draw ``count`` points i.i.d. uniformly with replacement and add them.

        ``fresh=True`` first forgets the history, so the weights cover only these draws.
        Returns the drawn point indices in draw order.
        """
        if int(count) != count or count < 1:
            raise ValueError(f"draw needs a positive integer count, got {count!r}")
        if fresh:
            self.counts[self._order[:self.distinct]] = 0
            self.distinct = self.total = 0
        drawn = self.rng.integers(0, self.n_points, size=int(count))
        unseen = drawn[self.counts[drawn] == 0]
        if unseen.size:  # new points, in order of first appearance within this draw
            values, first = np.unique(unseen, return_index=True)
            new = values[np.argsort(first)]
            span = slice(self.distinct, self.distinct + new.size)
            self._order[span] = new
            for buf, arr in zip(self._buffers, self._arrays):
                buf[span] = arr[new]
            self.distinct += new.size
        np.add.at(self.counts, drawn, 1)
        self.total += int(count)
        self.version += 1
        return drawn

    @property
    def points(self) -> np.ndarray:
        """The distinct points drawn, in order of first appearance (a view)."""
        return self._order[:self.distinct]

    @property
    def rows(self) -> tuple[np.ndarray, ...]:
        """The data of :attr:`points`, one view per array given at construction."""
        return tuple(buf[:self.distinct] for buf in self._buffers)

    @property
    def weights(self) -> np.ndarray:
        """c_p / |D^t| for :attr:`points` (sums to 1)."""
        if self.total == 0:
            raise ValueError("no sample drawn yet: call draw() (observe()) first")
        return self.counts[self.points] / float(self.total)

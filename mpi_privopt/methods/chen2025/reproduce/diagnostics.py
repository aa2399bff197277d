"""Tracker diagnostics of Algorithm 1 runs (docs/methods/chen2025.md, "Diagnostics"):
consensus error, aggregate-tracking
error and the size of ztilde.

Inside the run, every agent keeps, every ``every`` iterations, what it already holds: its
stacked estimate **x**_i^t, its estimates ytilde_i^t and ztilde_i^t, and g_i^t(x_i^t) (its
own history's mean loss at its block). Nothing is sent: each rank writes its own file
``diagnostics-agent-K.npz`` into the run directory, and :func:`tracker_diagnostics` combines
them after the run (simulation-only bookkeeping, like ``run.evaluate = "reference"``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

FILE = "diagnostics-agent-{}.npz"
#: the columns of :func:`tracker_diagnostics` (besides ``iteration``)
DIAGNOSTICS = ("consensus_error", "tracking_error", "ztilde_size")


class TrackerLog:
    """A tracker listener of one agent's Algorithm 1 (``RobustTracking.add_tracker_listener``),
    installed by :meth:`attach`."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.core = None
        self.calls = 0
        self.rows: dict[str, list] = {"iteration": [], "ytilde": [], "ztilde": [],
                                      "aggregate": [], "stack": []}

    def attach(self, agent, algorithm) -> None:
        """The engine's ``on_setup`` hook: record the method's trackers after each update."""
        self.core = algorithm.core
        self.core.add_tracker_listener(self)

    def __call__(self, x_i: np.ndarray, ytilde: np.ndarray, ztilde: np.ndarray) -> None:
        self.calls += 1  # engine iteration n = t + 1
        n = self.calls
        if n != 1 and n % self.every:
            return
        self.rows["iteration"].append(n)
        self.rows["ytilde"].append(np.array(ytilde, dtype=float))
        self.rows["ztilde"].append(np.array(ztilde, dtype=float))
        self.rows["aggregate"].append(np.atleast_1d(self.core.problem.aggregate(x_i)).astype(float))
        self.rows["stack"].append(self.core.X.copy())  # **x**_i^t (replaced after the hook)

    def save(self, out: str | Path, rank: int) -> None:
        np.savez(Path(out) / FILE.format(rank), **{k: np.array(v) for k, v in self.rows.items()})


def tracker_diagnostics(run_dir: str | Path, n_agents: int) -> list[dict]:
    """Per recorded iteration n (t = n - 1): ``consensus_error`` sum_i ||**x**_i - xbar||^2,
    ``tracking_error`` (1/m) sum_i |ytilde_i - G^t(x^t)| with G^t = (1/m) sum_j g_j^t(x_j^t),
    and ``ztilde_size`` (1/m) sum_i |ztilde_i| (its target is 0 in this task)."""
    files = [np.load(Path(run_dir) / FILE.format(k)) for k in range(n_agents)]
    stack = np.stack([f["stack"] for f in files])         # agent, row, n
    ytilde = np.stack([f["ytilde"] for f in files])       # agent, row, r
    ztilde = np.stack([f["ztilde"] for f in files])
    aggregate = np.stack([f["aggregate"] for f in files])
    G = aggregate.mean(axis=0)
    consensus = np.sum((stack - stack.mean(axis=0)) ** 2, axis=(0, 2))
    tracking = np.mean(np.linalg.norm(ytilde - G, axis=2), axis=0)
    zsize = np.mean(np.linalg.norm(ztilde, axis=2), axis=0)
    return [{"iteration": int(n), "consensus_error": float(c), "tracking_error": float(e),
             "ztilde_size": float(z)}
            for n, c, e, z in zip(files[0]["iteration"], consensus, tracking, zsize)]

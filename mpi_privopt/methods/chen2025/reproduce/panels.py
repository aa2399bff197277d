"""The data behind the panels of ``reproduce chen2025`` (pure functions of run outputs).

* :func:`curve_rows`: mean and standard deviation over runs of metrics columns, per
  iteration (a run that stopped early counts only where it has a row; ``runs`` says how
  many runs a point averages);
* :func:`budget_curve`: one agent's cumulative pure epsilon after each iteration, the sum of
  its releases' ``Delta^t / b^t`` (the per-release terms of eq. (21), PDOP's and [51]'s
  series and Lemma 1 for [36]/[6]), from the same budget objects the methods book with
  (:mod:`mpi_privopt.methods.chen2025.ldp_budget`), under the run's stated sensitivity constants
  (1: docs/methods/chen2025.md, "Nominal accounting").
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ...contract import ALGORITHMS

#: the metrics of a run averaged in the panels (the personalised task's columns)
LOSS_COLUMNS = ("objective", "cross_entropy", "union_cross_entropy", "test_accuracy")


def curve_rows(curves: Mapping[str, Sequence[Mapping[str, np.ndarray]]],
               columns: Sequence[str] = LOSS_COLUMNS, key: str = "curve") -> list[dict]:
    """Rows ``{key, iteration, runs, <col>_mean, <col>_std ...}``: for each curve (name ->
    its runs' metrics, each ``column -> array`` with an ``iteration`` column), the mean and
    the population standard deviation over the runs that have the iteration."""
    rows = []
    for name, runs in curves.items():
        iterations = sorted({int(n) for m in runs for n in m["iteration"]})
        for n in iterations:
            have = [m for m in runs if n in m["iteration"]]
            row = {key: name, "iteration": n, "runs": len(have)}
            for col in columns:
                values = np.array([m[col][list(m["iteration"]).index(n)] for m in have
                                   if col in m], dtype=float)
                row[f"{col}_mean"] = float(values.mean()) if values.size else math.nan
                row[f"{col}_std"] = float(values.std()) if values.size else math.nan
            rows.append(row)
    return rows


def columns_of(rows: Sequence[Mapping[str, float]]) -> dict[str, np.ndarray]:
    """Rows of one run (dicts with the same keys) as columns, like a run's metrics."""
    return {k: np.array([row[k] for row in rows]) for k in rows[0]} if rows else {}


def budget_blocks(name: str, params, agent: int, n_agents: int) -> dict:
    """The blocks of one agent's releases of method ``name`` (only blocks with noise), each
    with ``sensitivity(t)`` and ``scale(t)`` (the method's own ``block_budgets``)."""
    budgets = ALGORITHMS[name].block_budgets(params, agent, n_agents)
    if budgets is None:
        raise KeyError(name)
    return budgets


def released_after(name: str, n: int) -> int:
    """How many releases (t = 0, 1, ...) a method has made after n iterations: Algorithm 1's
    framework sends t = 0..n (the t = n message goes out at the end), the tracking
    baselines one message per iteration, t = 0..n-1 (the method's ``released_after``)."""
    return ALGORITHMS[name].released_after(n)


def budget_curve(name: str, params, iterations: int, agent: int = 0,
                 n_agents: int = 5) -> np.ndarray | None:
    """Cumulative pure epsilon of ``agent`` after n = 0..iterations iterations; None when
    the method sends a block in the clear (the loss is unbounded)."""
    blocks = budget_blocks(name, params, agent, n_agents)
    if len(blocks) < len(ALGORITHMS[name].blocks):
        return None
    t = range(iterations + 1)
    cost = np.array([math.fsum(b.sensitivity(s) / b.scale(s) for b in blocks.values())
                     for s in t])
    total = np.cumsum(cost)
    return np.array([total[released_after(name, n) - 1] if released_after(name, n) else 0.0
                     for n in t])

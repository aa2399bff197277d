"""What the report shows of a run, in its text and its figure alike: the link matrix of
the run's headline privacy measure, the metric drawn as the curve, a matrix cell's loss
(:mod:`mpi_privopt.report`, :mod:`mpi_privopt.report_figure`).
"""
from __future__ import annotations

import numpy as np

from . import display

#: metrics.csv columns that are not a problem's metric
NOT_CURVES = ("iteration", "elapsed_seconds", "bytes_total", "worst_link_epsilon")


def cell_epsilon(value: float) -> str:
    """A matrix cell's privacy loss: 3 significant digits (the cells are narrow), rounded
    up like every loss shown (display.loss); ``.`` for no link."""
    if np.isnan(value):
        return "."
    return display.loss(value, 3)


def curve_column(metrics: dict) -> str | None:
    """The metric drawn as the accuracy curve: the first metric column, if any."""
    columns = [c for c in metrics if c not in NOT_CURVES]
    return columns[0] if columns else None


def link_matrix(rows: list[list[float | None]]) -> np.ndarray:
    """A privacy.json link matrix as floats, NaN where there is no link (None)."""
    return np.array([[np.nan if v is None else v for v in row] for row in rows], dtype=float)


def headline_links(run: dict) -> tuple[np.ndarray, str]:
    """The per-link losses in the measure of the run's own headline, and that measure's name.

    A local-DP method's headline is pure epsilon at delta = 0 (its summary), so its matrix
    is the pure one; any other run's is the best valid conversion at ``privacy.delta``.
    """
    eps = run["epsilon"]
    if pure_headline(run):
        pure = link_matrix(run["privacy"]["links"]["epsilon_pure"])
        return np.where(np.isinf(eps), eps, pure), "pure epsilon at delta 0"
    return eps, f"epsilon at delta {display.exact(run['privacy']['delta'])}"


def pure_headline(run: dict) -> bool:
    """Whether the run's headline is pure epsilon at delta = 0 (a local-DP method), as its
    summary says, and privacy.json has the pure matrix to show."""
    return ("epsilon_pure" in run["privacy"].get("links", {})
            and run["summary"].privacy_delta == 0)

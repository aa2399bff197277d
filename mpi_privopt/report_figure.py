"""The figure of ``mpi_privopt report RUN_DIR --png FILE``: the accuracy curve beside the
bytes-per-link and privacy-loss-per-link matrices (matplotlib, the ``plot`` extra).

What each panel shows, and the text report's the same figures: :mod:`mpi_privopt.report`.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from . import display
from .errors import ConfigError
from .report_values import cell_epsilon, curve_column, headline_links

#: matrices up to this many agents print their values in the cells of the figure
CELL_VALUES = 10
#: a scale spanning more than this ratio is drawn logarithmic
DECADES = 100.0
#: metrics that shrink towards 0 over a run (an error, a gap): a log axis whenever positive,
#: so that their late iterations do not lie flat on the axis
LOG_METRICS = ("error", "gap", "distance", "consensus")


def plot_report(run: dict, png: str | Path) -> None:
    """Draw :func:`report_figure` to ``png``."""
    report_figure(run).savefig(png, dpi=110, bbox_inches="tight")


def report_figure(run: dict):
    """The three panels of a finished run: its metric curve, bytes and epsilon per link.

    What each panel shows is in its title (the metric's name, not "accuracy"); the ranks
    are integer ticks; a matrix of at most :data:`CELL_VALUES` agents prints its values in
    its cells (bytes with their unit, losses rounded up); a colour bar is drawn only when
    the values differ or a budget is marked (a flat matrix says its one value in the
    title); linear colour scales start at 0, so that equal colours mean equal values and a
    loss far below the budget looks it; the privacy panel marks the agents' budget (a
    labelled tick on its colour bar) and red crosses on unbounded links; an error or gap
    curve is drawn on a log axis, and any curve or colour scale spanning more than two
    decades.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ConfigError("--png needs matplotlib",
                          "pip install 'mpi_privopt[plot]'") from None
    fig = Figure(figsize=(15, 4.6))
    axes = fig.subplots(1, 3)
    _curve_panel(axes[0], run["metrics"])
    _bytes_panel(fig, axes[1], run["bytes"])
    _privacy_panel(fig, axes[2], *headline_links(run), run["privacy"])
    summary = run["summary"]
    fig.suptitle(f"{summary.algorithm} on {summary.problem}, "
                 f"{display.counted(summary.ranks, 'agent')}")
    fig.tight_layout()
    return fig


def _curve_panel(ax, metrics: dict) -> None:
    curve = curve_column(metrics)
    if curve is None:
        ax.set(title="no metric (nothing was measured: run.evaluate = none)")
        ax.set_axis_off()
        return
    x, y = np.asarray(metrics["iteration"]), np.asarray(metrics[curve], dtype=float)
    name = curve.replace("_", " ")
    ax.plot(x, y)
    finite = y[np.isfinite(y)]
    shrinks = any(word in curve for word in LOG_METRICS)
    if finite.size and finite.min() > 0 and (shrinks or finite.max() / finite.min() > DECADES):
        ax.set_yscale("log")
    ax.set(xlabel="iteration", ylabel=name, title=f"{name} against iteration")
    ax.xaxis.set_major_locator(_integer_locator())


def _bytes_panel(fig, ax, matrix: np.ndarray) -> None:
    links = matrix[matrix > 0]
    shown = np.where(matrix > 0, matrix, np.nan)
    title = "bytes per link"
    if links.size and links.min() == links.max():
        title += f"\nevery link: {display.byte_size(links.min())} ({links.min():.0f} bytes)"
    bar = _matrix_panel(fig, ax, shown, "viridis", title, "receiver", "sender", _short_bytes)
    if bar is not None:
        from matplotlib.ticker import FuncFormatter
        bar.formatter = FuncFormatter(lambda v, _: _short_bytes(v))
        bar.update_ticks()
        bar.set_label("bytes sent on the link")


def _privacy_panel(fig, ax, eps: np.ndarray, measure: str, privacy: dict) -> None:
    unbounded = np.isinf(eps)
    shown = np.where(unbounded, np.nan, eps)
    finite = shown[np.isfinite(shown)]
    budgets = {a.get("budget") for a in privacy.get("agents", [])}
    budget = budgets.pop() if len(budgets) == 1 else None
    budget = budget if budget is not None and math.isfinite(budget) else None
    title = f"privacy loss per link ({measure})"  # the run's headline measure
    if privacy.get("epsilon_label"):
        title += f"\n{privacy['epsilon_label']}"
    if finite.size and finite.min() == finite.max():
        title += f"\nevery private link: {display.loss(finite.min())}"  # rounded up
        if budget is not None:
            title += f", budget {budget:g}"
    bar = _matrix_panel(fig, ax, shown, "magma_r", title, "observer", "protected agent",
                        cell_epsilon, vmax=max(budget, finite.max())
                        if budget is not None and finite.size else None)
    if bar is not None:
        bar.set_label("epsilon")
    if budget is not None and bar is not None:
        # a labelled tick beside the bar, not text above it (where the title is)
        bar.ax.axhline(budget, color="red", linewidth=2)
        ticks = [t for t in bar.get_ticks() if not math.isclose(t, budget, rel_tol=0.05)
                 and bar.vmin <= t <= bar.vmax] + [budget]
        ticks.sort()
        bar.set_ticks(ticks, labels=[f"budget {t:g}" if t == budget else f"{t:g}"
                                     for t in ticks])
        for label in bar.ax.get_yticklabels():
            if label.get_text().startswith("budget"):
                label.set_color("red")
    if unbounded.any():
        rows, cols = np.nonzero(unbounded)
        ax.scatter(cols, rows, marker="x", color="red", label="unbounded (not private)")
        ax.legend(loc="upper right", fontsize=8)


def _matrix_panel(fig, ax, shown: np.ndarray, cmap: str, title: str, xlabel: str,
                  ylabel: str, fmt, vmax: float | None = None):
    """One K x K matrix (NaN: no link); returns its colour bar, or None when it has none."""
    from matplotlib.colors import LogNorm
    finite = shown[np.isfinite(shown)]
    varied = finite.size > 0 and (finite.min() != finite.max() or
                                  (vmax is not None and vmax != finite.max()))
    top = max(finite.max(), vmax or 0) if finite.size else None
    norm = None
    if varied and finite.min() > 0 and top / finite.min() > DECADES:
        norm = LogNorm(vmin=finite.min(), vmax=top)
    # a linear scale starts at 0 (a flat matrix: one colour, its value's)
    image = ax.imshow(shown, cmap=cmap, norm=norm, vmin=None if norm is not None else 0.0,
                      vmax=None if norm is not None else top)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    K = shown.shape[0]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(_integer_locator(K))
    if K <= CELL_VALUES:
        for r, c in zip(*np.nonzero(np.isfinite(shown))):
            red, green, blue, _ = image.cmap(image.norm(shown[r, c]))
            light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.5  # the cell's colour
            ax.text(c, r, fmt(shown[r, c]), ha="center", va="center", fontsize=8,
                    color="black" if light else "white")
    return fig.colorbar(image, ax=ax) if varied else None


def _integer_locator(K: int | None = None):
    """Ticks at whole numbers (ranks, iterations): every rank up to 16, else a few."""
    from matplotlib.ticker import MaxNLocator, MultipleLocator
    if K is not None and K <= 16:
        return MultipleLocator(1)
    return MaxNLocator(integer=True)


def _short_bytes(value: float) -> str:
    """A byte count short enough for a matrix cell, in the units of
    :func:`mpi_privopt.display.byte_size`: ``3.12 KiB``."""
    for unit, size in (("GiB", 1024.0 ** 3), ("MiB", 1024.0 ** 2), ("KiB", 1024.0)):
        if value >= size:
            return f"{display.number(value / size, 3)} {unit}"
    return f"{value:.0f} B"

"""The figures of ``reproduce chen2025`` (PNG, each with the CSV of its rows)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import finish_figure, pyplot
from .settings import METHODS

#: the paper's colours where it names them (Fig. 1(a)): [6] green, [36] gray, PDOP yellow,
#: [51] blue; Algorithm 1 red here
COLOURS = {"alg1": "tab:red", "alg1-noise-off": "tab:pink", "gt36": "tab:gray",
           "pat6": "tab:green", "pdop26": "goldenrod", "tvs51": "tab:blue"}


def _band(ax, rows: list[dict], curve: str, column: str, label: str, key: str = "curve",
          colour=None) -> None:
    mine = [r for r in rows if r[key] == curve]
    if not mine:
        return
    n = np.array([r["iteration"] for r in mine])
    mean = np.array([r[f"{column}_mean"] for r in mine])
    std = np.array([r[f"{column}_std"] for r in mine])
    (line,) = ax.plot(n, mean, label=label, color=colour)
    ax.fill_between(n, mean - std, mean + std, alpha=0.2, color=line.get_color())


def _loss_panels(rows: list[dict], curves: dict[str, str], columns: dict[str, str], path: Path,
                 title: str, colours: dict | None = None, log: bool = True,
                 first: int = 0) -> None:
    """One subplot per column, one band per curve, from iteration ``first`` on (the CSV
    keeps every row)."""
    plt = pyplot()
    drawn = [r for r in rows if r["iteration"] >= first]
    fig, axes = plt.subplots(1, len(columns), figsize=(5.2 * len(columns), 4.0), squeeze=False)
    for ax, (column, ylabel) in zip(axes[0], columns.items()):
        for curve, label in curves.items():
            _band(ax, drawn, curve, column, label, colour=(colours or {}).get(curve))
        ax.set_xlabel("iteration t")
        ax.set_ylabel(ylabel)
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    finish_figure(fig, path, rows, title)


def panel_a(rows: list[dict], path: Path, subtitle: str) -> None:
    """(a) training loss of Algorithm 1, its noise-off ablation and the four baselines."""
    _loss_panels(rows, dict(METHODS), {"objective": "penalised objective (1/m) sum F_i",
                                       "cross_entropy": "cross-entropy (local data)"},
                 path, f"(a) training loss, mean +- std over runs\n{subtitle}", COLOURS)


def panel_b(rows: list[dict], path: Path, subtitle: str) -> None:
    """(b) cumulative pure epsilon of agent 1 per method, nominal accounting."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    for method, label in METHODS.items():
        mine = [r for r in rows if r["method"] == method]
        if mine:  # [36] and [6] share their trackers' noise, so their curves coincide
            ax.plot([r["iteration"] for r in mine], [r["epsilon"] for r in mine], label=label,
                    color=COLOURS[method], linestyle="--" if method == "gt36" else "-")
    ax.set_xlabel("iteration t")
    ax.set_ylabel("cumulative pure epsilon, agent 1")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    finish_figure(fig, path, rows, "(b) privacy loss, NOMINAL accounting\n(every sensitivity "
                  "constant C = 1, notes 3.7; noise-off ablation: unbounded, not drawn)\n"
                  f"{subtitle}")


def panel_c(rows: list[dict], deltas, path: Path, subtitle: str) -> None:
    """(c) Algorithm 1 at Corollary 1's parameters for each delta."""
    _loss_panels(rows, {f"{d:g}": f"delta = {d:g}" for d in deltas},
                 {"objective": "penalised objective", "cross_entropy": "cross-entropy (local)"},
                 path, f"(c) Algorithm 1, Corollary 1(ii)/(iii) parameters per delta\n{subtitle}")


def panel_d(rows: list[dict], pens, path: Path, subtitle: str) -> None:
    """(d) Algorithm 1 for each lambda_pen: penalised objective, local and pooled CE."""
    _loss_panels(rows, {f"{p:g}": f"lambda_pen = {p:g}" for p in pens},
                 {"objective": "penalised objective",
                  "cross_entropy": "cross-entropy (local data)",
                  "union_cross_entropy": "cross-entropy (union of training data)"},
                 path, f"(d) Algorithm 1 per lambda_pen\n{subtitle}")


def diagnostics(rows: list[dict], path: Path, subtitle: str) -> None:
    """Algorithm 1's tracker diagnostics (mean over runs)."""
    columns = {"consensus_error": "consensus error sum_i ||x_(i) - xbar||^2",
               "tracking_error": "|ytilde_i - G(x^t)| (mean over agents)",
               "ztilde_size": "|ztilde_i| (mean over agents; target 0)"}
    # from the second record on: at t = 0 every stacked estimate is the same point (0 error)
    _loss_panels(rows, {"alg1": "Algorithm 1"}, columns, path,
                 f"Algorithm 1 diagnostics, mean +- std over runs\n{subtitle}", first=2)

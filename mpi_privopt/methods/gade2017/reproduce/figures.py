"""Figures (PNG) and the CSV behind each, read from the run directories of the jobs.

Each figure is drawn from the rows of its CSV (``draw_*``), so that ``reproduce gade2017
--redraw`` draws the committed figures again without running anything (:func:`redraw`).
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from mpi_privopt.results import read_metrics
from mpi_privopt.reproduce import finish_figure, pyplot, read_csv, run_dir, save_figures
from mpi_privopt.reproduce._style import Palette, Style, figure_legend, tidy
from .data import test_accuracy
from .jobs import FIG1_LEVELS, ML_DELTA, ML_SIGMA, Job, series_name

LABELS = {
    "dgd": "DGD",
    "rss-nb-d10": "RSS-NB, Delta = 10", "rss-nb-d1000": "RSS-NB, Delta = 1000",
    "rss-lb-d10": "RSS-LB, Delta = 10", "rss-lb-d1000": "RSS-LB, Delta = 1000",
    "fs-s0.1": "FS, sigma = 0.1", "fs-s1": "FS, sigma = 1",
    f"rss-nb-d{ML_DELTA:g}": f"RSS-NB, Delta = {ML_DELTA:g}",
    f"rss-lb-d{ML_DELTA:g}": f"RSS-LB, Delta = {ML_DELTA:g}",
    f"fs-s{ML_SIGMA:g}": f"FS, sigma = {ML_SIGMA:g}",
}
#: legend of the logistic-regression methods (one noise level each)
ML_LABELS = {"dgd": "DGD", "rss-nb": LABELS[f"rss-nb-d{ML_DELTA:g}"],
             "rss-lb": LABELS[f"rss-lb-d{ML_DELTA:g}"], "fs": LABELS[f"fs-s{ML_SIGMA:g}"]}
METRICS = (("objective_gap", "sum_j f_j(x_k^j) - f*"),
           ("error", "sum_j ||x_k^j - x*||^2"),
           ("consensus_gap", "consensus: mean_j ||x_k^j - x_bar_k||^2"))


#: one colour per method in every figure (DGD black, RSS-NB blue, RSS-LB red, FS green); the
#: line style tells the noise level (solid: the smaller one); a marker per series
PALETTE = Palette({
    "dgd": Style("black", "o"),
    "rss-nb-d10": Style("tab:blue", "s"), "rss-nb-d1000": Style("tab:blue", "D", "--"),
    "rss-lb-d10": Style("tab:red", "^"), "rss-lb-d1000": Style("tab:red", "v", "--"),
    "fs-s0.1": Style("tab:green", "P"), "fs-s1": Style("tab:green", "X", "--"),
    # the Figure 2 stand-in's methods (one noise level each)
    "rss-nb": Style("tab:blue", "s"), "rss-lb": Style("tab:red", "^"),
    "fs": Style("tab:green", "P"),
})
TOPOLOGY_TITLE = {"ring": "C5 (cycle)", "complete": "K5 (complete)"}


def log_grid(iterations: np.ndarray, points: int = 400) -> np.ndarray:
    """Indices of about ``points`` evaluations evenly spread on a log axis (k > 0)."""
    positive = np.flatnonzero(iterations > 0)
    if len(positive) <= points:
        return positive
    targets = np.geomspace(iterations[positive[0]], iterations[positive[-1]], points)
    nearest = np.searchsorted(iterations, targets).clip(positive[0], positive[-1])
    return np.unique(nearest)


def _label(series: str) -> str:
    return LABELS.get(series, series)


def seed_bands(out: Path, jobs: list[Job]) -> dict[str, dict[str, np.ndarray]]:
    """Per series: the iteration grid and median / min / max over seeds of each metric."""
    grouped = defaultdict(list)
    for job in jobs:
        grouped[job.meta["series"]].append(read_metrics(run_dir(out, job)))
    bands = {}
    for series, runs in grouped.items():
        band = {"iteration": runs[0]["iteration"], "seeds": len(runs)}
        for metric, _ in METRICS:
            stack = np.vstack([r[metric] for r in runs])
            band[metric] = (np.median(stack, axis=0), stack.min(axis=0), stack.max(axis=0))
        bands[series] = band
    return bands


def convergence_rows(bands: dict, series: list[str]) -> list[dict]:
    """The CSV of a convergence figure: per iteration of the log grid, median / min / max of
    every metric of every series (columns ``series:metric:stat``)."""
    rows: dict[float, dict] = {}
    for name in series:
        band = bands[name]
        keep = log_grid(band["iteration"])
        for metric, _ in METRICS:
            median, low, high = (values[keep] for values in band[metric])
            for i, k in enumerate(band["iteration"][keep]):
                row = rows.setdefault(float(k), {"iteration": int(k)})
                row[f"{name}:{metric}:median"] = median[i]
                row[f"{name}:{metric}:min"] = low[i]
                row[f"{name}:{metric}:max"] = high[i]
    return [rows[k] for k in sorted(rows)]


def convergence_title(title: str, seeds: int) -> str:
    return f"{title} (median over {seeds} seeds, band: min-max)" if seeds > 1 else title


def draw_convergence(rows: list[dict], series: list[str], seeds: int):
    """Three log-log panels (objective gap, error, consensus) with min-max bands."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    it = np.array([r["iteration"] for r in rows], dtype=float)
    for ax, (metric, ylabel) in zip(axes, METRICS):
        for name in series:
            median, low, high = (np.array([r.get(f"{name}:{metric}:{stat}", np.nan)
                                           for r in rows], dtype=float)
                                 for stat in ("median", "min", "max"))
            have = np.isfinite(median)
            if seeds > 1:
                PALETTE.band(ax, it[have], np.maximum(low[have], 1e-300), high[have], name)
            PALETTE.plot(ax, it[have], np.maximum(median[have], 1e-300), name, _label(name))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("iteration k")
        ax.set_ylabel(ylabel)
        tidy(ax)
    figure_legend(fig)
    return fig


def convergence_figure(bands: dict, series: list[str], path: Path, title: str) -> None:
    """:func:`draw_convergence` of the seeds' bands; and its CSV."""
    rows = convergence_rows(bands, series)
    seeds = max(bands[s]["seeds"] for s in series)
    finish_figure(draw_convergence(rows, series, seeds), path, rows,
                  convergence_title(title, seeds))


def accuracy_rows(out: Path, jobs: list[Job], test_path: Path) -> list[dict]:
    """Test accuracy of every agent's model after each checkpoint run."""
    rows = []
    for job in jobs:
        with np.load(run_dir(out, job) / "models.npz") as models:
            acc = test_accuracy(models["W"], test_path)
            central = float(test_accuracy(models["w_c"], test_path)[0])
        summary = json.loads((run_dir(out, job) / "summary.json").read_text())
        rows.append({"topology": job.meta["topology"], "method": job.meta["method"],
                     "iteration": job.meta["T"], "accuracy_mean": float(acc.mean()),
                     "accuracy_min": float(acc.min()), "accuracy_max": float(acc.max()),
                     "centralised_optimum_accuracy": central,
                     "normalised_error": summary["final_error"],
                     "consensus_gap": summary["final_consensus_gap"]})
    return rows


ACCURACY_TITLE = "Figure 2 stand-in: logistic regression on breast cancer, 5 agents"


def draw_accuracy(rows: list[dict]):
    """Test accuracy (%) vs iterations (= epochs: full local gradients), C5 and K5."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, kind in zip(axes, ("ring", "complete")):
        mine = [r for r in rows if r["topology"] == kind]
        for method in ("dgd", "rss-nb", "rss-lb", "fs"):
            pts = sorted((r for r in mine if r["method"] == method), key=lambda r: r["iteration"])
            it = [r["iteration"] for r in pts]
            PALETTE.band(ax, it, [100 * r["accuracy_min"] for r in pts],
                         [100 * r["accuracy_max"] for r in pts], method, alpha=0.12)
            # every checkpoint is marked (they are few)
            PALETTE.plot(ax, it, [100 * r["accuracy_mean"] for r in pts], method,
                         ML_LABELS[method], markevery=None)
        ax.axhline(100 * mine[0]["centralised_optimum_accuracy"], color="grey", ls=":",
                   label="centralised optimum")
        ax.set_xscale("log")
        ax.set_xlabel("iteration (= epoch: each agent passes over its shard once)")
        ax.set_title(TOPOLOGY_TITLE[kind])
        tidy(ax)
    axes[0].set_ylabel("test accuracy (%), mean over agents (band: min-max)")
    figure_legend(fig)
    return fig


def accuracy_figure(rows: list[dict], path: Path) -> None:
    finish_figure(draw_accuracy(rows), path, rows, ACCURACY_TITLE)


def training_rows(out: Path, jobs: list[Job]) -> list[dict]:
    """Normalised error and consensus gap of the longest run of each (topology, method)."""
    longest = {}
    for job in jobs:
        key = (job.meta["topology"], job.meta["method"])
        if key not in longest or job.meta["T"] > longest[key].meta["T"]:
            longest[key] = job
    rows = []
    for (kind, method), job in sorted(longest.items()):
        m = read_metrics(run_dir(out, job))
        rows += [{"topology": kind, "method": method, "iteration": int(i), "error": e,
                  "consensus_gap": c}
                 for i, e, c in zip(m["iteration"], m["error"], m["consensus_gap"])]
    return rows


TRAINING_TITLE = "Figure 2 stand-in: distance to the centralised optimum and consensus"


def draw_training(rows: list[dict]):
    """Error and consensus against iterations, one row of panels per topology (C5 above,
    K5 below); colour and marker are the method's, as in every figure."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4), sharex=True)
    for panel_row, kind in zip(axes, ("ring", "complete")):
        for method in ("dgd", "rss-nb", "rss-lb", "fs"):
            mine = [r for r in rows if r["topology"] == kind and r["method"] == method
                    and r["iteration"] > 0]
            if not mine:
                continue
            it = [r["iteration"] for r in mine]
            for ax, column in zip(panel_row, ("error", "consensus_gap")):
                PALETTE.plot(ax, it, np.maximum([r[column] for r in mine], 1e-300), method,
                             ML_LABELS[method])
        for ax, ylabel in zip(panel_row, ("sum_j ||w_j - w*||^2 / ||w*||^2", "consensus gap")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylabel(ylabel)
            ax.set_title(TOPOLOGY_TITLE[kind])
            tidy(ax)
    for ax in axes[1]:
        ax.set_xlabel("iteration")
    figure_legend(fig)
    return fig


def training_figure(out: Path, jobs: list[Job], path: Path) -> None:
    rows = training_rows(out, jobs)
    finish_figure(draw_training(rows), path, rows, TRAINING_TITLE)


#: the convergence figures: file name, series, title (the series' runs: jobs.figure1_jobs)
CONVERGENCE = (
    ("fig1", ("dgd", *(series_name(m, n) for m, n in FIG1_LEVELS if m != "fs")),
     "Figure 1: DGD, RSS-NB and RSS-LB on the 5-cycle"),
    ("fig1-fs", ("dgd", *(series_name(m, n) for m, n in FIG1_LEVELS if m == "fs")),
     "FS on the Figure 1 problem (not in the paper)"),
)


def figures_from_csv(folder: Path):
    """(file name, title, Figure) of every figure, drawn from the CSVs in ``folder`` (and the
    seed count of its ``summary.json``)."""
    seeds = json.loads((folder / "summary.json").read_text())["plan"]["seeds"]
    for name, series, title in CONVERGENCE:
        yield (f"{name}.png", convergence_title(title, seeds),
               draw_convergence(read_csv(folder / f"{name}.csv"), list(series), seeds))
    yield "fig2.png", ACCURACY_TITLE, draw_accuracy(read_csv(folder / "fig2.csv"))
    yield ("fig2-training.png", TRAINING_TITLE,
           draw_training(read_csv(folder / "fig2-training.csv")))


def redraw(folder: Path) -> list[Path]:
    """Draw every figure again from the CSVs in ``folder``; returns the PNGs written."""
    return save_figures(figures_from_csv(folder), folder)


def attack_rows(out: Path, jobs: list[Job]) -> list[dict]:
    """One row per attack run, from its ``attack.json``."""
    rows = []
    for job in jobs:
        report = json.loads((run_dir(out, job) / "attack.json").read_text())
        rows.append({
            "problem": job.meta["problem"], "scenario": job.meta["scenario"],
            "method": _label(job.meta["series"]), "coalition": report["coalition"],
            "target": report["target"], "f": len(report["coalition"]),
            "certificate_P1": report["certificate_protects_each_agent"],
            "target_exposed": report["target_exposed"],
            "rounds_scored": report["rounds_scored"],
            "gradient_relative_error": report["gradient_relative_error"],
            "gradient_median_relative_error": report["gradient_median_relative_error"],
            "coefficient_relative_error": report["coefficient_relative_error"],
            "exact": report["exact"],
        })
    return rows


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2g}"
    return str(value)


def attack_table(rows: list[dict]) -> str:
    """The attack results as a Markdown table."""
    head = ("| problem | scenario | method | P1 holds (f = coalition size) | target exposed | "
            "rounds | gradient rel. error (RMS) | median per-round rel. error | "
            "coefficient rel. error | exact recovery |")
    lines = [head, "|" + "---|" * 10]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r[k]) for k in (
            "problem", "scenario", "method", "certificate_P1", "target_exposed",
            "rounds_scored", "gradient_relative_error", "gradient_median_relative_error",
            "coefficient_relative_error", "exact")) + " |")
    return "\n".join(lines) + "\n"

"""Figures (PNG) and the CSV behind each, read from the run directories of the jobs."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from ...results import read_metrics
from .. import finish_figure, pyplot, run_dir
from .data import test_accuracy
from .jobs import ML_DELTA, ML_SIGMA, Job

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


def convergence_figure(bands: dict, series: list[str], path: Path, title: str) -> None:
    """Three log-log panels (objective gap, error, consensus) with min-max bands; and CSV."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    rows: dict[float, dict] = {}
    for name in series:
        band = bands[name]
        keep = log_grid(band["iteration"])
        it = band["iteration"][keep]
        for ax, (metric, ylabel) in zip(axes, METRICS):
            median, low, high = (values[keep] for values in band[metric])
            line, = ax.plot(it, np.maximum(median, 1e-300), label=_label(name))
            if band["seeds"] > 1:
                ax.fill_between(it, np.maximum(low, 1e-300), high,
                                color=line.get_color(), alpha=0.2)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("iteration k")
            ax.set_ylabel(ylabel)
            for i, k in enumerate(it):
                row = rows.setdefault(float(k), {"iteration": int(k)})
                row[f"{name}:{metric}:median"] = median[i]
                row[f"{name}:{metric}:min"] = low[i]
                row[f"{name}:{metric}:max"] = high[i]
    axes[0].legend(fontsize=8)
    seeds = max(bands[s]["seeds"] for s in series)
    finish_figure(fig, path, [rows[k] for k in sorted(rows)],
            f"{title} (median over {seeds} seeds, band: min-max)" if seeds > 1 else title)


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


def accuracy_figure(rows: list[dict], path: Path) -> None:
    """Test accuracy (%) vs iterations (= epochs: full local gradients), C5 and K5."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), sharey=True)
    for ax, kind, title in zip(axes, ("ring", "complete"), ("C5 (cycle)", "K5 (complete)")):
        mine = [r for r in rows if r["topology"] == kind]
        for method in ("dgd", "rss-nb", "rss-lb", "fs"):
            pts = sorted((r for r in mine if r["method"] == method), key=lambda r: r["iteration"])
            it = [r["iteration"] for r in pts]
            line, = ax.plot(it, [100 * r["accuracy_mean"] for r in pts], marker="o",
                            label=ML_LABELS[method])
            ax.fill_between(it, [100 * r["accuracy_min"] for r in pts],
                            [100 * r["accuracy_max"] for r in pts], color=line.get_color(),
                            alpha=0.15)
        ax.axhline(100 * mine[0]["centralised_optimum_accuracy"], color="k", ls="--",
                   label="centralised optimum")
        ax.set_xscale("log")
        ax.set_xlabel("iteration (= epoch: each agent passes over its shard once)")
        ax.set_title(title)
    axes[0].set_ylabel("test accuracy (%), mean over agents (band: min-max)")
    axes[0].legend(fontsize=8)
    finish_figure(fig, path, rows, "Figure 2 stand-in: logistic regression on breast cancer, 5 agents")


def training_figure(out: Path, jobs: list[Job], path: Path) -> None:
    """Normalised error and consensus gap of the longest run of each (topology, method)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    longest = {}
    for job in jobs:
        key = (job.meta["topology"], job.meta["method"])
        if key not in longest or job.meta["T"] > longest[key].meta["T"]:
            longest[key] = job
    rows = []
    for (kind, method), job in sorted(longest.items()):
        m = read_metrics(run_dir(out, job))
        style = "-" if kind == "ring" else "--"
        label = f"{ML_LABELS[method]}, {'C5' if kind == 'ring' else 'K5'}"
        keep = m["iteration"] > 0
        axes[0].plot(m["iteration"][keep], m["error"][keep], style, label=label)
        axes[1].plot(m["iteration"][keep], np.maximum(m["consensus_gap"][keep], 1e-300), style,
                     label=label)
        rows += [{"topology": kind, "method": method, "iteration": int(i), "error": e,
                  "consensus_gap": c}
                 for i, e, c in zip(m["iteration"], m["error"], m["consensus_gap"])]
    for ax, ylabel in zip(axes, ("sum_j ||w_j - w*||^2 / ||w*||^2", "consensus gap")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=7)
    finish_figure(fig, path, rows,
            "Figure 2 stand-in: distance to the centralised optimum and consensus")


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

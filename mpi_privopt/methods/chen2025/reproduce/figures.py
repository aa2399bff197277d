"""The figures of ``reproduce chen2025`` (PNG, each with the CSV of its rows).

Each figure is drawn from the rows of its CSV (``draw_*``), so that ``reproduce chen2025
--redraw`` draws the committed figures again from them (:func:`redraw`).
"""
from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from mpi_privopt.reproduce import finish_figure, pyplot, read_csv, save_figures
from mpi_privopt.reproduce._style import (Palette, Style, figure_legend, runs_phrase, spread_phrase, sweep_palette,
                      tidy)
from ..ldp_budget import NOMINAL_EPSILON
from .matched import MATCHED, REFERENCE
from .settings import DELTAS, LAMBDA_PEN, LAMBDA_PENS, METHODS

#: the paper's colours where it names them (Fig. 1(a)): [6] green, [36] gray, PDOP yellow,
#: [51] blue; Algorithm 1 red here, its noise-off ablation pink and dashed; the same in every
#: figure (the diagnostics are Algorithm 1's: red)
PALETTE = Palette({
    "alg1": Style("tab:red", "o"), "alg1-noise-off": Style("tab:pink", "x", "--"),
    "gt36": Style("tab:gray", "s", "--"), "pat6": Style("tab:green", "^"),
    "pdop26": Style("goldenrod", "D"), "tvs51": Style("tab:blue", "v"),
})
COLOURS = {name: PALETTE[name].colour for name in METHODS}
#: panel (d)'s y range leaves out the first iterations' transient from this share of T on
#: (a spike there would squash every other curve); clipped points are named above the panel
SETTLED = 0.1


def _runs(rows: list[dict]) -> int:
    return max((int(r["runs"]) for r in rows), default=1)


def subtitle(dataset: str, runs: int, iterations: int) -> str:
    return (f"{dataset}, softmax regression, {runs_phrase(runs)}, T = {iterations}, "
            f"lambda_pen = {LAMBDA_PEN[dataset]:g}")


def _curve(row: dict) -> str:
    """A row's curve name: a sweep's value read back from a CSV is a number (0.005), the
    name its :g form ("0.005")."""
    value = row["curve"]
    return value if isinstance(value, str) else f"{value:g}"


def _series(rows: list[dict], curve: str, column: str):
    mine = [r for r in rows if _curve(r) == curve and np.isfinite(r[f"{column}_mean"])]
    n = np.array([r["iteration"] for r in mine], dtype=float)
    mean = np.array([r[f"{column}_mean"] for r in mine], dtype=float)
    std = np.array([r[f"{column}_std"] for r in mine], dtype=float)
    return n, mean, std


def _loss_panels(rows: list[dict], curves: dict[str, str], columns: dict[str, str],
                 palette: Palette, first: int = 0):
    """One subplot per column, one mean curve (band: +- std over the runs) per curve, from
    iteration ``first`` on (the CSV keeps every row). Returns the figure and its axes."""
    plt = pyplot()
    drawn = [r for r in rows if r["iteration"] >= first]
    fig, axes = plt.subplots(1, len(columns), figsize=(5.2 * len(columns), 4.0), squeeze=False)
    for ax, (column, ylabel) in zip(axes[0], columns.items()):
        for curve, label in curves.items():
            n, mean, std = _series(drawn, curve, column)
            if not n.size:
                continue
            if _runs(drawn) > 1:
                palette.band(ax, n, mean - std, mean + std, curve)
            palette.plot(ax, n, mean, curve, label)
        ax.set_xlabel("iteration t")
        ax.set_ylabel(ylabel)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    return fig, axes[0]


def _finish_panels(fig, axes) -> None:
    for ax in axes:
        tidy(ax)
    figure_legend(fig)


def draw_panel_a(rows: list[dict]):
    """(a) training loss of Algorithm 1, its noise-off ablation and the four baselines."""
    fig, axes = _loss_panels(rows, dict(METHODS),
                             {"objective": "penalised objective (1/m) sum F_i",
                              "cross_entropy": "cross-entropy (local data)"}, PALETTE)
    _finish_panels(fig, axes)
    return fig


def title_a(rows: list[dict], sub: str) -> str:
    return f"(a) training loss, {spread_phrase(_runs(rows))}\n{sub}"


def draw_panel_b(rows: list[dict]):
    """(b) cumulative pure epsilon of agent 1 per method, nominal accounting."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    for method, label in METHODS.items():
        mine = [r for r in rows if r["method"] == method]
        if mine:  # [36] and [6] share their trackers' noise: their curves coincide
            PALETTE.plot(ax, [r["iteration"] for r in mine], [r["epsilon"] for r in mine],
                         method, label)
    ax.set_xlabel("iteration t")
    ax.set_ylabel("cumulative pure epsilon, agent 1")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    _finish_panels(fig, [ax])
    return fig


def title_b(sub: str) -> str:
    return (f"(b) privacy loss, {NOMINAL_EPSILON}\n(every sensitivity constant C = 1, not "
            "the paper's constants; noise-off ablation: unbounded, not drawn)\n" + sub)


def _matched_label(curve: str, seeds: int, diverged: int) -> str:
    name = METHODS[curve] if curve == REFERENCE else f"{METHODS[curve]}, matched"
    return f"{name}: {diverged} of {runs_phrase(seeds)} diverged"


def draw_panel_matched(rows: list[dict]):
    """Panel (a) at the matched budget: every run of Algorithm 1 and of each calibrated
    baseline as a thin line (dashed, with a cross at its end: diverged), and the mean of the
    runs that did not diverge as the thick line (penalised objective, test accuracy)."""
    plt = pyplot()
    columns = {"objective": "penalised objective (1/m) sum F_i", "test_accuracy": "test accuracy"}
    fig, axes = plt.subplots(1, len(columns), figsize=(5.6 * len(columns), 4.2), squeeze=False)
    for ax, (column, ylabel) in zip(axes[0], columns.items()):
        for curve in (REFERENCE, *MATCHED):
            mine = [r for r in rows if _curve(r) == curve]
            seeds = sorted({int(r["seed"]) for r in mine})
            if not seeds:
                continue
            runs = {s: [r for r in mine if int(r["seed"]) == s] for s in seeds}
            lost = [s for s in seeds if int(runs[s][0]["diverged"])]
            label = _matched_label(curve, len(seeds), len(lost))
            colour = PALETTE[curve].colour
            for s in seeds:
                n = [r["iteration"] for r in runs[s]]
                y = [r[column] for r in runs[s]]
                gone = s in lost
                ax.plot(n, y, color=colour, linewidth=0.8, alpha=0.55,
                        linestyle="--" if gone else "-",
                        label=label if gone and len(lost) == len(seeds) and s == lost[0]
                        else "_run")
                if gone:
                    ax.plot(n[-1:], y[-1:], color=colour, marker="X", markersize=8,
                            linestyle="none", label="_end")
            kept = [s for s in seeds if s not in lost]
            if kept:
                n = [r["iteration"] for r in runs[kept[0]]]
                mean = np.mean([[r[column] for r in runs[s]][:len(n)] for s in kept], axis=0)
                PALETTE.plot(ax, n, mean, curve, label)
        ax.set_xlabel("iteration t")
        ax.set_ylabel(ylabel)
        if column == "objective":
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    _finish_panels(fig, axes[0])
    return fig


def title_matched(summary: dict, sub: str) -> str:
    target = summary["target_epsilon_T"][0]
    return ("(a) at the same cumulative budget: each baseline's sigma scaled so that its "
            f"epsilon at T equals Algorithm 1's\n(agent 1: {math.ceil(target * 10) / 10:.1f}), "
            f"under the nominal accounting: {NOMINAL_EPSILON}\n"
            "thick: mean of the runs that did not diverge; thin: every run (dashed, X: "
            "diverged)\n" + sub)


def draw_panel_c(rows: list[dict], deltas=DELTAS):
    """(c) Algorithm 1 at Corollary 1's parameters for each delta."""
    names = [f"{d:g}" for d in deltas]
    fig, axes = _loss_panels(rows, {n: f"delta = {n}" for n in names},
                             {"objective": "penalised objective",
                              "cross_entropy": "cross-entropy (local)"}, sweep_palette(names))
    _finish_panels(fig, axes)
    return fig


def title_c(rows: list[dict], sub: str) -> str:
    return (f"(c) Algorithm 1, Corollary 1(ii)/(iii) parameters per delta, "
            f"{spread_phrase(_runs(rows))}\n{sub}")


def diverged_curves(diverged: dict[str, int]) -> dict[tuple[str, str], list[int]]:
    """(panel, curve) -> the iterations at which its runs diverged, from the run keys of
    ``summary.json``'s ``diverged`` (``.../<panel>/<lambda|delta><value>/seed<n>``)."""
    out: dict[tuple[str, str], list[int]] = {}
    for key, n in diverged.items():
        panel, curve = key.split("/")[-3:-1]
        for prefix in ("lambda", "delta"):
            if panel in ("c", "d") and curve.startswith(prefix):
                curve = curve[len(prefix):]
        out.setdefault((panel, curve), []).append(int(n))
    return out


def _span(iterations: list[int]) -> str:
    lo, hi = min(iterations), max(iterations)
    return f"t = {lo}" if lo == hi else f"t = {lo}-{hi}"


def _clip_transient(ax, rows: list[dict], column: str, labels: dict[str, str],
                    stopped: Iterable[str] = ()) -> None:
    """Limit the y axis to the curves after their first :data:`SETTLED` of T (and at t = 0),
    leaving out the ``stopped`` (diverged) curves but at t = 0; name any curve that leaves
    it, with its peak, above the panel."""
    last = max(r["iteration"] for r in rows)
    stopped = set(stopped)
    kept = np.array([r[f"{column}_mean"] for r in rows
                     if r["iteration"] == 0 or (r["iteration"] >= SETTLED * last
                                                and _curve(r) not in stopped)], dtype=float)
    kept = kept[np.isfinite(kept) & (kept > 0)]
    if not kept.size:
        return
    low, high = np.log10(kept.min()), np.log10(kept.max())
    pad = 0.08 * max(high - low, 0.02)
    bottom, top = 10 ** (low - pad), 10 ** (high + pad)
    ax.set_ylim(bottom, top)
    notes = []
    for curve, label in labels.items():
        n, mean, _ = _series(rows, curve, column)
        out = mean > top
        if out.any():
            peak = int(np.argmax(mean))
            name = label.split(":")[0]  # the legend says why a curve stopped
            notes.append(f"{name}: above the axis at {_span(list(n[out].astype(int)))} "
                         f"(peak {mean[peak]:.3g} at t = {int(n[peak])})")
    if notes:
        # wrapped to the panel's width (about the characters of 8-point text across it)
        width = max(30, int(ax.get_position().width * ax.figure.get_figwidth() * 72 / 4.6))
        ax.set_title("\n".join(textwrap.fill(note, width) for note in notes), fontsize=8)


def draw_panel_d(rows: list[dict], pens, diverged: dict[str, list[int]] | None = None):
    """(d) Algorithm 1 for each lambda_pen: penalised objective, local and pooled CE.

    ``diverged``: curve -> the iterations at which its runs diverged; such a curve keeps its
    points before (a lone point at t = 0 is drawn as a cross) and says so in the legend.
    """
    diverged = diverged or {}
    runs = _runs(rows)
    names = [f"{p:g}" for p in pens]
    labels = {}
    for n in names:
        labels[n] = f"lambda_pen = {n}"
        if n in diverged:
            labels[n] += (f": diverged at {_span(diverged[n])} "
                          f"({len(diverged[n])} of {runs_phrase(runs)})")
    palette = sweep_palette(names)
    columns = {"objective": "penalised objective", "cross_entropy": "cross-entropy (local data)",
               "union_cross_entropy": "cross-entropy (union of training data)"}
    fig, axes = _loss_panels(rows, labels, columns, palette)
    for ax, column in zip(axes, columns):
        for line in ax.get_lines():  # a curve stopped by divergence: its points marked
            curve = next((c for c, lab in labels.items() if lab == line.get_label()), None)
            if curve in diverged:
                line.set_marker("X")
                line.set_markersize(9)
                line.set_markevery(None)
                line.marker_offset = None
        _clip_transient(ax, rows, column, labels, diverged)
    _finish_panels(fig, axes)
    return fig


def title_d(rows: list[dict], sub: str) -> str:
    return f"(d) Algorithm 1 per lambda_pen, {spread_phrase(_runs(rows))}\n{sub}"


DIAGNOSTIC_COLUMNS = {"consensus_error": "consensus error sum_i ||x_(i) - xbar||^2",
                      "tracking_error": "|ytilde_i - G(x^t)| (mean over agents)",
                      "ztilde_size": "|ztilde_i| (mean over agents; target 0)"}


def draw_diagnostics(rows: list[dict]):
    """Algorithm 1's tracker diagnostics (mean over runs), in Algorithm 1's colour."""
    # from the second record on: at t = 0 every stacked estimate is the same point (0 error)
    fig, axes = _loss_panels(rows, {"alg1": "Algorithm 1"}, DIAGNOSTIC_COLUMNS, PALETTE,
                             first=2)
    _finish_panels(fig, axes)
    return fig


def title_diagnostics(rows: list[dict], sub: str) -> str:
    return f"Algorithm 1 diagnostics, {spread_phrase(_runs(rows))}\n{sub}"


def panel_a(rows: list[dict], path: Path, sub: str) -> None:
    finish_figure(draw_panel_a(rows), path, rows, title_a(rows, sub))


def panel_b(rows: list[dict], path: Path, sub: str) -> None:
    finish_figure(draw_panel_b(rows), path, rows, title_b(sub))


def panel_matched(rows: list[dict], summary: dict, path: Path, sub: str) -> None:
    finish_figure(draw_panel_matched(rows), path, rows, title_matched(summary, sub))


def panel_c(rows: list[dict], deltas, path: Path, sub: str) -> None:
    finish_figure(draw_panel_c(rows, deltas), path, rows, title_c(rows, sub))


def panel_d(rows: list[dict], pens, path: Path, sub: str,
            diverged: dict[str, list[int]] | None = None) -> None:
    finish_figure(draw_panel_d(rows, pens, diverged), path, rows, title_d(rows, sub))


def diagnostics(rows: list[dict], path: Path, sub: str) -> None:
    finish_figure(draw_diagnostics(rows), path, rows, title_diagnostics(rows, sub))


def figures_from_csv(folder: Path):
    """(file name, title, Figure) of every figure of one data set's folder, drawn from its
    CSVs and ``summary.json`` (data set, runs, T, diverged runs)."""
    summary = json.loads((folder / "summary.json").read_text())
    dataset = summary["dataset"]
    sub = subtitle(dataset, summary["runs"], summary["iterations"])
    stopped = diverged_curves(summary.get("diverged", {}))
    a, b, c, d, diag = (read_csv(folder / f"{n}.csv")
                        for n in ("panel_a", "panel_b", "panel_c", "panel_d", "diagnostics"))
    yield "panel_a.png", title_a(a, sub), draw_panel_a(a)
    yield "panel_b.png", title_b(sub), draw_panel_b(b)
    if (folder / "panel_matched.csv").is_file() and "matched" in summary:
        m = read_csv(folder / "panel_matched.csv")
        yield ("panel_matched.png", title_matched(summary["matched"], sub),
               draw_panel_matched(m))
    yield "panel_c.png", title_c(c, sub), draw_panel_c(c)
    yield ("panel_d.png", title_d(d, sub),
           draw_panel_d(d, LAMBDA_PENS[dataset],
                        {curve: its for (panel, curve), its in stopped.items() if panel == "d"}))
    yield "diagnostics.png", title_diagnostics(diag, sub), draw_diagnostics(diag)


def redraw(folder: Path) -> list[Path]:
    """Draw every figure again from the CSVs in ``folder`` (a reproduction's ``--out``: its
    data set folders); returns the PNGs written."""
    written = []
    sets = [folder] if (folder / "summary.json").is_file() else \
        [f for f in sorted(folder.iterdir()) if (f / "summary.json").is_file()]
    if not sets:
        raise FileNotFoundError(2, "no data set folder", str(folder / "<dataset>/summary.json"))
    for where in sets:
        written += save_figures(figures_from_csv(where), where)
    return written

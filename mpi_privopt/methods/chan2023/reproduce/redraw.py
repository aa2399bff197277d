"""``reproduce chan2023 --redraw``: every figure drawn again from the CSVs (and
``summary.json``) a finished reproduction left, without running anything."""
from __future__ import annotations

import json
from pathlib import Path

from mpi_privopt.reproduce import read_csv, save_figures
from . import figures, observer_figures


def figures_from_csv(folder: Path):
    """(file name, title, Figure) of every figure whose CSV is in ``folder`` (the
    ``--distributed`` ones only when that part ran)."""
    summary = json.loads((folder / "summary.json").read_text())
    for mode in summary["modes"]:
        rows = read_csv(folder / f"fig1a_{mode}.csv")
        yield (f"fig1a_{mode}.png", figures.title_1a(rows),
               figures.draw_curves(rows, figures.label_1a, figures.FIG1A_POINTS))
        rows = read_csv(folder / f"fig1b_{mode}.csv")
        yield (f"fig1b_{mode}.png", figures.title_1b(rows),
               figures.draw_curves(rows, figures.label_1b, max(r["t"] for r in rows)))
    rows = read_csv(folder / "privacy_curve.csv")
    yield ("privacy_curve.png",
           figures.privacy_curve_title(rows, summary["clip"], summary["paper_sigma"]),
           figures.draw_privacy_curve(rows))
    if "distributed" not in summary:
        return
    local_epsilon = summary["distributed"]["observers"]["local_epsilon"]
    for schedule in ("ring", "sample"):
        if (folder / f"observers_{schedule}.csv").is_file():
            obs = observer_figures.matrix_from_rows(read_csv(folder / f"observers_{schedule}.csv"))
            yield (f"observers_{schedule}.png",
                   observer_figures.matrix_title(schedule, obs["epsilon"].shape[0]),
                   observer_figures.draw_heatmap(obs, local_epsilon))
    rows = read_csv(folder / "utility_epsilon.csv")
    yield ("utility_epsilon.png",
           observer_figures.utility_title(summary["distributed"]["utility_ranks"]),
           observer_figures.draw_utility(rows))


def redraw(folder: Path) -> list[Path]:
    """Draw every figure again from the CSVs in ``folder``; returns the PNGs written."""
    return save_figures(figures_from_csv(folder), folder)

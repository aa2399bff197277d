"""Every figure of every reproduction, drawn from recorded results, passes the reader's
checks of :mod:`tests.figure_check`: no empty panel, no legend over the data, no curve
hidden under another without a sign of it.

The figures are drawn from the CSVs committed under docs/reproductions and from those of
``reproduce chen2025 --quick`` in tests/figure_data (the same drawing code as a
reproduction's last step and as ``reproduce NAME --redraw``), so no reproduction is run
here; the report's figure and gauthier2024's step matching from synthetic data.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import figure_check  # noqa: E402

from mpi_privopt.methods.chan2023.reproduce import redraw as chan  # noqa: E402
from mpi_privopt.methods.chen2025.reproduce import figures as chen  # noqa: E402
from mpi_privopt.methods.gade2017.reproduce import figures as gade  # noqa: E402
from mpi_privopt.methods.gauthier2024.reproduce import figures as gauthier  # noqa: E402

DOCS = Path(__file__).resolve().parents[2] / "docs" / "reproductions"
FOLDERS = {
    "chan2023": (chan, DOCS / "chan2023"),
    "gade2017": (gade, DOCS / "gade2017"),
    "gauthier2024": (gauthier, DOCS / "gauthier2024"),
    "chen2025/digits": (chen, DOCS / "chen2025" / "digits"),
    "chen2025/colour-digits": (chen, DOCS / "chen2025" / "colour-digits"),
    # the CSVs of ``reproduce chen2025 --quick`` (1 run, T = 30): short transients
    "chen2025 --quick": (chen, Path(__file__).resolve().parents[1] / "figure_data"
                         / "chen2025-quick"),
}


def _problems(figures) -> dict[str, list[str]]:
    import matplotlib.pyplot as plt

    found = {}
    for name, title, fig in figures:
        if title:
            fig.suptitle(title)
        found[name] = figure_check.check_figure(fig)
        plt.close(fig)
    return found


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_recorded_figures_are_readable(folder):
    module, where = FOLDERS[folder]
    found = _problems(module.figures_from_csv(where))
    assert found, f"no figure drawn from {where}"
    assert {name: p for name, p in found.items() if p} == {}


# The checks themselves find what they are meant to find.

def _figure():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    return fig, ax


def test_check_finds_an_empty_log_panel():
    fig, ax = _figure()
    ax.plot([1, 2, 3], [-1.0, -2.0, -3.0], label="negative")
    with warnings.catch_warnings():  # matplotlib: "Data has no positive values"
        warnings.simplefilter("ignore")
        ax.set_yscale("log")
    assert any("shows no data" in p for p in figure_check.check_figure(fig))


def test_check_finds_a_legend_over_the_data():
    import numpy as np

    fig, ax = _figure()
    x = np.linspace(0, 1, 50)
    for k in range(6):
        ax.plot(x, np.full_like(x, k), label=f"a long label for curve {k}")
    ax.legend(loc="center")
    assert any("covers" in p for p in figure_check.check_figure(fig))


def test_check_finds_a_hidden_curve_and_accepts_a_halo():
    import numpy as np

    x = np.linspace(0, 1, 50)
    fig, ax = _figure()
    ax.plot(x, x ** 2, label="under", linewidth=1.5)
    ax.plot(x, x ** 2, label="over", linewidth=1.5)
    assert any("'under' is hidden under 'over'" in p for p in figure_check.check_figure(fig))
    fig, ax = _figure()
    ax.plot(x, x ** 2, label="under", linewidth=5, alpha=0.4)
    ax.plot(x, x ** 2, label="over", linewidth=1.5)
    assert figure_check.check_figure(fig) == []


# ``report --png``, drawn from small synthetic runs: each kind of matrix and curve.

def _report_run(K: int = 4, budget: float = 10.0, eps: float = 8.5552, varied: bool = False,
                unbounded: bool = False) -> dict:
    from types import SimpleNamespace

    import numpy as np

    ring = np.zeros((K, K))
    for k in range(K):
        ring[k, (k + 1) % K] = ring[(k + 1) % K, k] = 1
    epsilon = np.where(ring > 0, eps, np.nan)
    moved = ring * 3200
    if varied:
        moved = moved * np.arange(1, K + 1)[:, None] ** 4
        epsilon[0, 1] = eps / 4
    if unbounded:
        epsilon[1, 0] = np.inf
    curve = np.geomspace(4.0, 0.05, 51) * (1 + 0.2 * np.sin(np.arange(51)))
    return {"metrics": {"iteration": np.arange(51), "error": curve,
                        "elapsed_seconds": np.zeros(51)},
            "bytes": moved, "epsilon": epsilon,
            "privacy": {"delta": 1e-5, "agents": [{"budget": budget}] * K},
            "summary": SimpleNamespace(algorithm="zcdp-nfl", problem="elastic-net", ranks=K)}


REPORTS = {
    "flat under a budget": {},
    "flat, no budget": {"budget": float("inf")},
    "varied": {"varied": True},
    "an unbounded link": {"unbounded": True},
    "many agents": {"K": 24, "varied": True},
}


def test_report_png_is_readable():
    from mpi_privopt.report_figure import report_figure

    found = _problems((name, None, report_figure(_report_run(**kw)))
                      for name, kw in REPORTS.items())
    assert {name: p for name, p in found.items() if p} == {}


def test_gauthier_tuning_figure_is_readable():
    """The step-matching figure, drawn again from its committed curves and table."""
    from mpi_privopt.reproduce import read_csv

    folder = DOCS / "gauthier2024"
    figure = gauthier.draw_tuning(read_csv(folder / "tuning_curves.csv"),
                                  read_csv(folder / "tuning.csv"))
    assert _problems([("tuning.png", None, figure)]) == {"tuning.png": []}


def test_gade_figure1_of_one_seed_is_readable():
    """``reproduce gade2017 --quick`` runs one seed: no bands, DGD still on RSS-NB."""
    from mpi_privopt.reproduce import read_csv

    rows = read_csv(DOCS / "gade2017" / "fig1.csv")
    found = _problems((name, title, gade.draw_convergence(rows, list(series), 1))
                      for name, series, title in gade.CONVERGENCE[:1])
    assert found == {"fig1": []}


@pytest.mark.parametrize("name", ["chan2023", "chen2025", "gade2017", "gauthier2024"])
def test_redraw_without_a_finished_reproduction_is_one_clear_message(tmp_path, name):
    import importlib

    from mpi_privopt.errors import ConfigError

    module = importlib.import_module(f"mpi_privopt.methods.{name}.reproduce")
    with pytest.raises(ConfigError, match=f"reproduce {name} --redraw: .* is not a directory"):
        module.main(["--redraw", "--out", str(tmp_path / "nowhere")])
    with pytest.raises(ConfigError, match=f"reproduce {name} --redraw: .* is missing"):
        module.main(["--redraw", "--out", str(tmp_path)])

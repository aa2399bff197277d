"""The report's PNG: what each panel says and shows, read from the matplotlib Figure."""
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from mpi_privopt.report_figure import CELL_VALUES, report_figure  # noqa: E402


def _run(K=4, curve=None, bytes_=None, eps=None, budget=10.0, column="error"):
    ring = np.zeros((K, K))
    for k in range(K):
        ring[k, (k + 1) % K] = ring[(k + 1) % K, k] = 1
    curve = np.geomspace(4.0, 0.01, 21) if curve is None else curve
    return {
        "metrics": {"iteration": np.arange(len(curve)) * 10, column: curve,
                    "elapsed_seconds": np.zeros(len(curve))},
        "bytes": ring * 3200 if bytes_ is None else bytes_,
        "epsilon": np.where(ring > 0, 8.56, np.nan) if eps is None else eps,
        "privacy": {"delta": 1e-5, "agents": [{"budget": budget} for _ in range(K)]},
        "summary": SimpleNamespace(algorithm="zcdp-nfl", problem="elastic-net", ranks=K),
    }


def _bars(fig):
    """The colour bars (the axes beyond the three panels)."""
    return fig.axes[3:]


def test_the_curve_panel_names_its_metric_and_goes_log_over_decades():
    fig = report_figure(_run())
    curve = fig.axes[0]
    assert curve.get_title() == "error against iteration"
    assert "accuracy" not in curve.get_title() and curve.get_ylabel() == "error"
    assert curve.get_yscale() == "log"  # 4 -> 0.01 spans decades
    flat = report_figure(_run(curve=np.linspace(5.0, 0.3, 21), column="objective"))
    assert flat.axes[0].get_yscale() == "linear"  # a factor 17: linear
    assert flat.axes[0].get_title() == "objective against iteration"


def test_ranks_are_integer_ticks():
    fig = report_figure(_run(K=5))
    for ax in fig.axes[1:3]:
        for ticks in (ax.get_xticks(), ax.get_yticks()):
            inside = [t for t in ticks if -0.5 <= t <= 4.5]
            assert inside == list(range(5))
            assert all(float(t).is_integer() for t in ticks)


def test_small_matrices_print_their_values_in_the_cells():
    fig = report_figure(_run(K=4))
    bytes_texts = [t.get_text() for t in fig.axes[1].texts]
    eps_texts = [t.get_text() for t in fig.axes[2].texts]
    assert bytes_texts == ["3.12 KiB"] * 8  # one per directed link of the 4-ring
    assert eps_texts == ["8.56"] * 8
    big = report_figure(_run(K=CELL_VALUES + 2))
    assert len(big.axes[1].texts) == len(big.axes[2].texts) == 0


def test_a_flat_matrix_has_no_colour_bar_but_says_its_value():
    fig = report_figure(_run(budget=float("inf")))  # flat bytes, flat epsilon, no budget
    assert _bars(fig) == []
    assert "every link: 3.125 KiB (3200 bytes)" in fig.axes[1].get_title()
    assert "every private link: 8.56" in fig.axes[2].get_title()


def test_varied_matrices_get_colour_bars_and_a_log_scale_over_decades():
    run = _run(K=4)
    run["bytes"] = run["bytes"] * np.arange(1, 5)[:, None] ** 4  # 3200 .. 819200
    run["epsilon"][0, 1] = 2.0
    fig = report_figure(run)
    assert len(_bars(fig)) == 2
    assert type(fig.axes[1].images[0].norm).__name__ == "LogNorm"
    assert type(fig.axes[2].images[0].norm).__name__ == "Normalize"  # 2 .. 10: linear


def test_the_budget_is_marked_on_the_privacy_matrix():
    fig = report_figure(_run(budget=10.0))
    assert "budget 10" in fig.axes[2].get_title()
    bar = _bars(fig)[-1]
    lines = [line.get_ydata()[0] for line in bar.lines]
    assert 10.0 in lines  # the budget's line on the privacy colour bar
    labels = {t.get_text(): t.get_color() for t in bar.get_yticklabels()}
    assert labels.get("budget 10") == "red"  # a tick label beside the bar, not over the title
    assert not bar.texts


def test_a_flat_privacy_matrix_under_a_budget_says_its_value_rounded_up():
    run = _run(budget=10.0)
    run["epsilon"] = np.where(np.isnan(run["epsilon"]), np.nan, 8.5552)
    fig = report_figure(run)
    assert "every private link: 8.556, budget 10" in fig.axes[2].get_title()
    assert {t.get_text() for t in fig.axes[2].texts} == {"8.56"}
    image = fig.axes[2].images[0]
    assert image.norm.vmin == 0.0 and image.norm.vmax == 10.0  # the scale starts at 0


def test_linear_colour_scales_start_at_zero():
    run = _run(K=4)
    run["bytes"] = run["bytes"] * np.arange(1, 5)[:, None]  # 3200 .. 12800: linear
    run["epsilon"][0, 1] = 2.0
    fig = report_figure(run)
    for ax in fig.axes[1:3]:
        assert type(ax.images[0].norm).__name__ == "Normalize"
        assert ax.images[0].norm.vmin == 0.0
    assert _bars(fig)[0].get_ylabel() == "bytes sent on the link"


def test_an_error_curve_is_on_a_log_axis_even_within_two_decades():
    fig = report_figure(_run(curve=np.linspace(5.0, 0.3, 21), column="error"))
    assert fig.axes[0].get_yscale() == "log"


def test_unbounded_links_are_crossed_without_a_meaningless_colour_bar():
    run = _run()
    run["epsilon"] = np.where(np.isnan(run["epsilon"]), np.nan, np.inf)
    fig = report_figure(run)
    assert len(fig.axes[2].collections) == 1  # the red crosses
    assert fig.axes[2].get_legend().get_texts()[0].get_text() == "unbounded (not private)"
    assert len(_bars(fig)) == 0

"""``report RUN_DIR``'s text: the privacy matrix says what the run's headline says."""
from types import SimpleNamespace

import numpy as np
import pytest

from mpi_privopt.report import text_report


def _run(delta_headline: float, best: float, pure: float | None):
    K = 3
    ring = np.zeros((K, K), dtype=bool)
    for k in range(K):
        ring[k, (k + 1) % K] = ring[(k + 1) % K, k] = True
    links = [[(pure if ring[i, j] else None) for j in range(K)] for i in range(K)]
    return {
        "metrics": {"iteration": np.array([0, 10]), "error": np.array([3.0, 0.123456]),
                    "elapsed_seconds": np.zeros(2)},
        "bytes": np.where(ring, 800.0, 0.0),
        "epsilon": np.where(ring, best, np.nan),
        "privacy": {"delta": 1e-5, "noise": "fast", "links": {"epsilon_pure": links}},
        "summary": SimpleNamespace(algorithm="ldp-aggregative", problem="q", ranks=K,
                                   iterations=10, evaluate="reference", status="completed",
                                   privacy_delta=delta_headline),
    }


def test_a_pure_local_dp_run_shows_pure_epsilon_at_delta_0():
    text = text_report(_run(0.0, best=1083.8148260893445, pure=1083.8148260893445))
    assert "pure epsilon at delta 0" in text and "at delta 1e-05" not in text
    assert "worst 1084" in text                        # rounded up, never 1083
    assert "iter 10: 0.1235" in text                   # the curve to 4 significant digits


def test_an_approximate_dp_run_shows_its_conversion_at_its_delta():
    text = text_report(_run(1e-5, best=8.5552, pure=None))
    assert "epsilon at delta 1e-05 (best valid conversion per link" in text
    assert "worst 8.556" in text and " 8.56 " in text  # cells: 3 digits, rounded up too
    assert "pure epsilon" not in text


def test_the_png_titles_the_privacy_panel_with_the_runs_headline_measure():
    pytest.importorskip("matplotlib")
    from mpi_privopt.report_figure import report_figure
    pure = report_figure(_run(0.0, best=900.0, pure=1083.8148260893445)).axes[2]
    # every link has the same loss: the title says it (4 digits, as the text report's
    # "worst 1084"), the cells in 3 digits; both rounded up
    assert pure.get_title() == ("privacy loss per link (pure epsilon at delta 0)\n"
                                "every private link: 1084")
    assert "1.09e+03" in [t.get_text() for t in pure.texts]
    gaussian = report_figure(_run(1e-5, best=8.5552, pure=None)).axes[2].get_title()
    assert gaussian.startswith("privacy loss per link (epsilon at delta 1e-05)")


def test_a_non_private_run_shows_unbounded_never_inf():
    text = text_report(_run(1e-5, best=float("inf"), pure=None))
    assert "worst unbounded" in text
    cells = [line for line in text.splitlines()[1:] if line.lstrip()[:1].isdigit()]
    assert any("unbounded" in line for line in cells)
    assert "unboundedunbounded" not in text  # the columns widen: cells never touch
    assert "inf" not in text.replace("unbounded", "")


def test_a_path_that_is_no_run_directory_is_named_for_what_it_is(tmp_path):
    from mpi_privopt.errors import ConfigError
    from mpi_privopt.report import load_run
    a_file = tmp_path / "summary.json"
    a_file.write_text("{}")
    for path, says in ((tmp_path / "nowhere", "does not exist"),
                       (a_file, "is a file, not a run directory"),
                       (tmp_path, "is not a finished run directory (missing traffic.json")):
        with pytest.raises(ConfigError, match=f"{path}.*{says}".replace("(", r"\(")):
            load_run(path)

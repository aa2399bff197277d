"""reproduce chen2025: the panels' data assembly (no MPI, no runs)."""
import math

import numpy as np
import pytest

from mpi_privopt.config import config_from_dict
from mpi_privopt.methods.chen2025.ldp_budget import BlockBudget
from mpi_privopt.methods.chen2025.reproduce import panels, settings
from mpi_privopt.methods.chen2025.reproduce.run_plan import plan


def _params(method, dataset="digits"):
    cfg = settings.config(dataset, settings.algorithm_section(method, dataset), iterations=10,
                          eval_every=5, seed=0, name="t")
    return config_from_dict(cfg).algorithm.params


def test_curve_rows_mean_std_and_a_run_that_stopped_early():
    full = {"iteration": np.array([0, 10, 20]), "objective": np.array([2.0, 1.0, 0.5])}
    short = {"iteration": np.array([0, 10]), "objective": np.array([4.0, 3.0])}
    rows = panels.curve_rows({"m": [full, short]}, ("objective",))
    assert [(r["iteration"], r["runs"]) for r in rows] == [(0, 2), (10, 2), (20, 1)]
    assert rows[0]["objective_mean"] == pytest.approx(3.0)
    assert rows[1]["objective_std"] == pytest.approx(1.0)   # population std of 1 and 3
    assert rows[2]["objective_mean"] == 0.5 and rows[2]["objective_std"] == 0.0


def test_columns_of_rows():
    cols = panels.columns_of([{"iteration": 1, "a": 2.0}, {"iteration": 3, "a": 4.0}])
    assert cols["iteration"].tolist() == [1, 3] and cols["a"].tolist() == [2.0, 4.0]


def test_algorithm1_curve_ends_at_the_eq21_partial_sum_and_grows():
    curve = panels.budget_curve("ldp-aggregative", _params("alg1"), 1000)
    assert curve[0] == 0.0 and np.all(np.diff(curve) > 0)
    # eq. (21) for agent 1 of the paper's schedule, from the closed form written out here
    v = {"x": 0.55, "y": 0.02, "z": 0.03}
    vs = {"x": 0.505 - 0.001, "y": 0.005 - 0.001, "z": 0.015 - 0.001}
    e = {"x": 1 + v["x"] - v["z"], "y": 1 + v["y"], "z": 1 + v["z"]}
    t = np.arange(2.0, 1002.0)
    direct = sum(math.sqrt(2) / 0.01 * np.sum(t ** -(e[b] - vs[b])) for b in "xyz")
    assert curve[-1] == pytest.approx(direct, rel=1e-12)
    assert curve[-1] == pytest.approx(2596, abs=1)   # docs/algorithms/ldp-aggregative.md


def test_baseline_curves_end_at_their_reports():
    gt = panels.budget_curve("aggregative-gt", _params("gt36"), 50)
    blocks = panels.budget_blocks("aggregative-gt", _params("gt36"), 0, 5)
    assert gt[50] == pytest.approx(sum(b.partial_sum(49) for b in blocks.values()), rel=1e-12)
    assert gt[1] > 0   # y_i^0 already depends on a sample: the first message costs
    for method, name in (("pdop26", "pdop-aggregative"), ("tvs51", "tvs-aggregative")):
        curve = panels.budget_curve(name, _params(method), 300)
        blocks = panels.budget_blocks(name, _params(method), 0, 5)
        assert curve[300] == pytest.approx(sum(b.partial_sum(300) for b in blocks.values()),
                                           rel=1e-12)


def test_noise_off_has_no_curve():
    assert panels.budget_curve("ldp-aggregative", _params("alg1-noise-off"), 10) is None


def test_colour_digits_settings_scale_the_noise():
    alg1 = settings.algorithm_section("alg1", "colour-digits")
    pdop = settings.algorithm_section("pdop26", "colour-digits")
    assert alg1["sigma_x"] == 0.001 and pdop["sigma_x"] == pytest.approx(0.007)
    assert settings.config("colour-digits", alg1, iterations=1, eval_every=1, seed=0,
                           name="t")["problem"]["options"]["lambda_pen"] == 0.1


def test_plan_has_every_curve_once_per_seed():
    from mpi_privopt.methods.chen2025.reproduce.matched import MATCHED

    runs = plan("digits", 2, 30, 10)
    per_seed = len(settings.METHODS) + len(MATCHED) + len(settings.DELTAS) + 5
    assert len(runs) == 2 * per_seed
    assert len({r.key for r in runs}) == len(runs)
    assert sum(r.diagnostics for r in runs) == 2
    assert [r.curve for r in runs if r.panel == "m"] == [*MATCHED, *MATCHED]
    for r in runs[:per_seed]:
        config_from_dict(r.settings)   # every run's configuration is valid


def test_block_budget_is_what_the_curve_sums():
    b = BlockBudget(1.0, 1.5, 0.01, 0.5)
    assert sum(b.sensitivity(t) / b.scale(t) for t in range(1, 11)) == pytest.approx(
        b.partial_sum(10), rel=1e-12)


def test_bad_sizes_are_refused_before_any_run():
    from mpi_privopt.errors import ConfigError
    from mpi_privopt.methods.chen2025 import reproduce as chen2025

    for argv in (["--runs", "0"], ["--iterations", "0"], ["--eval-every", "0"]):
        with pytest.raises(ConfigError, match="must be 1 or more"):
            chen2025.main(argv)


def test_tracker_diagnostics_from_the_agents_files(tmp_path):
    from mpi_privopt.methods.chen2025.reproduce.diagnostics import TrackerLog, tracker_diagnostics

    class Problem:
        def __init__(self, g):
            self.g = g

        def aggregate(self, x):
            return np.array([self.g])

    class Core:
        def __init__(self, X, g):
            self.X, self.problem, self.listeners = X, Problem(g), []

        def add_tracker_listener(self, listener):
            self.listeners.append(listener)

    class Method:
        def __init__(self, X, g):
            self.core = Core(X, g)

    stacks = [np.array([0.0, 2.0]), np.array([2.0, 4.0])]
    for k, (X, g, y, z) in enumerate(zip(stacks, (1.0, 3.0), (2.5, 1.0), (0.1, -0.3))):
        log = TrackerLog(every=2)
        method = Method(X, g)
        log.attach(None, method)
        assert method.core.listeners == [log]
        for _ in range(4):   # records iterations 1, 2, 4
            log(X[:1], np.array([y]), np.array([z]))
        log.save(tmp_path, k)
    rows = tracker_diagnostics(tmp_path, 2)
    assert [r["iteration"] for r in rows] == [1, 2, 4]
    # xbar = (1, 3): each agent is (1, 1) away; G = 2: |2.5 - 2| and |1 - 2|
    assert rows[0]["consensus_error"] == pytest.approx(4.0)
    assert rows[0]["tracking_error"] == pytest.approx(0.75)
    assert rows[0]["ztilde_size"] == pytest.approx(0.2)

"""zCDP-NFL's baselines and the gauthier2024 reproduction: configuration, local solves, specs."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mpi_privopt.privacy.conversions import zcdp_to_eps_tight
from scipy import optimize

from mpi_privopt.methods import ALGORITHMS
from mpi_privopt.config import load_config, packaged_experiments
from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.calibration import calibrate_zcdp_total
from mpi_privopt.privacy.conversions import gaussian_exact_eps
from mpi_privopt.privacy.noise import agent_noise
from mpi_privopt.problems import LocalProblem
from mpi_privopt.methods.gauthier2024 import reproduce as g24


def test_the_baselines_are_registered_and_private():
    for name in ("zcdp-nfl", "eps-delta-nfl", "zcdp-grad-nfl", "p-admm"):
        assert ALGORITHMS[name].private
        assert "phase" in ALGORITHMS[name].__doc__  # says what goes on which link


@pytest.mark.parametrize("overrides,message", [
    (["algorithm.name=p-admm", "problem.name=elastic-net", "problem.clip=3",
      "privacy.epsilon=1"], "squared-loss"),
    (["algorithm.name=p-admm", "problem.name=lad", "problem.clip=3", "privacy.epsilon=1"],
     "absolute"),
    (["algorithm.name=eps-delta-nfl", "problem.clip=3", "privacy.epsilon=300"], ">= 1"),
    (["algorithm.name=eps-delta-nfl", "problem.clip=3", "privacy.epsilon=1",
      "algorithm.horizon=50"], "horizon"),
    (["algorithm.name=eps-delta-nfl", "problem.clip=3", "privacy.epsilon=1",
      "algorithm.mechanism=laplace"], "mechanism"),
    (["algorithm.name=zcdp-grad-nfl", "privacy.epsilon=1"], "problem.clip"),
    (["algorithm.name=zcdp-grad-nfl", "problem.clip=3"], "privacy.epsilon is inf"),
    (["algorithm.name=zcdp-grad-nfl", "algorithm.noiseless=true", "privacy.epsilon=1"],
     "noiseless"),
    (["algorithm.name=zcdp-grad-nfl", "problem.clip=3", "privacy.epsilon=1",
      "algorithm.step=0"], "algorithm.step"),
    (["algorithm.name=p-admm", "problem.clip=3", "privacy.epsilon=1",
      "algorithm.conversion=best"], "conversion"),
])
def test_bad_configurations_are_refused_with_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


@pytest.mark.parametrize("name,key", [("admm", "eta"), ("zcdp-nfl", "eta"), ("zcdp-nfl", "rho"),
                                      ("eps-delta-nfl", "eta"), ("eps-delta-nfl", "rho"),
                                      ("p-admm", "rho"), ("zcdp-grad-nfl", "step")])
def test_each_method_refuses_a_non_positive_step_or_penalty(name, key):
    with pytest.raises(ConfigError, match=f"algorithm.{key} = -0.1 must be positive"):
        load_config(None, [f"algorithm.name={name}", "problem.clip=3", "privacy.epsilon=1",
                           f"algorithm.{key}=-0.1"])


def test_analytic_mechanism_lifts_the_classical_limit():
    cfg = load_config(None, ["algorithm.name=eps-delta-nfl", "problem.clip=3",
                             "privacy.epsilon=300", "algorithm.mechanism=analytic"])
    assert cfg.algorithm.params.mechanism == "analytic"


@pytest.mark.parametrize("name", ["gauthier2024-elastic-net", "gauthier2024-lad",
                                  "gauthier2024-ridge"])
def test_packaged_experiments_load(name):
    assert name in packaged_experiments()
    cfg = load_config(name)
    assert cfg.algorithm.name == "zcdp-nfl" and math.isfinite(cfg.privacy.epsilon)
    assert cfg.problem.clip > 0 and cfg.run.iterations == 200


# -- P-ADMM's exact local solve ----------------------------------------------------------

def make_padmm(clip, rho=0.7, degree=3, K=5):
    rng = np.random.default_rng(4)
    X = rng.standard_normal((50, 8))
    y = X @ rng.standard_normal(8) + 0.1 * rng.standard_normal(50)
    problem = LocalProblem(X, y, "squared", l1=0.0, l2=1.0, n_agents=K, clip=clip)
    # only the local solve is exercised: a network whose channel sends nothing
    net = SimpleNamespace(n_in=degree, broadcast_channel=lambda phase, p, buffers: SimpleNamespace(
        outgoing=np.zeros(p), last_sent=np.zeros(p), received=np.zeros((degree, p))))
    agent = SimpleNamespace(id=0, problem=problem, net=net, noise=agent_noise("fast", 0, 0),
                            privacy=SimpleNamespace(epsilon=1.0, delta=1e-5), iterations=10)
    params = ALGORITHMS["p-admm"].Params(rho=rho)
    return ALGORITHMS["p-admm"](agent, params), problem


def surrogate(problem, w, clip):
    """The clipped squared loss, by integrating the clipped derivative (test's own code)."""
    r = problem.X @ w - problem.y
    t = clip / (2 * np.linalg.norm(problem.X, axis=1)) if clip else np.full(len(r), np.inf)
    m = np.minimum(np.abs(r), t)
    return (m * (2 * np.abs(r) - m)).mean()


@pytest.mark.parametrize("clip", [0.0, 1.0, 5.0])
def test_p_admm_local_solve_is_the_exact_minimiser(clip):
    algorithm, problem = make_padmm(clip)
    rng = np.random.default_rng(1)
    linear = 3 * rng.standard_normal(8)
    rho, d, K = 0.7, 3, 5

    def objective(w):
        return (surrogate(problem, w, clip) + (1.0 / K) * (w @ w) + rho * d * (w @ w)
                + linear @ w)

    w = algorithm.local_minimiser(rng.standard_normal(8), linear)
    reference = optimize.minimize(objective, np.zeros(8), method="BFGS",
                                  options={"gtol": 1e-12}).x
    np.testing.assert_allclose(w, reference, atol=1e-6)
    # stationarity with the package's clipped gradient oracle, to rounding
    g = problem.subgradient(w) + 2 * rho * d * w + linear
    assert np.abs(g).max() < 1e-12


def test_p_admm_local_solve_is_stationary_when_a_clipped_sample_changes_side():
    # a full Newton step may keep the set of unclipped samples while a clipped sample's
    # residual changes sign: its linear term flips, so the point is not the minimiser of the
    # piece the step was built on (the sensitivity check found one such solve, gradient
    # 2 c1 / M off); the solve must go on until it lands in the same piece
    algorithm, problem = make_padmm(1.0)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(300):
        start, linear = 10 * rng.standard_normal(8), 3 * rng.standard_normal(8)
        w = algorithm.local_minimiser(start, linear)
        g = problem.subgradient(w) + 2 * 0.7 * 3 * w + linear
        worst = max(worst, np.abs(g).max())
    assert algorithm.capped_solves == 0
    assert worst < 1e-12


def test_p_admm_counts_and_warns_a_solve_stopped_by_the_newton_cap():
    from mpi_privopt.methods.gauthier2024.p_admm import NewtonCapWarning
    rng = np.random.default_rng(1)
    start, linear = 10 * rng.standard_normal(8), 3 * rng.standard_normal(8)
    exact, _ = make_padmm(1.0)
    w = exact.local_minimiser(start, linear)            # clipping on: several Newton steps
    assert exact.capped_solves == 0 and exact.solves == 1
    assert exact.report()["p-admm capped local solves agent 0"].startswith("0 of 1")
    capped, problem = make_padmm(1.0)
    capped.newton_iterations = 1
    with pytest.warns(NewtonCapWarning, match="cap of 1 Newton iterations"):
        stopped = capped.local_minimiser(start, linear)
    assert np.abs(stopped - w).max() > 1e-6            # really not the minimiser
    g = problem.subgradient(stopped) + 2 * 0.7 * 3 * stopped + linear
    assert np.abs(g).max() > 1e-6
    capped.local_minimiser(start, linear)
    assert (capped.capped_solves, capped.solves) == (2, 2)
    assert capped.report()["p-admm capped local solves agent 0"].startswith(
        "WARNING: 2 of 2 stopped at the cap of 1 Newton iterations")


def test_p_admm_sensitivity_is_the_strong_convexity_bound():
    algorithm, problem = make_padmm(2.0)
    assert algorithm.sensitivity() == pytest.approx(2 * 2.0 / (50 * (2 * 0.7 * 3 + 2 * 1.0 / 5)))


def test_p_admm_minimiser_moves_at_most_the_sensitivity_when_one_sample_changes():
    algorithm, problem = make_padmm(2.0)
    rng = np.random.default_rng(7)
    linear = rng.standard_normal(8)
    w = algorithm.local_minimiser(np.zeros(8), linear)
    worst = 0.0
    for _ in range(20):
        problem.X[-1] = 5 * rng.standard_normal(8)
        problem.y[-1] = 20 * rng.standard_normal()
        problem.row_norms[-1] = np.linalg.norm(problem.X[-1])
        algorithm._threshold[-1] = 2.0 / (2 * problem.row_norms[-1])
        worst = max(worst, np.linalg.norm(algorithm.local_minimiser(np.zeros(8), linear) - w))
    assert 0 < worst <= algorithm.sensitivity()


# -- the reproduction's run specifications ------------------------------------------------

@pytest.mark.parametrize("method", ["zcdp-nfl", "zcdp-nfl-tight", "zcdp-nfl-exact", "zcdp-nfl-const",
                                    "eps-delta-nfl", "zcdp-grad-nfl", "p-admm"])
def test_reproduction_specs_are_valid_configurations(method):
    problem = "ridge" if method == "p-admm" else "elastic-net"
    spec = g24.make_spec(problem, method, 10.0, 1000, 200, 1, step=0.1)
    cfg = load_config(None, spec.overrides)
    assert cfg.privacy.delta == g24.DELTA and cfg.run.iterations == 200
    assert cfg.problem.clip == g24.CLIP and cfg.topology.seed == g24.TOPOLOGY_SEED
    assert getattr(cfg.algorithm.params, "tau") == g24.TAU


@pytest.mark.parametrize("method", ["admm", "dgd", "exact-admm"])
def test_reproduction_non_private_specs(method):
    spec = g24.make_spec("ridge", method, math.inf, 1000, 200, 1, step=0.1)
    cfg = load_config(None, spec.overrides)
    assert cfg.algorithm.params.noiseless and math.isinf(cfg.privacy.epsilon)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0, 100.0])
def test_exact_runs_are_launched_with_the_exact_conversion(eps):
    spec = g24.make_spec("elastic-net", "zcdp-nfl-exact", eps, 1000, 200, 1)
    assert "algorithm.conversion=exact" in spec.overrides
    assert f"privacy.epsilon={eps!r}" in spec.overrides and spec.epsilon == eps
    # The committed figures launched the same runs as tight runs at tight(Phi_exact(eps)):
    # the same total zCDP, hence the same phi^(1) and the same noise.
    launched = zcdp_to_eps_tight(calibrate_zcdp_total(eps, g24.DELTA, "exact"), g24.DELTA)
    assert launched > eps
    total = calibrate_zcdp_total(launched, g24.DELTA, "tight")
    assert total == pytest.approx(calibrate_zcdp_total(eps, g24.DELTA, "exact"), rel=1e-12)
    assert gaussian_exact_eps(math.sqrt(2 * total), g24.DELTA) == pytest.approx(eps, rel=1e-9)


def test_classical_mechanism_is_replaced_only_where_it_does_not_hold():
    assert not g24.classical_invalid(100.0, 200)
    assert g24.classical_invalid(100.0, 100)
    spec = g24.make_spec("lad", "eps-delta-nfl", 100.0, 1000, 100, 1)
    assert "algorithm.mechanism=analytic" in spec.overrides


def test_sweep_shares_data_across_methods_and_redraws_it_across_runs():
    args = g24.build_parser().parse_args(["--runs", "2"])
    specs = g24.sweep_specs(args, {"elastic-net": 0.1, "lad": 0.05, "ridge": 0.1})
    keys = [s.key for s in specs]
    assert len(keys) == len(set(keys))
    assert {s.seed for s in specs} == {1000, 1001}
    per_seed = len(specs) // 2
    assert per_seed == 5 * 7 + 3 * 7 + 2 * 7 + 2 + 6

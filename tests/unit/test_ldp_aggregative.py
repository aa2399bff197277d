"""ldp-aggregative's pieces without MPI: eq. (21) and its limits, the packed event, the
checks of Assumptions 3 and 4 and of Theorem 1, the schedules' presets, the quadratic
instance and the configuration of aggregative problems."""
import math

import networkx as nx
import numpy as np
import pytest

from mpi_privopt.methods.chen2025.aggregative_parts import check_mixing, mixing_matrix
from mpi_privopt.methods.chen2025.ldp_aggregative import (LDPAggregativeParams, resolve_schedules,
                                                    theorem1_failures)
from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.accountants import resolve, zcdp_rho
from mpi_privopt.privacy.events import LaplaceEvent, PackedLaplaceEvent, PureDPEvent
from mpi_privopt.methods.chen2025.ldp_budget import (NOMINAL, NOMINAL_EPSILON, BlockBudget,
                                            GeometricBlock, accounting_fields,
                                            SampledBlock, accounting_label,
                                            check_assumption4, fresh_batch)
from mpi_privopt.problems.registry import AGGREGATIVE_PROBLEMS
from mpi_privopt.methods.chen2025.problems.quadratic import QuadraticOptions, build_quadratic
from mpi_privopt.problems.sampling import sampling_rng


# -- eq. (21) ---------------------------------------------------------------------------------

@pytest.mark.parametrize("p, at_1000, limit", [(1.016, 6.12, 62.1), (1.020, 6.03, 49.6)])
def test_partial_sums_and_limit_match_the_method_page_table(p, at_1000, limit):
    # docs/methods/chen2025.md, "Experiment schedules": sum_{t=1}^T (t+1)^-p; factor sqrt(2) C
    # / sig = 1 with C = 1/sqrt(2), sig = 1
    block = BlockBudget(1 / math.sqrt(2), exponent=p, sigma=1.0, decay=0.0)
    assert block.partial_sum(1000) == pytest.approx(at_1000, abs=0.005)
    assert block.limit() == pytest.approx(limit, abs=0.05)
    assert block.limit() < block.bound_155() == pytest.approx(1 / (p - 1))


def test_block_budget_is_the_sum_of_its_releases():
    block = BlockBudget(2.0, exponent=1.6, sigma=0.3, decay=0.5)
    assert block.sensitivity(0) == 0.0  # the t = 0 message depends on no sample
    per_release = [block.sensitivity(t) / block.scale(t) for t in range(0, 51)]
    assert math.fsum(per_release) == pytest.approx(block.partial_sum(50), rel=1e-13)
    assert block.scale(3) == pytest.approx(0.3 * 4 ** -0.5 / math.sqrt(2))


def test_divergent_series_has_no_finite_limit():
    block = BlockBudget(1.0, exponent=1.02, sigma=1.0, decay=0.02)
    assert block.limit() == math.inf and block.bound_155() == math.inf


def test_packed_event_resolves_to_the_pure_sum():
    parts = (LaplaceEvent(0.1, 1.0), LaplaceEvent(0.2, 0.5), LaplaceEvent(0.0, 2.0))
    event = PackedLaplaceEvent(parts, owner=3)
    pure = resolve(event)
    assert isinstance(pure, PureDPEvent) and pure.owner == 3
    assert pure.epsilon == pytest.approx(0.1 + 0.4)
    assert zcdp_rho(event) == pytest.approx(0.5 * 0.5 ** 2)
    with pytest.raises(ConfigError, match="LaplaceEvent"):
        PackedLaplaceEvent((PureDPEvent(0.1),))


def test_accounting_label_says_nominal():
    assert accounting_label([1.0] * 6) == NOMINAL
    assert "user-given" in accounting_label([1.0, 2.0])


# -- Assumption 4, Theorem 1, presets -------------------------------------------------------------

def test_assumption4_names_agent_and_inequality():
    v = {"x": 0.55, "y": 0.02, "z": 0.03}
    sigma = {"x": 0.01, "y": 0.01, "z": 0.01}
    check_assumption4(0, v, {"x": 0.51, "y": 0.01, "z": 0.02}, sigma)
    with pytest.raises(ConfigError, match="agent 4: vs_x = 0.52 >= v_x - v_z = 0.52"):
        check_assumption4(4, v, {"x": 0.52, "y": 0.01, "z": 0.02}, sigma)
    with pytest.raises(ConfigError, match="agent 1: vs_z = 0.03 >= v_z = 0.03"):
        check_assumption4(1, v, {"x": 0.5, "y": 0.01, "z": 0.03}, sigma)
    # no noise on a block: nothing to check (it is sent in the clear)
    check_assumption4(1, v, {"x": 0.5, "y": 0.01, "z": 0.03}, {**sigma, "z": 0.0})


def test_corollary1_i_meets_theorem1_and_the_paper_fails_case_iii():
    s = resolve_schedules(LDPAggregativeParams(preset="corollary1-i", delta=0.02), 5)
    assert s.v == pytest.approx({"x": 0.64, "y": 0.04, "z": 0.06})
    assert theorem1_failures("strongly-convex", s.v, s.vs, True) == []
    paper = resolve_schedules(LDPAggregativeParams(preset="chen2025"), 5)
    # vs_{i,x} = 0.505 - 0.001 i, i = 1..5 (block order y, z, x)
    np.testing.assert_allclose(paper.vs[:, 2], [0.504, 0.503, 0.502, 0.501, 0.500])
    np.testing.assert_allclose(paper.vs[:, 0], [0.004, 0.003, 0.002, 0.001, 0.0], atol=1e-15)
    failures = theorem1_failures("nonconvex", paper.v, paper.vs, True)
    assert "vs_x > 1/2" in failures
    assert any(f.startswith("Omega = R^n") for f in failures)


def test_per_agent_lists_must_have_one_value_per_agent():
    with pytest.raises(ConfigError, match="algorithm.sigma_x has 2 values for 5 agents"):
        resolve_schedules(LDPAggregativeParams(sigma_x=[0.1, 0.2]), 5)
    with pytest.raises(ConfigError, match="sigma_y"):
        resolve_schedules(LDPAggregativeParams(sigma_y=-1.0), 5)


# -- Assumption 3 ------------------------------------------------------------------------------

def test_the_papers_ring_meets_assumption3():
    A = mixing_matrix(nx.cycle_graph(5), 0.3, "standard")
    assert np.diag(A) == pytest.approx([0.4] * 5)
    assert check_mixing(A) == pytest.approx(0.5854, abs=1e-4)  # the ring's mixing norm
    check_mixing(mixing_matrix(nx.erdos_renyi_graph(12, 0.4, seed=1), 0.0, "standard"))


def test_assumption3_violations_are_refused_with_the_value():
    with pytest.raises(ConfigError, match=r"entry \(0, 0\) = -0.2"):
        check_mixing(mixing_matrix(nx.cycle_graph(5), 0.6, "standard"))
    with pytest.raises(ConfigError, match=r"\|\|I \+ W - 11\^T/m\|\| = 1 >= 1"):
        check_mixing(mixing_matrix(nx.cycle_graph(4), 0.5, "standard"))
    with pytest.raises(ConfigError, match="sums to 1"):
        check_mixing(np.array([[0.5, 0.5], [0.2, 0.8]]))


# -- the quadratic instance ----------------------------------------------------------------------

def test_quadratic_optimum_is_stationary_for_F():
    m = 4
    agents = [AGGREGATIVE_PROBLEMS["aggregative-quadratic"]({"block": 3, "aggregate": 2},
                                                          i, m, 7) for i in range(m)]
    shares = [a.reference_share() for a in agents]
    agents[0].use_reference(shares)
    x = agents[0].x_star.reshape(m, 3)

    def F(flat):
        blocks = flat.reshape(m, 3)
        g = sum(a.A @ xb for a, xb in zip(agents, blocks)) / m
        return sum(a.expected_cost(xb, g) for a, xb in zip(agents, blocks))

    h = 1e-6
    grad = [(F(x.ravel() + h * e) - F(x.ravel() - h * e)) / (2 * h) for e in np.eye(3 * m)]
    assert np.max(np.abs(grad)) < 1e-6
    assert F(x.ravel()) == pytest.approx(agents[0].optimum_value)
    assert agents[0].reference.residual < 1e-12


def test_quadratic_history_is_a_running_mean_and_fresh_resets_it():
    a = build_quadratic({}, 1, 3, 0)
    a.observe(1)
    a.observe(4)
    rng = sampling_rng(0, 1)  # each draw: xi (count x r), then phi (count x n_i)
    xi, phi = [], []
    for count in (1, 4):
        xi.append(0.1 * rng.standard_normal((count, 2)))
        phi.append(0.1 * rng.standard_normal((count, 2)))
    x, y = np.array([0.3, -0.2]), np.array([0.5, 0.1])
    assert a.aggregate(x) == pytest.approx(a.A @ x + np.vstack(xi).mean(axis=0), abs=1e-15)
    assert a.grad_x(x, y) == pytest.approx(x - a.p - np.vstack(phi).mean(axis=0), abs=1e-15)
    assert a.grad_y(x, y) == pytest.approx(y - a.b)
    assert a.count == 5
    a.observe(2, fresh=True)
    assert a.count == 2
    assert a.aggregate_vjp(x, np.array([1.0, 2.0])) == pytest.approx(a.A.T @ [1.0, 2.0])


def test_quadratic_options_are_checked():
    with pytest.raises(ConfigError, match="unknown .*colour"):
        build_quadratic({"colour": 1}, 0, 2, 0)
    with pytest.raises(ConfigError, match="block = 0"):
        build_quadratic({"block": 0}, 0, 2, 0)
    assert QuadraticOptions.of({"kappa": 2}).kappa == 2.0


# -- configuration --------------------------------------------------------------------------------

def test_problem_options_pass_through_set_overrides():
    cfg = load_config("ldp-aggregative-quadratic", ["problem.options.kappa=2.5",
                                                    "problem.options.lambda_pen=0.5"])
    assert cfg.problem.options["kappa"] == 2.5 and cfg.problem.options["lambda_pen"] == 0.5
    assert cfg.problem.options["block"] == 2  # the file's other options stay


def test_aggregative_problems_and_methods_go_together():
    with pytest.raises(ConfigError, match="cannot solve the aggregative problem"):
        load_config("ldp-aggregative-quadratic", ["algorithm.name=dgd"])
    with pytest.raises(ConfigError, match="needs an aggregative problem"):
        load_config(None, ["algorithm.name=ldp-aggregative"])
    with pytest.raises(ConfigError, match="takes no options"):
        load_config(None, ["problem.options.kappa=1.0"])
    with pytest.raises(ConfigError, match="l2 = 1.0 does not apply"):
        load_config("ldp-aggregative-quadratic", ["problem.l2=1.0"])


# -- PDOP and [51] in Algorithm 1's framework ---------------------------------------------------

def test_pdop_nominal_budget_matches_the_method_page():
    # docs/methods/chen2025.md, "Nominal accounting": about 38 + 1732 + 857 as T -> inf (the
    # MNIST schedules, C = 1)
    blocks = [GeometricBlock(1.0, 0.1, rate, sigma, 0.99)
              for rate, sigma in ((0.94, 0.07), (0.98, 0.008), (0.97, 0.008))]
    assert [round(b.limit()) for b in blocks] == [38, 1732, 857]
    assert blocks[0].sensitivity(0) == 0.0
    terms = [blocks[1].sensitivity(t) / blocks[1].scale(t) for t in range(0, 301)]
    assert math.fsum(terms) == pytest.approx(blocks[1].partial_sum(300), rel=1e-13)


def test_tvs_budget_is_its_releases_and_below_its_bound():
    block = SampledBlock(1.0, 0.05, 0.11, 0.01, 0.01, 1.4)
    assert fresh_batch(0, 1.4) == 1 and fresh_batch(9, 1.4) == math.ceil(10 ** 1.4)
    explicit = math.fsum(math.sqrt(2) * 0.05 * (t + 1) ** -0.11 / math.ceil((t + 1) ** 1.4)
                         / (0.01 * (t + 1) ** 0.01) for t in range(1, 1001))
    assert block.partial_sum(1000) == pytest.approx(explicit, rel=1e-12)
    assert block.partial_sum(1000) < block.limit_bound() < math.inf


def test_the_papers_schedule_budget_matches_the_method_page():
    # the same section: agent 1 (p = 1.016 in all three blocks), C = 1, sigma = 0.01:
    # 3 sqrt(2)/0.01 * 6.12 = 2.6e3 at T = 1000 and 3 sqrt(2)/0.01 * 62.1 = 2.6e4 as T -> inf
    s = resolve_schedules(LDPAggregativeParams(preset="chen2025"), 5)
    agent1 = s.block_budgets(0).values()
    assert sum(b.partial_sum(1000) for b in agent1) == pytest.approx(3 * 141.42 * 6.12, rel=1e-3)
    assert sum(b.limit() for b in agent1) == pytest.approx(3 * 141.42 * 62.1, rel=1e-3)


def test_nominal_accounting_labels_its_epsilons_and_user_constants_do_not():
    assert accounting_fields([1.0, 1.0, 1.0]) == {"accounting": NOMINAL,
                                                  "epsilon_label": NOMINAL_EPSILON}
    assert NOMINAL_EPSILON == "nominal (C = 1): not a privacy guarantee"
    assert "epsilon_label" not in accounting_fields([1.0, 2.5, 1.0])

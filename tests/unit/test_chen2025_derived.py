"""The derived accounting of ldp-aggregative (docs/methods/chen2025.md, "Derived
accounting"): the config key, the refusals, the problems' record bounds checked against
the functions themselves, the enforced clips, and the sensitivities booked."""
import math

import numpy as np
import pytest

from mpi_privopt.config import load_config
from mpi_privopt.errors import ConfigError
from mpi_privopt.methods.chen2025.derived import (DerivedBlock, DerivedSensitivities,
                                                  clip_l2, derived_constants)
from mpi_privopt.methods.chen2025.ldp_aggregative import LDPAggregativeParams, resolve_schedules
from mpi_privopt.methods.chen2025.sensitivity import (ProofConstants, recursion_bounds,
                                                      recursion_for_steps)
from mpi_privopt.privacy.conversions import zcdp_to_eps_standard, zcdp_to_eps_tight
from mpi_privopt.privacy.costs import zcdp_rho
from mpi_privopt.privacy.events import LaplaceEvent
from mpi_privopt.methods.chen2025.problems.personalised import softmax_record_bounds
from mpi_privopt.methods.chen2025.problems.quadratic import QuadraticAggregative, QuadraticOptions
from mpi_privopt.problems.models.classifiers import SoftmaxRegression, cross_entropies

QUADRATIC = "ldp-aggregative-quadratic"


def test_the_default_accounting_is_derived_for_the_packaged_experiments():
    for experiment in (QUADRATIC, "ldp-aggregative-digits"):
        cfg = load_config(experiment)
        assert cfg.privacy.accounting == "derived"
        assert math.isfinite(cfg.algorithm.params.box)
    assert load_config(None).privacy.accounting == "derived"
    assert load_config(QUADRATIC, ["privacy.accounting=nominal"]).privacy.accounting == "nominal"


def test_a_bad_accounting_is_one_message():
    with pytest.raises(ConfigError) as info:
        load_config(QUADRATIC, ["privacy.accounting=proven"])
    assert "privacy.accounting = 'proven'" in str(info.value)
    assert "derived" in info.value.fix and "nominal" in info.value.fix


@pytest.mark.parametrize("method", ["aggregative-gt", "aggregative-pat"])
def test_the_tracking_baselines_refuse_derived_and_run_nominal(method):
    with pytest.raises(ConfigError, match="no sensitivity bound is proven"):
        load_config(QUADRATIC, [f"algorithm.name={method}"])
    load_config(QUADRATIC, [f"algorithm.name={method}", "privacy.accounting=nominal"])


@pytest.mark.parametrize("method", ["pdop-aggregative", "tvs-aggregative"])
def test_the_framework_baselines_take_derived_with_its_checks(method):
    assert load_config(QUADRATIC, [f"algorithm.name={method}"]).privacy.accounting == "derived"
    with pytest.raises(ConfigError, match="finite box"):
        load_config(QUADRATIC, [f"algorithm.name={method}", "algorithm.box=inf"])


def test_the_general_recursion_is_algorithm_1s_for_its_steps():
    constants = ProofConstants(0.7, 1.0, 1.5, 0.2, 1.0, 1.0, 0.4, 2, 2)
    lam0, v = {"x": 0.5, "y": 1.0, "z": 1.0}, {"x": 0.64, "y": 0.04, "z": 0.06}
    t1 = np.arange(1.0, 51.0)
    steps = {b: lam0[b] * t1 ** (-v[b]) for b in "xyz"}
    general = recursion_for_steps(constants, steps, 50, self_weight=np.full(50, 0.4),
                                  count=t1)
    for b, values in recursion_bounds(constants, lam0, v, 50).items():
        assert np.array_equal(general[b], values)
    # a smaller own weight and larger batches shrink every bound
    smaller = recursion_for_steps(constants, steps, 50, self_weight=np.full(50, 0.2),
                                  count=2 * t1)
    assert all(np.all(smaller[b][1:] < general[b][1:]) for b in "xyz")


@pytest.mark.parametrize("override, words", [
    ("algorithm.box=inf", "finite box"),
    ("algorithm.clip_z=inf", "clip_z"),
    ("algorithm.lam_z0=1.5", "lam_z^t <= 1"),
    ("algorithm.sensitivity_y=2.0", "sensitivity_y"),
])
def test_what_the_derived_accounting_needs_is_checked_before_mpi(override, words):
    with pytest.raises(ConfigError, match=words.replace("^", r"\^")) as info:
        load_config(QUADRATIC, [override])
    assert '"nominal"' in info.value.fix
    load_config(QUADRATIC, [override, "privacy.accounting=nominal"])  # the paper's algorithm


def test_the_quadratic_bounds_are_exact_on_its_record_domain():
    opts = QuadraticOptions(noise_g=0.3, noise_f=0.2, kappa=2.0)
    problem = QuadraticAggregative(opts, 1, 5, 0)
    bounds = problem.record_bounds(10.0)
    c_g, c_f = 5 * 0.3 * math.sqrt(2), 5 * 0.2 * math.sqrt(2)
    assert bounds.d_l == pytest.approx(math.sqrt(2) * c_g) and bounds.L_h == pytest.approx(c_f)
    assert bounds.L_l == pytest.approx(np.linalg.norm(problem.A, 2))
    assert bounds.Lbar_h == 2.0 and bounds.Lbar_l == 0.0 and bounds.y_range is None


def test_the_quadratic_clips_every_record_into_its_domain():
    # a clip of half a standard deviation binds often: every record (read off the running
    # sums) lies in the domain, the radius is reached, and two records' difference stays
    # within the bounds the proof uses (2 d_l in l1 for xi, 2 L_h in l2 for phi)
    problem = QuadraticAggregative(QuadraticOptions(noise_g=3.0, noise_f=2.0, clip=0.5),
                                   1, 5, 0)
    bounds = problem.record_bounds(1.0)
    xi, phi = [], []
    for _ in range(200):
        before_xi, before_phi = problem.sum_xi.copy(), problem.sum_phi.copy()
        problem.observe(1)
        xi.append(problem.sum_xi - before_xi)
        phi.append(problem.sum_phi - before_phi)
    assert max(np.linalg.norm(v) for v in xi) == pytest.approx(0.5 * 3.0 * math.sqrt(2))
    assert max(np.abs(a - b).sum() for a in xi for b in xi) <= 2 * bounds.d_l
    assert max(np.linalg.norm(a - b) for a in phi for b in phi) <= 2 * bounds.L_h + 1e-12


def test_the_default_clip_leaves_the_samples_bitwise_as_drawn():
    clipped = QuadraticAggregative(QuadraticOptions(), 0, 5, 0)
    clipped.rng, raw = np.random.default_rng(7), np.random.default_rng(7)
    clipped.observe(1000)
    assert np.array_equal(clipped.sum_xi, (0.1 * raw.standard_normal((1000, 2))).sum(axis=0))


def test_the_softmax_bounds_hold_at_random_points_of_the_box():
    d, K, box, lam = 6, 4, 0.7, 0.5
    model = SoftmaxRegression((1, 1, d), K)
    bounds = softmax_record_bounds(d, K, box, lam)
    L_max = bounds.y_range[1]
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.uniform(-box, box, model.n_params)
        corner = np.sign(rng.standard_normal(model.n_params)) * box  # the box's worst
        for point in (x, corner):
            images = rng.uniform(0, 1, (8, 1, 1, d))
            images[0] = 1.0
            labels = rng.integers(0, K, 8)
            losses = model.losses(point, images, labels)
            assert np.all(losses >= 0) and np.all(losses <= L_max)
            for p in range(8):
                g = model.weighted_gradient(point, images[p:p + 1], labels[p:p + 1],
                                            np.ones(1))
                assert np.linalg.norm(g) <= bounds.L_l
                y = rng.uniform(0, L_max)
                c = 1 + 2 * lam * (losses[p] - y)
                assert np.linalg.norm(c * g) <= bounds.L_h
                assert abs(2 * lam * (losses[p] - y)) <= 2 * bounds.L_h
    # the Lipschitz constant of nabla L along a random segment
    x1, x2 = rng.uniform(-box, box, (2, model.n_params))
    images, labels = rng.uniform(0, 1, (1, 1, 1, d)), np.array([2])
    g1, g2 = (model.weighted_gradient(x, images, labels, np.ones(1)) for x in (x1, x2))
    assert np.linalg.norm(g1 - g2) <= bounds.Lbar_l * np.linalg.norm(x1 - x2)


def test_clip_l2_is_the_identity_inside_and_a_projection_outside():
    v = np.array([3.0, 4.0])
    assert clip_l2(v, 10.0) is v and clip_l2(v, math.inf) is v
    np.testing.assert_allclose(clip_l2(v, 1.0), [0.6, 0.8])


def test_the_derived_blocks_book_the_recursion_and_extend_it():
    constants = ProofConstants(0.7, 1.0, 1.5, 0.0, 1.0, 1.0, 0.4, 2, 2)
    schedules = resolve_schedules(LDPAggregativeParams(preset="corollary1-i", delta=0.02,
                                                       lam_x0=0.5), 5)
    source = DerivedSensitivities(constants, schedules.lam0, schedules.v, horizon=4)
    reference = recursion_bounds(constants, schedules.lam0, schedules.v, 40)
    block = DerivedBlock(source, "x", 0.01, 0.56)
    assert block.sensitivity(0) == 0.0
    assert [block.sensitivity(t) for t in range(41)][1:] == reference["x"][1:].tolist()
    expected = math.fsum(reference["x"][t] * math.sqrt(2) * (t + 1) ** 0.56 / 0.01
                         for t in range(1, 41))
    assert block.partial_sum(40) == pytest.approx(expected, rel=1e-12)


def test_an_overflowing_bound_is_infinite_not_a_number():
    huge = ProofConstants(1e3, 1e4, 10.0, 30.0, 60.0, 1.0, 0.4, 650, 1)
    source = DerivedSensitivities(huge, {"x": 0.2, "y": 1.0, "z": 1.0},
                                  {"x": 0.55, "y": 0.02, "z": 0.03}, horizon=300)
    values = [source.at("x", t) for t in range(301)]
    assert values[-1] == math.inf and not any(np.isnan(values))
    assert math.isfinite(values[1])


def test_huge_pure_losses_convert_without_overflow():
    # a derived bound can book eps ~ 1e100 per message: zCDP and its conversions stay numbers
    rho = zcdp_rho(LaplaceEvent(sensitivity=1e100, scale=1.0))
    assert rho == 0.5e200
    assert zcdp_rho(LaplaceEvent(sensitivity=1e200, scale=1.0)) == math.inf
    for r in (1e17, 1e31, 1e60, rho):
        assert zcdp_to_eps_tight(r, 1e-5) <= zcdp_to_eps_standard(r, 1e-5)
        assert zcdp_to_eps_tight(r, 1e-5) >= r

"""Tests of the privacy math: conversions, events/accountants and calibration.

Reference values come from docs/methods/privacy-conversions.md (published by OpenDP,
dp-accounting/TF Privacy, or following from the stated formulas) and the worked table of
``zcdp_nfl.md`` sec. 3.4. They are checked to the digits given, never looser.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mpi_privopt.errors import ConfigError
from mpi_privopt.privacy.accountants import (
    GaussianEvent,
    GaussianExactAccountant,
    LaplaceEvent,
    NonPrivateEvent,
    PrivacyEvent,
    PublicEvent,
    PureDPAccountant,
    PureDPEvent,
    RDPAccountant,
    UnsupportedEventError,
    ZCDPAccountant,
    ZCDPEvent,
    epsilon_all,
    gdp_mu,
    pure_dp_rdp,
    pure_epsilon,
    zcdp_rho,
)
from mpi_privopt.privacy.classical_calibration import (
    analytic_gaussian_sigma,
    basic_composition_gaussian_schedule,
    basic_composition_schedule,
    classical_gaussian_sigma,
)
from mpi_privopt.privacy.calibration import (
    calibrate_gaussian_noise,
    calibrate_gdp_mu,
    calibrate_phi1,
    calibrate_zcdp_schedule,
    calibrate_zcdp_total,
    geometric_zcdp_schedule,
    noise_multipliers,
)
from mpi_privopt.privacy.conversions import (
    gaussian_delta,
    gaussian_exact_eps,
    rdp_to_eps_orders,
    zcdp_optimal_order,
    zcdp_to_eps_standard,
    zcdp_to_eps_tight,
)

REL = 1e-9


def assert_digits(x: float, ref: str) -> None:
    """x agrees with the decimal string ref to every decimal place ref shows."""
    decimals = len(ref.split(".")[1]) if "." in ref else 0
    assert abs(x - float(ref)) <= 0.5 * 10.0**-decimals, f"{x!r} does not round to {ref}"


def assert_sig(x: float, ref: str) -> None:
    """x rounded to as many significant digits as ref shows equals ref."""
    mantissa = ref.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0")
    sig = max(len(mantissa), 1)
    assert float(f"{x:.{sig}g}") == float(ref), f"{x!r} is not {ref} to {sig} significant digits"


# =============================================================================================
# Reference values (privacy_reference.md)
# =============================================================================================
class TestReferenceValues:
    def test_opendp_cks_eps_rho_1_32(self):
        # Gaussian with scale 4 and D = 1 is rho = 1/32
        rho = zcdp_rho(GaussianEvent(1.0, 4.0))
        assert rho == 1.0 / 32.0
        assert zcdp_to_eps_tight(rho, 1e-3) == pytest.approx(0.6880024554878086, rel=REL)

    def test_gaussian_sigma1_100x_all_conversions(self):
        delta = 1e-5
        rho = 100 * zcdp_rho(GaussianEvent(1.0, 1.0))
        assert_digits(gaussian_exact_eps(10.0, delta), "91.8172896247")
        assert_digits(zcdp_to_eps_tight(rho, delta), "96.0352706752")
        assert zcdp_to_eps_standard(rho, delta) == pytest.approx(97.9852591219, rel=REL)
        assert_digits(zcdp_to_eps_standard(rho, delta), "97.9852591219")
        rdp_acc = RDPAccountant().compose(GaussianEvent(1.0, 1.0), 100)
        assert rdp_acc.get_epsilon(delta) == pytest.approx(96.11630842505602, rel=REL)

    def test_gaussian_sigma1_100x_through_accountants(self):
        delta = 1e-5
        ev = GaussianEvent(1.0, 1.0)
        assert_digits(GaussianExactAccountant().compose(ev, 100).get_epsilon(delta), "91.8172896247")
        assert_digits(ZCDPAccountant("tight").compose(ev, 100).get_epsilon(delta), "96.0352706752")
        assert_digits(ZCDPAccountant("standard").compose(ev, 100).get_epsilon(delta), "97.9852591219")

    def test_gaussian_sigma10_100x(self):
        delta = 1e-5
        assert_digits(gaussian_exact_eps(1.0, delta), "4.3771780957")
        assert_digits(zcdp_to_eps_tight(100 * zcdp_rho(GaussianEvent(1.0, 10.0)), delta), "4.7283869849")

    @pytest.mark.parametrize(("rho", "delta", "ref"), [(0.1, 1e-5, "1.9142388320"), (1.0, 1e-6, "7.7662166253")])
    def test_cks_formula_values(self, rho, delta, ref):
        assert_digits(zcdp_to_eps_tight(rho, delta), ref)

    def test_laplace_pure_100x(self):
        assert 100 * pure_epsilon(LaplaceEvent(1.0, 10.0)) == pytest.approx(10.0, rel=1e-15)
        acc = PureDPAccountant().compose(LaplaceEvent(1.0, 10.0), 100)
        assert acc.get_epsilon(1e-5) == pytest.approx(10.0, rel=1e-14)
        assert epsilon_all([(LaplaceEvent(1.0, 10.0), 100)], 1e-5)["pure"] == pytest.approx(10.0, rel=1e-14)

    def test_rdp_constant_curve_tf_privacy(self):
        orders = np.arange(2, 33)
        eps, order = rdp_to_eps_orders(orders, np.full(orders.size, 1.1), 1e-5, return_order=True)
        assert_digits(eps, "1.32783806176")
        assert order == 32

    def test_rdp_gaussian_fine_grid_tf_privacy(self):
        orders = np.array([0.001 * i for i in range(1000, 100000)])  # 1.000 .. 99.999
        rdp = orders * zcdp_rho(GaussianEvent(1.0, 4.530877117))  # a Gaussian's RDP is a rho
        eps = rdp_to_eps_orders(orders, rdp, 1e-6)
        assert round(eps - 1.0, 7) == 0.0  # assertAlmostEqual(eps, 1), 7 places


# =============================================================================================
# zcdp_nfl.md sec. 3.4 worked numbers
# =============================================================================================
class TestZcdpNflTable:
    def test_composition_639_92(self):
        # the paper's closed form, literally
        closed = (1 - 0.99**200) / (0.99**199 * (1 - 0.99))
        summed = math.fsum(geometric_zcdp_schedule(1.0, 0.99, 200))
        assert round(summed, 2) == 639.92
        assert closed == pytest.approx(summed, rel=1e-12)

    def test_constant_schedule_total(self):
        assert math.fsum(geometric_zcdp_schedule(0.25, 1.0, 200)) == 50.0
        assert math.fsum(geometric_zcdp_schedule(0.25, 1.0 - 1e-13, 200)) == pytest.approx(50.0, rel=1e-9)

    @pytest.mark.parametrize(
        ("eps", "Phi", "tau", "phi1", "m1", "m200"),
        [
            (1, "0.0208", 0.99, "3.25e-5", "124", "45.6"),
            (1, "0.0208", 0.999, "9.41e-5", "72.9", "66.0"),
            (1, "0.0208", 1.0, "1.04e-4", "69.3", "69.3"),
            (5, "0.450", 0.99, "7.03e-4", "26.7", "9.8"),
            (10, "1.55", 0.99, "2.42e-3", "14.4", "5.3"),
            (50, "19.8", 0.99, "3.09e-2", "4.0", "1.5"),
        ],
    )
    def test_worked_table(self, eps, Phi, tau, phi1, m1, m200):
        T, delta = 200, 1e-5
        total = calibrate_zcdp_total(eps, delta)
        p1 = calibrate_phi1(eps, delta, T, tau)
        m = noise_multipliers(geometric_zcdp_schedule(p1, tau, T))
        assert_sig(total, Phi)
        assert_sig(p1, phi1)
        assert_sig(m[0], m1)
        assert_sig(m[-1], m200)
        # m(n) = sqrt(tau^(n-1) / (2 phi1)) (docs/methods/gauthier2024.md)
        assert m[-1] == pytest.approx(math.sqrt(tau**199 / (2 * p1)), rel=1e-12)
        # the Corollary gives back the nominal budget
        assert zcdp_to_eps_standard(math.fsum(geometric_zcdp_schedule(p1, tau, T)), delta) == pytest.approx(eps, rel=REL)

    def test_calibrate_phi1_closed_form(self):
        eps, delta, T, tau = 3.0, 1e-5, 200, 0.99
        total = (math.sqrt(math.log(1 / delta) + eps) - math.sqrt(math.log(1 / delta))) ** 2
        assert calibrate_zcdp_total(eps, delta) == pytest.approx(total, rel=1e-12)
        expected = total * (tau ** (T - 1) - tau**T) / (1 - tau**T)
        assert calibrate_phi1(eps, delta, T, tau) == pytest.approx(expected, rel=1e-12)

    def test_eps_delta_vs_zcdp_noise_gap(self):
        # sec. 2.4: eps = 1, delta = 1e-5, T = 200, constant: ~1167 (classical) vs ~69 (zCDP)
        classical = basic_composition_gaussian_schedule(1.0, 1e-5, 200).multipliers
        zcdp = calibrate_gaussian_noise(1.0, 1e-5, 200)
        assert round(float(classical[0])) == 1167
        assert np.allclose(classical, classical[0], rtol=1e-13)
        assert round(float(zcdp[0])) == 69


# =============================================================================================
# Conversions
# =============================================================================================
ORDERING_SIGMAS = [0.3, 0.5, 1.0, 2.0, 5.0, 20.0, 100.0]
ORDERING_ROUNDS = [1, 10, 200]
ORDERING_DELTAS = [1e-2, 1e-5, 1e-9]


class TestOrdering:
    @pytest.mark.parametrize("sigma", ORDERING_SIGMAS)
    @pytest.mark.parametrize("rounds", ORDERING_ROUNDS)
    @pytest.mark.parametrize("delta", ORDERING_DELTAS)
    def test_exact_le_tight_le_standard_homogeneous(self, sigma, rounds, delta):
        res = epsilon_all([(GaussianEvent(1.0, sigma), rounds)], delta)
        assert 0.0 <= res["exact"] <= res["tight"] < res["standard"]
        assert res["tight"] <= res["rdp"]  # a grid can only lose against the continuous order
        assert res["rho"] == pytest.approx(rounds / (2 * sigma**2), rel=1e-12)

    @pytest.mark.parametrize("seed", range(8))
    @pytest.mark.parametrize("delta", ORDERING_DELTAS)
    def test_exact_le_tight_le_standard_heterogeneous(self, seed, delta):
        rng = np.random.default_rng(seed)
        rounds = int(rng.integers(1, 300))
        sigmas = np.exp(rng.uniform(np.log(0.5), np.log(200.0), rounds))
        sens = rng.uniform(0.0, 2.0, rounds)
        events = [GaussianEvent(float(d), float(s)) for d, s in zip(sens, sigmas)]
        res = epsilon_all(events, delta)
        assert 0.0 <= res["exact"] <= res["tight"] <= res["standard"]
        assert res["exact"] == pytest.approx(gaussian_exact_eps(math.sqrt(np.sum((sens / sigmas) ** 2)), delta), rel=1e-12)
        assert res["rho"] == pytest.approx(float(np.sum(sens**2 / (2 * sigmas**2))), rel=1e-12)

    def test_geometric_schedule_ordering(self):
        m = calibrate_gaussian_noise(1.0, 1e-5, 200, "geometric", tau=0.99)
        res = epsilon_all([GaussianEvent(1.0, float(s)) for s in m], 1e-5)
        assert res["exact"] < res["tight"] < res["standard"] == pytest.approx(1.0, rel=REL)


class TestMonotonicity:
    @pytest.mark.parametrize("delta", [1e-3, 1e-6])
    def test_eps_decreases_with_sigma(self, delta):
        sigmas = np.geomspace(0.2, 500.0, 40)
        rows = [epsilon_all([(GaussianEvent(1.0, s), 50)], delta) for s in sigmas]
        for key in ("exact", "tight", "standard", "rdp"):
            vals = np.array([r[key] for r in rows])
            assert np.all(np.diff(vals) < 0.0), key

    def test_eps_decreases_with_delta(self):
        deltas = np.geomspace(1e-12, 0.5, 30)
        for f in (
            lambda d: zcdp_to_eps_tight(0.3, d),
            lambda d: zcdp_to_eps_standard(0.3, d),
            lambda d: gaussian_exact_eps(math.sqrt(0.6), d),
        ):
            vals = np.array([f(d) for d in deltas])
            assert np.all(np.diff(vals) <= 0.0)

    def test_tight_increases_with_rho_down_to_tiny(self):
        rhos = np.geomspace(1e-16, 1e4, 81)
        vals = np.array([zcdp_to_eps_tight(r, 1e-6) for r in rhos])
        assert np.all(vals >= 0.0)
        positive = vals > 0
        assert np.all(np.diff(vals[positive]) > 0.0)
        assert np.all(vals <= [zcdp_to_eps_standard(r, 1e-6) for r in rhos])


class TestTightConversion:
    def test_rho_zero_and_inf(self):
        assert zcdp_to_eps_tight(0.0, 1e-5) == 0.0
        assert zcdp_to_eps_standard(0.0, 1e-5) == 0.0
        assert zcdp_to_eps_tight(math.inf, 1e-5) == math.inf
        assert zcdp_to_eps_standard(math.inf, 1e-5) == math.inf

    def test_kl_floor(self):
        # sqrt(1 - exp(-rho)) <= delta: (0, delta)-DP by Bretagnolle-Huber
        assert zcdp_to_eps_tight(1e-12, 1e-5) == 0.0
        assert zcdp_to_eps_tight(1e-9, 1e-5) > 0.0

    def test_optimal_order_is_stationary(self):
        rho, delta = 1e-8, 1e-6
        a = zcdp_optimal_order(rho, delta)
        assert a > 1e4  # tiny rho: huge optimal order, found without a search window
        f = lambda x: rho * x + math.log1p(-1 / x) - (math.log(delta) + math.log(x)) / (x - 1)  # noqa: E731
        assert f(a) <= min(f(a * 0.999), f(a * 1.001))

    def test_grid_capped_at_63_loses_at_small_rho(self):
        # privacy_reference.md: orders capped at 63 give eps ~2.7x too big at rho=1e-4, delta=1e-6
        orders = np.arange(2.0, 64.0)
        ratio = rdp_to_eps_orders(orders, 1e-4 * orders, 1e-6) / zcdp_to_eps_tight(1e-4, 1e-6)
        assert 2.7 < ratio < 2.75


class TestGaussianExact:
    @pytest.mark.parametrize("mu", [1e-3, 0.1, 1.0, 10.0, 60.0])
    @pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-12])
    def test_delta_inverts_eps(self, mu, delta):
        eps = gaussian_exact_eps(mu, delta)
        if eps == 0.0:
            assert gaussian_delta(mu, 0.0) <= delta
        else:
            assert gaussian_delta(mu, eps) == pytest.approx(delta, rel=REL)

    def test_large_eps_stable(self):
        # both Phi terms underflow in linear space here; the log form must still invert
        eps = gaussian_exact_eps(100.0, 1e-10)
        assert math.isfinite(eps) and eps > 4000
        assert gaussian_delta(100.0, eps) == pytest.approx(1e-10, rel=REL)

    def test_edges(self):
        assert gaussian_exact_eps(0.0, 1e-5) == 0.0
        assert gaussian_exact_eps(math.inf, 1e-5) == math.inf
        assert gaussian_exact_eps(1e-6, 1e-5) == 0.0  # delta(0) = erf(mu/(2 sqrt 2)) < delta
        assert gaussian_delta(0.0, 1.0) == 0.0
        assert gaussian_delta(math.inf, 1.0) == 1.0
        assert gaussian_delta(1.0, 0.0) == pytest.approx(2 * 0.6914624612740131 - 1, rel=1e-12)

    @pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-6, 1e-10, 0.3])
    def test_vectorised_epsilon_is_dp_accountings(self, delta):
        # the one departure from dp-accounting, kept because it is vectorised: it must give
        # get_epsilon_gaussian's numbers (asked for full precision) to 1e-12, entry by entry
        from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

        # (below mu ~ 1e-2 the epsilon is tiny and ill-conditioned in either search)
        mus = np.concatenate([np.logspace(-2, 2.5, 60), [0.0, math.inf]])
        got = gaussian_exact_eps(mus, delta)
        assert isinstance(got, np.ndarray) and got.shape == mus.shape
        for mu, eps in zip(mus, got):
            ref = float(get_epsilon_gaussian(1.0 / mu if mu > 0 else math.inf, delta, tol=1e-300))
            assert eps == pytest.approx(ref, rel=1e-12, abs=0.0), (mu, delta)
            assert gaussian_exact_eps(float(mu), delta) == eps   # a scalar is one entry
        matrix = gaussian_exact_eps(mus[:60].reshape(6, 10), delta)
        np.testing.assert_array_equal(matrix.ravel(), got[:60])

    def test_gaussian_delta_matches_linear_formula(self):
        from scipy.stats import norm

        for mu, eps in [(0.5, 0.3), (1.0, 1.0), (3.0, 2.0), (10.0, 20.0)]:
            lin = norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)
            assert gaussian_delta(mu, eps) == pytest.approx(lin, rel=1e-10)


class TestBadArguments:
    @pytest.mark.parametrize("delta", [0.0, 1.0, -1e-5, 2.0, float("nan"), "x"])
    def test_bad_delta(self, delta):
        with pytest.raises(ConfigError, match="delta"):
            zcdp_to_eps_tight(0.1, delta)
        with pytest.raises(ConfigError, match="delta"):
            gaussian_exact_eps(1.0, delta)
        with pytest.raises(ConfigError, match="delta"):
            ZCDPAccountant().get_epsilon(delta)

    def test_message_names_value_and_fix(self):
        with pytest.raises(ConfigError) as err:
            zcdp_to_eps_standard(-0.5, 1e-5)
        assert "-0.5" in str(err.value) and "how to fix" in str(err.value)

    def test_bad_rdp_inputs(self):
        with pytest.raises(ConfigError, match="order"):
            rdp_to_eps_orders([0.5, 2.0], [0.1, 0.2], 1e-5)
        with pytest.raises(ConfigError, match="RDP value"):
            rdp_to_eps_orders([2.0, 3.0], [0.1, -0.2], 1e-5)
        with pytest.raises(ConfigError, match="one RDP value per order"):
            rdp_to_eps_orders([2.0, 3.0], [0.1], 1e-5)
        with pytest.raises(ConfigError, match="empty"):
            rdp_to_eps_orders([], [], 1e-5)

    def test_order_one_alone_gives_no_bound(self):
        assert rdp_to_eps_orders([1.0], [0.5], 1e-5) == math.inf
        assert rdp_to_eps_orders([1.0], [1e-12], 1e-5) == 0.0  # KL floor

    def test_bad_gaussian_mu_inputs(self):
        with pytest.raises(ConfigError, match="mu"):
            gaussian_exact_eps([1.0, -1.0], 1e-5)
        with pytest.raises(ConfigError, match="mu"):
            gaussian_exact_eps(float("nan"), 1e-5)
        with pytest.raises(ConfigError, match="scale"):
            LaplaceEvent(1.0, 0.0)


# =============================================================================================
# Events
# =============================================================================================
class TestEvents:
    @pytest.mark.parametrize(
        "make",
        [
            lambda: GaussianEvent(1.0, 0.0),
            lambda: GaussianEvent(-1.0, 1.0),
            lambda: GaussianEvent(float("nan"), 1.0),
            lambda: GaussianEvent(math.inf, 1.0),
            lambda: GaussianEvent(1.0, -2.0),
            lambda: LaplaceEvent(1.0, 0.0),
            lambda: LaplaceEvent(-1.0, 1.0),
            lambda: ZCDPEvent(-0.1),
            lambda: ZCDPEvent(math.inf),
            lambda: PureDPEvent(-1.0),
            lambda: PureDPEvent(math.inf),
            lambda: GaussianEvent("a", 1.0),
        ],
    )
    def test_validated_on_construction(self, make):
        with pytest.raises(ConfigError):
            make()

    def test_sigma_zero_message_points_to_nonprivate(self):
        with pytest.raises(ConfigError, match="NonPrivateEvent"):
            GaussianEvent(1.0, 0.0)

    def test_frozen_and_hashable(self):
        ev = GaussianEvent(1, 2)
        with pytest.raises(dataclasses.FrozenInstanceError):
            ev.sigma = 3.0  # type: ignore[misc]
        assert ev == GaussianEvent(1.0, 2.0) and hash(ev) == hash(GaussianEvent(1.0, 2.0))
        assert isinstance(ev.sigma, float)

    def test_event_parameters(self):
        g = GaussianEvent(2.0, 4.0)
        assert zcdp_rho(g) == pytest.approx(0.125) and gdp_mu(g) == pytest.approx(0.5)
        assert zcdp_rho(GaussianEvent(1.0, math.inf)) == 0.0
        lap = LaplaceEvent(2.0, 4.0)
        assert pure_epsilon(lap) == 0.5 and zcdp_rho(lap) == 0.125
        assert zcdp_rho(PureDPEvent(0.5)) == 0.125 and zcdp_rho(ZCDPEvent(0.25)) == 0.25
        assert pure_epsilon(g) is None and gdp_mu(lap) is None
        assert not any(isinstance(getattr(type(e), name, None), property) for e in (g, lap)
                       for name in ("rho", "mu", "epsilon"))   # events are data

    def test_laplace_rdp_bounds(self):
        # the Laplace curve is dp-accounting's; the pure-DP one (randomized response) ours
        orders = np.array([1.0, 1.001, 1.5, 2.0, 8.0, 64.0, 1e4, 1e8])
        for eps in [0.01, 0.1, 1.0, 5.0, 40.0]:
            lap = RDPAccountant(orders).compose(LaplaceEvent(1.0, 1.0 / eps)).rdp
            pure = pure_dp_rdp(eps, orders)
            assert np.all(np.isfinite(lap)) and np.all(np.isfinite(pure))
            assert np.all(lap <= pure * (1 + 1e-12) + 1e-300)  # Laplace is one eps-DP mechanism
            assert np.all(pure <= np.minimum(eps, orders * eps**2 / 2) * (1 + 1e-12))
            # Renyi divergence grows with the order (up to rounding in the 1/(a-1) form)
            assert np.all(np.diff(lap) >= -1e-12 * eps) and np.all(np.diff(pure) >= -1e-12 * eps)
            assert lap[0] == pytest.approx(eps + math.expm1(-eps), rel=1e-9)  # KL of Laplace
        assert pure_dp_rdp(0.5, [math.inf])[0] == 0.5

    def test_pure_rdp_continuous_at_one(self):
        assert pure_dp_rdp(0.5, [1.0 + 1e-7])[0] == pytest.approx(pure_dp_rdp(0.5, [1.0])[0], rel=1e-5)


# =============================================================================================
# Accountants: the shared contract
# =============================================================================================
@dataclasses.dataclass(frozen=True)
class _AlienEvent(PrivacyEvent):
    """An event no accountant knows."""


ACCOUNTANTS = {
    "zcdp_tight": (lambda: ZCDPAccountant("tight"), GaussianEvent(1.0, 3.0)),
    "zcdp_standard": (lambda: ZCDPAccountant("standard"), LaplaceEvent(1.0, 4.0)),
    "pure": (PureDPAccountant, LaplaceEvent(1.0, 4.0)),
    "rdp": (RDPAccountant, GaussianEvent(1.0, 3.0)),
    "rdp_small_grid": (lambda: RDPAccountant(orders=[1.5, 2, 4, 8, 16, 32, 64]), PureDPEvent(0.3)),
    "gaussian_exact": (GaussianExactAccountant, GaussianEvent(0.5, 2.0)),
}


@pytest.fixture(params=sorted(ACCOUNTANTS))
def acc_case(request):
    factory, event = ACCOUNTANTS[request.param]
    return factory, event


class TestAccountantContract:
    DELTA = 1e-5

    def test_fresh_is_zero(self, acc_case):
        factory, _ = acc_case
        acc = factory()
        assert acc.get_epsilon(self.DELTA) == 0.0
        assert acc.n_events == 0 and not acc.non_private

    def test_supports_its_event_and_compose_returns_self(self, acc_case):
        factory, event = acc_case
        acc = factory()
        assert acc.supports(event)
        assert acc.compose(event) is acc
        assert acc.get_epsilon(self.DELTA) > 0.0
        assert acc.n_events == 1

    def test_count_equals_repeated_compose(self, acc_case):
        factory, event = acc_case
        a, b = factory(), factory()
        a.compose(event, 7)
        for _ in range(7):
            b.compose(event)
        assert a.get_epsilon(self.DELTA) == pytest.approx(b.get_epsilon(self.DELTA), rel=1e-12)
        assert a.n_events == b.n_events == 7

    def test_count_zero_is_noop(self, acc_case):
        factory, event = acc_case
        acc = factory().compose(event, 0)
        assert acc.get_epsilon(self.DELTA) == 0.0 and acc.n_events == 0

    @pytest.mark.parametrize("count", [-1, 1.5, "2", True, None])
    def test_bad_count_rejected_without_change(self, acc_case, count):
        factory, event = acc_case
        acc = factory().compose(event)
        before = acc.get_epsilon(self.DELTA)
        with pytest.raises(ConfigError, match="count"):
            acc.compose(event, count)
        assert acc.get_epsilon(self.DELTA) == before and acc.n_events == 1

    def test_unsupported_rejected_without_change(self, acc_case):
        factory, event = acc_case
        acc = factory().compose(event)
        before = acc.get_epsilon(self.DELTA)
        assert not acc.supports(_AlienEvent())
        with pytest.raises(UnsupportedEventError, match="_AlienEvent"):
            acc.compose(_AlienEvent())
        assert acc.get_epsilon(self.DELTA) == before and acc.n_events == 1

    def test_not_an_event(self, acc_case):
        factory, _ = acc_case
        with pytest.raises(ConfigError, match="not a privacy event"):
            factory().compose(0.5)  # type: ignore[arg-type]

    def test_public_event_costs_nothing(self, acc_case):
        factory, event = acc_case
        acc = factory().compose(event, 3)
        before = acc.report(self.DELTA)
        acc.compose(PublicEvent("step size"), 1000)
        after = acc.report(self.DELTA)
        assert after.pop("events") == before.pop("events") + 1000
        assert after == before

    def test_non_private_event_is_inf(self, acc_case):
        factory, event = acc_case
        for acc in (factory(), factory().compose(event, 3)):
            acc.compose(NonPrivateEvent("raw gradient"))
            assert acc.non_private
            assert acc.get_epsilon(self.DELTA) == math.inf
            assert acc.get_epsilon(0.5) == math.inf
            acc.compose(event)  # stays inf whatever follows
            assert acc.get_epsilon(self.DELTA) == math.inf
            assert acc.report(self.DELTA)["epsilon"] == math.inf

    def test_eps_grows_with_events_and_falls_with_delta(self, acc_case):
        factory, event = acc_case
        acc = factory()
        prev = 0.0
        for _ in range(5):
            acc.compose(event, 4)
            cur = acc.get_epsilon(self.DELTA)
            assert cur >= prev
            prev = cur
        assert acc.get_epsilon(1e-3) <= acc.get_epsilon(1e-5) <= acc.get_epsilon(1e-9)

    def test_report(self, acc_case):
        factory, event = acc_case
        acc = factory().compose(event, 2)
        rep = acc.report(self.DELTA)
        assert {"accountant", "delta", "epsilon", "events", "non_private"} <= set(rep)
        assert rep["epsilon"] == acc.get_epsilon(self.DELTA)
        assert rep["delta"] == self.DELTA and rep["events"] == 2 and rep["non_private"] is False
        assert isinstance(rep["accountant"], str) and rep["accountant"] != "abstract"

    def test_bad_delta(self, acc_case):
        factory, _ = acc_case
        for bad in (-0.1, 1.0, 3.0):
            with pytest.raises(ConfigError, match="delta"):
                factory().get_epsilon(bad)


class TestAccountantSpecifics:
    def test_zcdp_adds_rho_over_event_types(self):
        acc = ZCDPAccountant()
        acc.compose(GaussianEvent(1.0, 2.0), 3).compose(LaplaceEvent(1.0, 2.0)).compose(ZCDPEvent(0.01))
        acc.compose(PureDPEvent(0.2))
        assert acc.rho == pytest.approx(3 * 0.125 + 0.125 + 0.01 + 0.02, rel=1e-14)
        rep = acc.report(1e-5)
        assert rep["epsilon"] == rep["epsilon_tight"] < rep["epsilon_standard"]

    def test_zcdp_bad_conversion(self):
        with pytest.raises(ConfigError, match="conversion"):
            ZCDPAccountant("exact")

    def test_pure_rejects_gaussian_and_accepts_delta_zero(self):
        acc = PureDPAccountant()
        with pytest.raises(UnsupportedEventError, match="GaussianEvent"):
            acc.compose(GaussianEvent(1.0, 1.0))
        acc.compose(PureDPEvent(0.3), 2).compose(LaplaceEvent(1.0, 10.0))
        assert acc.get_epsilon(0.0) == pytest.approx(0.7, rel=1e-14) == acc.epsilon

    def test_exact_rejects_zcdp_and_laplace(self):
        acc = GaussianExactAccountant()
        for ev in (ZCDPEvent(0.1), LaplaceEvent(1.0, 1.0), PureDPEvent(1.0)):
            assert not acc.supports(ev)
            with pytest.raises(UnsupportedEventError):
                acc.compose(ev)

    def test_exact_mu_adds_in_square(self):
        acc = GaussianExactAccountant().compose(GaussianEvent(3.0, 1.0)).compose(GaussianEvent(4.0, 1.0))
        assert acc.mu == pytest.approx(5.0, rel=1e-15)
        assert acc.report(1e-5)["mu"] == acc.mu

    def test_rdp_accountant_laplace_beats_zcdp_few_rounds(self):
        # one Laplace release: RDP uses its exact curve, zCDP only eps^2/2
        ev = LaplaceEvent(1.0, 1.0)
        rdp = RDPAccountant().compose(ev).get_epsilon(1e-5)
        # close to pure eps = 1: the top order 1024 costs ln(1-1/a) + (ln(1/delta) - ln a)/(a-1)
        assert rdp < 1.005
        assert rdp < ZCDPAccountant().compose(ev).get_epsilon(1e-5)

    def test_rdp_accountant_orders_validated(self):
        with pytest.raises(ConfigError, match="order"):
            RDPAccountant(orders=[0.5, 2.0])
        with pytest.raises(ConfigError, match="order > 1"):
            RDPAccountant(orders=[1.0])
        acc = RDPAccountant(orders=[2.0, 4.0])
        assert list(acc.orders) == [2.0, 4.0]
        assert acc.report(1e-5)["optimal_order"] in (2.0, 4.0)


class TestEpsilonAll:
    def test_keys_gaussian_only(self):
        res = epsilon_all([(GaussianEvent(1.0, 5.0), 10), PublicEvent()], 1e-5)
        assert {"exact", "tight", "standard", "rdp", "rho", "delta"} <= set(res)
        assert "pure" not in res
        assert res["exact"] <= res["tight"] <= res["standard"]

    def test_laplace_only_has_pure_and_no_exact(self):
        res = epsilon_all([(LaplaceEvent(1.0, 10.0), 100)], 1e-5)
        assert res["exact"] is None
        assert res["pure"] == pytest.approx(10.0)
        assert res["rho"] == pytest.approx(0.5)
        assert res["tight"] == pytest.approx(zcdp_to_eps_tight(0.5, 1e-5), rel=1e-14)

    def test_mixed(self):
        res = epsilon_all([GaussianEvent(1.0, 5.0), LaplaceEvent(1.0, 10.0)], 1e-5)
        assert res["exact"] is None and "pure" not in res
        assert res["tight"] <= res["standard"]

    def test_non_private_makes_all_inf(self):
        res = epsilon_all([(GaussianEvent(1.0, 5.0), 10), NonPrivateEvent()], 1e-5)
        for key in ("exact", "tight", "standard", "rdp", "rho"):
            assert res[key] == math.inf, key
        res = epsilon_all([LaplaceEvent(1.0, 1.0), NonPrivateEvent()], 1e-5)
        assert res["pure"] == math.inf and res["exact"] is None

    def test_public_only_and_empty(self):
        for events in ([], [PublicEvent(), (PublicEvent(), 5)]):
            res = epsilon_all(events, 1e-5)
            assert res["exact"] == res["tight"] == res["standard"] == res["rdp"] == res["pure"] == 0.0

    def test_pairs_equal_repetition(self):
        a = epsilon_all([(GaussianEvent(1.0, 3.0), 4)], 1e-6)
        b = epsilon_all([GaussianEvent(1.0, 3.0)] * 4, 1e-6)
        assert a == pytest.approx(b, rel=1e-12)

    def test_bad_items(self):
        with pytest.raises(ConfigError):
            epsilon_all([(GaussianEvent(1.0, 3.0), 2, 3)], 1e-5)
        with pytest.raises(ConfigError):
            epsilon_all(["gaussian"], 1e-5)


# =============================================================================================
# Calibration
# =============================================================================================
CAL_EPS = [0.05, 0.5, 1.0, 5.0, 50.0]
CAL_DELTA = [1e-3, 1e-5, 1e-9]


class TestCalibration:
    @pytest.mark.parametrize("eps", CAL_EPS)
    @pytest.mark.parametrize("delta", CAL_DELTA)
    def test_round_trips(self, eps, delta):
        r_std = calibrate_zcdp_total(eps, delta, "standard")
        r_tight = calibrate_zcdp_total(eps, delta, "tight")
        r_exact = calibrate_zcdp_total(eps, delta, "exact")
        assert zcdp_to_eps_standard(r_std, delta) == pytest.approx(eps, rel=REL)
        assert zcdp_to_eps_tight(r_tight, delta) == pytest.approx(eps, rel=REL)
        assert gaussian_exact_eps(math.sqrt(2 * r_exact), delta) == pytest.approx(eps, rel=REL)
        assert calibrate_gdp_mu(eps, delta) == pytest.approx(math.sqrt(2 * r_exact), rel=1e-14)
        # tight and exact allow less noise than standard at the same (eps, delta)
        assert r_std < r_tight < r_exact

    @pytest.mark.parametrize("conversion", ["standard", "tight", "exact"])
    @pytest.mark.parametrize(
        ("schedule", "tau"), [("constant", None), ("geometric", 0.99), ("geometric", 0.9), ([3.0, 1.0, 2.0, 0.5] * 50, None)]
    )
    def test_noise_spends_budget_exactly(self, conversion, schedule, tau):
        eps, delta, T = 2.0, 1e-5, 200
        m = calibrate_gaussian_noise(eps, delta, T, schedule, tau=tau, conversion=conversion)
        assert m.shape == (T,)
        events = [GaussianEvent(1.0, float(s)) for s in m]
        res = epsilon_all(events, delta)
        assert res[conversion] == pytest.approx(eps, rel=REL)
        assert res["rho"] == pytest.approx(calibrate_zcdp_total(eps, delta, conversion), rel=1e-12)

    def test_schedules_have_the_right_shape(self):
        geo = calibrate_zcdp_schedule(1.0, 1e-5, 200, "geometric", tau=0.99)
        assert np.allclose(geo[1:] / geo[:-1], 1 / 0.99, rtol=1e-12)
        assert geo == pytest.approx(geometric_zcdp_schedule(calibrate_phi1(1.0, 1e-5, 200, 0.99), 0.99, 200), rel=1e-12)
        w = np.array([1.0, 2.0, 4.0])
        sched = calibrate_zcdp_schedule(1.0, 1e-5, schedule=w)
        assert sched / sched[0] == pytest.approx(w, rel=1e-14)
        m = calibrate_gaussian_noise(1.0, 1e-5, schedule=w)
        assert m == pytest.approx(noise_multipliers(sched), rel=1e-15)
        assert noise_multipliers([0.5, 2.0]) == pytest.approx([1.0, 0.5])

    def test_calibration_bad_arguments(self):
        with pytest.raises(ConfigError, match="needs tau"):
            calibrate_gaussian_noise(1.0, 1e-5, 10, "geometric")
        with pytest.raises(ConfigError, match="not known"):
            calibrate_gaussian_noise(1.0, 1e-5, 10, "linear")
        with pytest.raises(ConfigError, match="one weight per round"):
            calibrate_gaussian_noise(1.0, 1e-5, 5, [1.0, 2.0])
        with pytest.raises(ConfigError, match="> 0"):
            calibrate_gaussian_noise(1.0, 1e-5, schedule=[1.0, 0.0])
        with pytest.raises(ConfigError, match="rounds"):
            calibrate_gaussian_noise(1.0, 1e-5, 0)
        with pytest.raises(ConfigError, match="epsilon"):
            calibrate_zcdp_total(0.0, 1e-5)
        with pytest.raises(ConfigError, match="conversion"):
            calibrate_zcdp_total(1.0, 1e-5, "rdp")
        with pytest.raises(ConfigError, match="tau"):
            geometric_zcdp_schedule(1.0, 0.0, 10)
        with pytest.raises(ConfigError, match="over- or underflows"):
            geometric_zcdp_schedule(1.0, 0.5, 5000)
        with pytest.raises(ConfigError, match="T"):
            geometric_zcdp_schedule(1.0, 0.99, 0)

    def test_phi1_constant_equals_total_over_T(self):
        assert calibrate_phi1(1.0, 1e-5, 200) == pytest.approx(calibrate_zcdp_total(1.0, 1e-5) / 200, rel=1e-14)


class TestClassicalBaseline:
    @pytest.mark.parametrize("tau", [1.0, 0.99, 0.9])
    def test_basic_composition_schedule(self, tau):
        eps_total, delta_total, T = 3.0, 1e-5, 200
        eps_n, delta_n = basic_composition_schedule(eps_total, delta_total, T, tau)
        s = math.sqrt(tau)
        eps1 = eps_total / T if tau == 1.0 else eps_total * (s ** (T - 1) - s**T) / (1 - s**T)
        assert eps_n[0] == pytest.approx(eps1, rel=1e-12)
        assert eps_n == pytest.approx(eps1 * s ** -np.arange(T), rel=1e-12)
        assert eps_n.sum() == pytest.approx(eps_total, rel=1e-13)
        assert np.all(delta_n == delta_total / T)

    def test_classical_sigma_formula(self):
        assert classical_gaussian_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5, rel=1e-15)
        arr = classical_gaussian_sigma(np.array([0.1, 0.2]), 1e-6, sensitivity=2.0)
        assert arr.shape == (2,) and arr[0] == pytest.approx(2 * arr[1])

    def test_classical_requires_eps_below_one(self):
        with pytest.raises(ConfigError, match="analytic_gaussian_sigma"):
            classical_gaussian_sigma(1.0, 1e-5)
        with pytest.raises(ConfigError, match="analytic"):
            basic_composition_gaussian_schedule(50.0, 1e-5, 20)  # eps_n = 2.5
        m = basic_composition_gaussian_schedule(50.0, 1e-5, 20, mechanism="analytic").multipliers
        assert np.all(np.isfinite(m)) and np.all(m > 0)

    @pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 0.99])
    @pytest.mark.parametrize("delta", [1e-3, 1e-7])
    def test_analytic_le_classical_and_exact(self, eps, delta):
        a = analytic_gaussian_sigma(eps, delta)
        assert a < classical_gaussian_sigma(eps, delta)
        assert gaussian_delta(1.0 / a, eps) == pytest.approx(delta, rel=REL)
        assert analytic_gaussian_sigma(eps, delta, sensitivity=3.0) == pytest.approx(3 * a, rel=1e-14)

    def test_analytic_large_eps(self):
        sig = analytic_gaussian_sigma(np.array([1.0, 5.0, 20.0]), 1e-5)
        assert sig.shape == (3,) and np.all(np.diff(sig) < 0)

    def test_zcdp_much_less_noisy_than_baseline(self):
        for tau in (1.0, 0.99):
            base = basic_composition_gaussian_schedule(1.0, 1e-5, 200, tau).multipliers
            z = calibrate_gaussian_noise(1.0, 1e-5, 200, "geometric", tau=tau)
            assert np.all(z < base / 10)


# =============================================================================================
# Optional cross-check against Google's dp-accounting
# =============================================================================================
@pytest.fixture(scope="module")
def dpa():
    return pytest.importorskip("dp_accounting", reason="the cross-check needs dp-accounting "
                               "(the 'test' extra)")


class TestDpAccountingCrossCheck:
    @pytest.mark.parametrize("rho", [1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0])
    @pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
    def test_tight_le_rdp_accountant(self, dpa, rho, delta):
        from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

        theirs_z = rdp_mod.RdpAccountant().compose(dpa.ZCDpEvent(rho)).get_epsilon(delta)
        theirs_g = rdp_mod.RdpAccountant().compose(dpa.GaussianDpEvent(math.sqrt(0.5 / rho))).get_epsilon(delta)
        ours = zcdp_to_eps_tight(rho, delta)
        assert ours <= theirs_z and ours <= theirs_g
        # our RDP accountant is theirs, on the same grid
        mine = RDPAccountant().compose(ZCDPEvent(rho)).get_epsilon(delta)
        assert mine == pytest.approx(theirs_z, rel=1e-12)
        if rho >= 1e-2:  # their grid is dense enough near the optimal order here
            assert ours >= 0.99 * theirs_z

    def test_gaussian_100x_rdp_accountant(self, dpa):
        from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

        theirs = rdp_mod.RdpAccountant().compose(dpa.GaussianDpEvent(1.0), 100).get_epsilon(1e-5)
        assert theirs == pytest.approx(96.11630842505602, rel=1e-12)
        assert RDPAccountant().compose(GaussianEvent(1.0, 1.0), 100).get_epsilon(1e-5) == pytest.approx(theirs, rel=1e-12)

    @pytest.mark.parametrize("scale", [0.5, 2.0, 10.0])
    def test_laplace_rdp_matches(self, dpa, scale):
        from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod

        theirs = rdp_mod.RdpAccountant()
        theirs.compose(dpa.LaplaceDpEvent(scale), 30)
        mine = RDPAccountant().compose(LaplaceEvent(1.0, scale), 30)
        assert mine.get_epsilon(1e-6) == pytest.approx(theirs.get_epsilon(1e-6), rel=1e-9)

    @pytest.mark.parametrize(("sigma", "count"), [(1.0, 100), (10.0, 100), (2.0, 10), (5.0, 50)])
    def test_exact_vs_pld(self, dpa, sigma, count):
        from dp_accounting.pld import pld_privacy_accountant as pld_mod

        pld = pld_mod.PLDAccountant(value_discretization_interval=1e-3)
        pld.compose(dpa.GaussianDpEvent(sigma), count)
        theirs = pld.get_epsilon(1e-5)
        ours = GaussianExactAccountant().compose(GaussianEvent(1.0, sigma), count).get_epsilon(1e-5)
        assert abs(ours - theirs) < 1e-4
        assert ours <= theirs + 1e-9  # PLD is pessimistic: never below the exact value

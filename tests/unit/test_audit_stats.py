"""The audit's statistics against closed forms and independent computations."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from mpi_privopt.audit import stats
from mpi_privopt.privacy.conversions import gaussian_delta


def test_clopper_pearson_matches_the_beta_quantiles_and_its_edge_cases():
    lo, hi = stats.clopper_pearson(7, 50, 0.05)
    assert lo == pytest.approx(sps.beta.ppf(0.025, 7, 44))
    assert hi == pytest.approx(sps.beta.ppf(0.975, 8, 43))
    # no error in n trials: the one-sided bound is 1 - (alpha/2)^(1/n)
    lo, hi = stats.clopper_pearson(0, 100, 0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 100))
    lo, hi = stats.clopper_pearson(100, 100, 0.05)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 100))


def test_clopper_pearson_covers_the_rate_at_its_level():
    rng = np.random.default_rng(1)
    p, n = 0.2, 200
    k = rng.binomial(n, p, size=4000)
    lo, hi = stats.clopper_pearson(k, n, 0.1)
    coverage = np.mean((lo <= p) & (p <= hi))
    assert coverage >= 0.9  # exact intervals are conservative


def test_the_mu_bound_inverts_the_gaussian_trade_off_curve():
    # the rates of the likelihood-ratio test of N(0,1) vs N(mu,1) at any threshold give mu
    for mu in (0.3, 1.0, 2.5):
        for t in (-0.5, 0.2, mu / 2, 1.7):
            fpr, fnr = sps.norm.sf(t), sps.norm.cdf(t - mu)
            assert stats.gdp_mu_lower_bound(fpr, fnr) == pytest.approx(mu, rel=1e-9)
    assert stats.gdp_mu_lower_bound(0.5, 0.5) == 0.0
    assert stats.gdp_mu_lower_bound(0.7, 0.7) == 0.0  # worse than chance: nothing
    assert stats.gdp_mu_lower_bound(0.0, 0.0) == math.inf


def test_the_eps_bound_is_the_hypothesis_testing_region():
    fpr, fnr, delta = 0.05, 0.1, 1e-5
    expected = max(math.log((1 - delta - fpr) / fnr), math.log((1 - delta - fnr) / fpr))
    assert stats.eps_lower_bound(fpr, fnr, delta) == pytest.approx(expected)
    assert stats.eps_lower_bound(0.5, 0.5, 0.0) == 0.0


def test_audit_bound_uses_the_upper_confidence_rates():
    out = stats.audit_bound(10, 500, 12, 500, 0.95, 1e-5)
    fpr_hi = stats.clopper_pearson(10, 500, 0.05)[1]
    fnr_hi = stats.clopper_pearson(12, 500, 0.05)[1]
    assert out["fpr_upper"] == pytest.approx(float(fpr_hi))
    assert out["mu_lower"] == pytest.approx(float(stats.gdp_mu_lower_bound(fpr_hi, fnr_hi)))
    point = float(stats.gdp_mu_lower_bound(10 / 500, 12 / 500))
    assert out["mu_lower"] < point


def _lr_scores(mu, n, seed):
    rng = np.random.default_rng(seed)
    positive = np.arange(n) < n // 2
    rng.shuffle(positive)
    # the Gaussian LR statistic normalised: N(+-mu^2/2, mu^2)
    scores = np.where(positive, mu * mu / 2, -mu * mu / 2) + mu * rng.standard_normal(n)
    return scores, positive


@pytest.mark.parametrize("mu", [0.5, 1.76, 3.0])
def test_the_midpoint_audit_of_a_mu_gdp_statistic_is_sound_and_tight(mu):
    below = []
    for seed in range(40):
        scores, positive = _lr_scores(mu, 4000, seed)
        below.append(stats.midpoint_audit(scores, positive, 0.95, 1e-5)["mu_lower"])
    below = np.array(below)
    # sound: above the truth at most about 5% of the time (here: never by much)
    assert np.mean(below > mu) <= 0.1
    # tight enough to matter: typically more than 70% of mu at 4000 trials
    assert np.median(below) > 0.7 * mu


def test_the_split_audit_chooses_on_one_half_and_counts_on_the_other():
    scores, positive = _lr_scores(1.5, 4000, 7)
    out = stats.split_audit(scores, positive, 0.95, 1e-5)
    assert out["negatives"] + out["positives"] == 2000
    assert 0 < out["mu_lower"] <= 1.5


def test_trials_needed_is_what_the_midpoint_audit_needs():
    for mu in (0.18, 1.76):
        n = stats.trials_needed(mu, 0.95, 0.5)
        assert n % 4 == 0
        p = sps.norm.cdf(-mu / 2)

        def expected(trials):
            k = math.floor(trials // 2 * p)
            hi = float(stats.clopper_pearson(k, trials // 2, 0.05)[1])
            return float(stats.gdp_mu_lower_bound(hi, hi))
        assert expected(n) >= 0.5 * mu
        assert expected(int(n * 0.9)) < 0.5 * mu  # within ~10% of the smallest
    assert stats.trials_needed(math.inf, 0.95) is None
    assert stats.trials_needed(0.0, 0.95) is None


def test_noise_tests_flag_wrong_variance_and_reuse_and_pass_honest_noise():
    rng = np.random.default_rng(3)
    z = rng.standard_normal((50, 100))
    honest_var = stats.variance_test(float((z ** 2).sum()), z.size)
    honest_lag = stats.lag_correlation_test(float((z[1:] * z[:-1]).sum()), z[1:].size)
    assert honest_var["p_value"] > 1e-3 and honest_lag["p_value"] > 1e-3
    small = 0.1 * z
    assert stats.variance_test(float((small ** 2).sum()), z.size)["p_value"] < 1e-12
    reused = np.repeat(z[:1], 50, axis=0)
    lag = stats.lag_correlation_test(float((reused[1:] * reused[:-1]).sum()), z[1:].size)
    assert lag["p_value"] < 1e-12 and lag["correlation"] > 0.9


def test_laplace_lr_is_the_log_density_ratio():
    r, shift, b = np.array([[0.3, -1.2]]), np.array([0.5, 0.2]), 0.7
    expected = sum(math.log(math.exp(-abs(ri - si / 2) / b) / math.exp(-abs(ri + si / 2) / b))
                   for ri, si in zip(r[0], shift))
    assert stats.laplace_lr(r, shift, b)[0] == pytest.approx(expected)


def test_advantage_bounds():
    mu = 1.76
    assert stats.mi_advantage_bound(mu) == pytest.approx(2 * sps.norm.cdf(mu / 2) - 1)
    assert stats.mi_advantage_bound(mu) == gaussian_delta(mu, 0.0)
    # at the budgets of the papers the (epsilon, delta) bound says nothing
    assert stats.eps_advantage_bound(8.555, 1e-5) > 0.999
    assert stats.eps_advantage_bound(0.0, 0.0) == 0.0
    # pure DP (delta = 0): (e^eps - 1)/(e^eps + 1) = tanh(eps / 2), finite at any epsilon
    for eps in (0.5, 2.51, 30.0):
        assert stats.eps_advantage_bound(eps, 0.0) == pytest.approx(math.tanh(eps / 2))
    assert stats.eps_advantage_bound(2813.0, 0.0) == 1.0
    assert stats.eps_advantage_bound(math.inf, 0.0) == 1.0


def _membership_scores(kind, shift, n, seed):
    """Scores of the add/remove game on one coordinate of unit scale: "in" is shifted by
    ``shift``; the Gaussian score is the release itself, the Laplace one its likelihood
    ratio (rounded, as the audit does)."""
    rng = np.random.default_rng(seed)
    member = np.arange(n) < n // 2
    rng.shuffle(member)
    if kind == "gaussian":
        return rng.standard_normal(n) + shift * member, member
    y = rng.laplace(0.0, 1.0, n) + shift * member
    lr = stats.laplace_lr((y - shift / 2)[:, None], np.array([shift]), 1.0)
    return stats.round_pure_scores(lr), member


@pytest.mark.parametrize("kind, shift, best", [
    # the best advantage of one release: the total variation of the two worlds
    ("gaussian", 1.0, 2 * sps.norm.cdf(0.5) - 1),
    ("laplace", 1.0, 1 - math.exp(-0.5)),
])
def test_the_membership_attack_is_sound_and_reaches_the_best_advantage(kind, shift, best):
    results = [stats.membership_attack(*_membership_scores(kind, shift, 4000, seed), 0.95)
               for seed in range(40)]
    lower = np.array([r["advantage_lower"] for r in results])
    advantage = np.array([r["advantage"] for r in results])
    # sound: the lower bound exceeds the truth in at most 5% of runs (at confidence 0.95)
    assert np.mean(lower > best) <= 0.1
    assert np.mean(advantage) == pytest.approx(best, abs=0.02)
    # the guarantee of the release allows at least the truth (the GDP bound is exact)
    bound = (stats.mi_advantage_bound(shift) if kind == "gaussian"
             else stats.eps_advantage_bound(shift, 0.0))
    assert bound >= best - 1e-12
    assert results[0]["trials"] == 2000


def test_pure_trials_needed_is_the_fewest_at_which_an_errorless_test_reaches_the_target():
    for epsilon in (0.84, 3.0, 8.0):
        needed = stats.pure_trials_needed(epsilon, 0.95)
        assert needed % 4 == 0

        def best(trials):  # a test that never errs on its held-out trials / 4 per world
            n = trials // 4
            return stats.audit_bound(0, n, 0, n, 0.95, 0.0)["eps_lower"]
        assert best(needed) >= epsilon / 2
        assert best(int(needed * 0.98) // 4 * 4 - 4) < epsilon / 2  # within 2%
    # about ln(2 / 0.05) e^(eps/2) per world and side: grows with epsilon
    assert stats.pure_trials_needed(8.0, 0.95) > stats.pure_trials_needed(3.0, 0.95)
    # beyond any audit: the packaged ldp-aggregative run books epsilon 2813
    assert stats.pure_trials_needed(2813.0, 0.95) is None
    assert stats.pure_trials_needed(float("inf"), 0.95) is None

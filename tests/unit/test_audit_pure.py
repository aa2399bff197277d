"""The pure-epsilon audit (ldp-aggregative's) on Laplace mechanisms of known epsilon."""
import numpy as np
import pytest

from mpi_privopt.audit import stats


def _laplace_scores(eps, coordinates, n, seed):
    """The Laplace LR statistic of an eps-DP release whose l1 shift is spread evenly over
    ``coordinates`` coordinates of scale 1 (worlds +-shift/2, half the trials each)."""
    rng = np.random.default_rng(seed)
    positive = np.arange(n) < n // 2
    rng.shuffle(positive)
    shift = np.full(coordinates, eps / coordinates)
    noise = rng.laplace(0.0, 1.0, (n, coordinates))
    residual = np.where(positive[:, None], shift / 2, -shift / 2) + noise
    return stats.laplace_lr(residual, shift, 1.0), positive


@pytest.mark.parametrize("eps", [1.0, 2.5, 4.0])
def test_the_pure_audit_is_sound_and_reaches_half_of_a_single_release(eps):
    bounds = np.array([stats.pure_split_audit(*_laplace_scores(eps, 1, 8000, seed),
                                              0.95)["eps_lower"] for seed in range(30)])
    assert np.mean(bounds > eps) <= 0.1  # sound (5% expected at confidence 0.95)
    assert np.median(bounds) >= 0.5 * eps


def test_the_tied_top_scores_can_be_taken_alone():
    # the LR atom at +eps (every coordinate's residual beyond its half-shift) decides pure
    # DP; a threshold just below it must be a candidate
    scores, positive = _laplace_scores(3.0, 1, 8000, 0)
    out = stats.pure_split_audit(scores, positive, 0.95)
    assert out["threshold"] < 3.0 and out["eps_lower"] > 1.5


def test_spreading_the_shift_over_coordinates_costs_the_audit():
    # the atom's probability halves with each coordinate: same epsilon, weaker bound
    def median(coordinates):
        return np.median([stats.pure_split_audit(*_laplace_scores(4.0, coordinates, 8000, s),
                                                 0.95)["eps_lower"] for s in range(10)])
    assert median(8) < median(4) < median(1) <= 4.0


def test_floating_point_artifacts_of_the_ratio_do_not_count():
    # unrounded, the ratio's atom at +eps splits by the worlds' last bits and the split
    # audit "finds" more than eps; rounded, it does not
    scores, positive = _laplace_scores(1.0, 1, 8000, 0)
    raw = stats.split_audit(scores, positive, 0.95, 0.0, pure=True)["eps_lower"]
    assert raw > 1.0
    assert stats.pure_split_audit(scores, positive, 0.95)["eps_lower"] <= 1.0

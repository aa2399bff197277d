"""The one-run audit's statistics (Steinke, Nasr & Jagielski 2023) on a mechanism whose
privacy is known exactly: randomized response on each canary's sign."""
import math

import numpy as np
import pytest

from mpi_privopt.audit.one_run import (best_possible_bound, epsilon_lower_bound, p_value,
                                       sign_guesses)


def randomized_response(rng, m, epsilon):
    signs = rng.choice([-1, 1], m)
    flipped = rng.random(m) < 1.0 / (1.0 + math.exp(epsilon))
    return signs, np.where(flipped, -signs, signs) * rng.uniform(0.5, 1.5, m)


def test_the_bound_is_valid_and_informative_on_randomized_response():
    rng = np.random.default_rng(7)
    epsilon, m, r, delta = 2.0, 1000, 400, 1e-5
    bounds = []
    for _ in range(200):
        signs, scores = randomized_response(rng, m, epsilon)
        guesses = sign_guesses(scores, r)
        bounds.append(epsilon_lower_bound(m, r, int((guesses == signs).sum()), delta))
    bounds = np.array(bounds)
    # at 95% confidence the bound exceeds the truth in at most about 5% of runs
    assert np.mean(bounds > epsilon) <= 0.09
    # and it is not vacuous: typically above half the truth
    assert np.median(bounds) > 0.5 * epsilon


def test_p_value_falls_as_epsilon_grows_and_delta_only_adds():
    values = [p_value(1000, 100, 80, e, 0.0) for e in (0.0, 0.5, 1.0, 2.0)]
    assert values[0] < values[1] < values[2] < values[3] <= 1.0
    assert p_value(1000, 100, 80, 1.0, 1e-5) > p_value(1000, 100, 80, 1.0, 0.0)


def test_chance_refutes_nothing_and_perfect_guesses_are_capped_by_their_number():
    assert epsilon_lower_bound(1000, 100, 50, 1e-5) == 0.0
    # the papers' 8-dimensional models allow at most 8 orthogonal canaries
    assert best_possible_bound(8, 8, 1e-5) < 0.8
    assert best_possible_bound(100, 100, 1e-5) < best_possible_bound(1000, 1000, 1e-5) < 6.0


def test_guesses_take_the_largest_scores_and_abstain_on_the_rest():
    guesses = sign_guesses(np.array([0.1, -3.0, 2.0, -0.2]), 2)
    assert guesses.tolist() == [0, -1, 1, 0]
    with pytest.raises(ValueError):
        sign_guesses(np.zeros(3), 4)
    with pytest.raises(ValueError):
        p_value(10, 5, 6, 1.0, 0.0)

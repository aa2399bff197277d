"""reproduce chen2025's matched-budget panel: the baselines' sigma calibrated so that their
nominal epsilon at T equals Algorithm 1's (no MPI, no runs; the runs' own ledgers are
checked in tests/e2e/test_chen2025_reproduce.py)."""
import math

import numpy as np
import pytest

from mpi_privopt.config import config_from_dict
from mpi_privopt.methods.chen2025.aggregative_gt import tracking_report
from mpi_privopt.methods.chen2025.reproduce import matched, settings

T = 1000


def _params(section, dataset="digits"):
    cfg = settings.config(dataset, section, iterations=T, eval_every=20, seed=0, name="t")
    return config_from_dict(cfg).algorithm.params


def test_tracking_baselines_match_every_agent_as_their_own_report_books_it():
    target = matched.nominal_epsilons(settings.algorithm_section("alg1", "digits"), "digits", T)
    for method in ("gt36", "pat6"):
        section = matched.matched_section(method, "digits", T)
        # the baseline's own report (what its run's summary says), not the panel's formula
        booked = tracking_report(_params(section), 5, T)["epsilon_T"]
        assert booked == pytest.approx(target, rel=1e-12)
        # at panel (a)'s sigma the same report books 115x as much (the doc's 298446)
        before = tracking_report(_params(settings.algorithm_section(method, "digits")), 5, T)
        assert before["epsilon_T"][0] == pytest.approx(298446.07, rel=1e-7)
        assert section["sigma_y"][0] == pytest.approx(0.01 * 298446.07 / 2596.2516, rel=1e-6)


def test_framework_baselines_match_agent_1_and_stay_within_its_spread_elsewhere():
    eps = matched.matched_epsilons("digits", T)
    alg1 = eps["alg1"]
    for method in ("pdop26", "tvs51"):
        assert eps[method][0] == pytest.approx(alg1[0], rel=1e-12)
        # one sigma for all agents: the others' epsilon is agent 1's, at most 1.5 % above
        # Algorithm 1's (its epsilon falls slightly with the agent)
        for mine, theirs in zip(eps[method][1:], alg1[1:]):
            assert theirs < mine < 1.015 * theirs
    # PDOP's noise barely changes (2627.7 -> 2596.3), [51]'s falls 183-fold (14.2 -> 2596.3)
    assert matched.factors("pdop26", "digits", T)[0] == pytest.approx(2627.7 / 2596.25, rel=1e-4)
    assert matched.factors("tvs51", "digits", T)[0] == pytest.approx(14.2 / 2596.25, rel=1e-2)


def test_only_the_sigma_keys_change():
    for method in matched.MATCHED:
        before = settings.algorithm_section(method, "digits")
        after = matched.matched_section(method, "digits", T)
        assert {k: v for k, v in after.items() if k not in matched.SIGMA_KEYS} == \
            {k: v for k, v in before.items() if k not in matched.SIGMA_KEYS}
        k = matched.factors(method, "digits", T)
        for key in matched.SIGMA_KEYS:
            if key in before:
                assert np.allclose(np.ravel(after[key]), before[key] * np.array(k), rtol=1e-15)
    with pytest.raises(KeyError):
        matched.matched_section("alg1", "digits", T)


def _run(objective, accuracy=(0.1, 0.5, 0.9)):
    return {"iteration": np.array([0, 10, 20]), "objective": np.array(objective, dtype=float),
            "test_accuracy": np.array(accuracy, dtype=float)}


def test_divergence_is_a_stop_a_rise_above_the_start_or_a_non_finite_end():
    assert not matched.diverged(_run([2.0, 1.0, 0.5]), stopped=False)
    assert matched.diverged(_run([2.0, 1.0, 0.5]), stopped=True)
    assert matched.diverged(_run([2.0, 1.0, 31.4]), stopped=False)
    assert matched.diverged(_run([2.0, 1.0, math.nan]), stopped=False)


def test_outcome_counts_the_diverged_and_averages_the_others():
    result = matched.outcome([(0, _run([2.0, 1.0, 0.25]), False),
                              (1, _run([2.0, 9.0, 412.5], (0.1, 0.05, 0.05)), False),
                              (2, _run([2.0, 1.0, 0.35], (0.1, 0.5, 0.7)), False),
                              (3, _run([2.0, 5.0]), True)])
    assert (result["runs"], result["diverged"], result["diverged_seeds"]) == (4, 2, [1, 3])
    assert result["objective_mean"] == pytest.approx(0.30)
    assert result["objective_std"] == pytest.approx(0.05)   # population std of 0.25, 0.35
    assert result["test_accuracy_mean"] == pytest.approx(0.8)
    assert result["per_seed"]["1"] == {"objective": 412.5, "test_accuracy": 0.05,
                                       "iteration": 20, "diverged": True,
                                       "objective_start": 2.0, "peak_objective": 412.5}
    assert result["rose_above_start_seeds"] == [1, 3]
    silent = matched.outcome([(0, {}, True), (1, _run([2.0, 1.0, 0.5]), False)])
    assert silent["diverged_seeds"] == [0] and silent["objective_mean"] == 0.5
    back = matched.outcome([(0, _run([2.0, 2.9e4, 1.17]), False)])
    assert back["diverged"] == 0 and back["rose_above_start_seeds"] == [0]
    every = matched.outcome([(0, _run([2.0, 3.0, 4.0]), False)])
    assert every["objective_mean"] is None and every["diverged"] == 1

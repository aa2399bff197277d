"""The divergence guard: a non-finite or exploding iterate stops the run with its cause."""
import numpy as np
import pytest

from mpi_privopt.services.divergence import DIVERGENCE_FACTOR, Diverged, DivergenceGuard, NoiseWatch
from mpi_privopt.privacy.events import GaussianEvent
from mpi_privopt.privacy.release import Release


def test_an_iterate_within_the_limit_passes_and_one_beyond_it_stops():
    guard = DivergenceGuard(np.full(4, 2.0))          # starting size 4
    guard.check(np.full(4, 2.0) * DIVERGENCE_FACTOR * 0.99, 7)
    with pytest.raises(Diverged, match="reached .* at iteration 8"):
        guard.check(np.full(4, 2.0) * DIVERGENCE_FACTOR * 1.01, 8)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_iterate_stops(bad):
    guard = DivergenceGuard(np.zeros(3))              # a zero start counts as size 1
    with pytest.raises(Diverged, match="not finite at iteration 2"):
        guard.check(np.array([0.0, bad, 0.0]), 2)


def test_the_cause_is_the_noise_when_its_scale_is_beyond_the_limit():
    watch = NoiseWatch()
    guard = DivergenceGuard(np.ones(1), watch)
    watch.on_release(Release(np.zeros(1), GaussianEvent(1.0, 2e108)), (1,), "w", 1)
    with pytest.raises(Diverged, match="privacy noise: its scale at this iteration is 2e\\+108") as err:
        guard.check(np.array([3e108]), 1)
    assert "privacy.epsilon" in err.value.fix and err.value.status == 3
    watch.on_release(Release(np.zeros(1), GaussianEvent(1.0, 0.1)), (1,), "w", 2)
    with pytest.raises(Diverged, match="step size too large"):
        guard.check(np.array([3e108]), 2)


def test_record_mode_remembers_the_first_divergence_and_goes_on():
    guard = DivergenceGuard(np.ones(2), mode="record")
    guard.check(np.ones(2), 1)
    guard.check(np.full(2, np.inf), 5)
    guard.check(np.full(2, 1e300), 6)
    assert guard.first == 5

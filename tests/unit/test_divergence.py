"""The divergence guard: a non-finite or exploding iterate stops the run with its cause."""
import inspect

import numpy as np
import pytest

from mpi_privopt.methods.contract import Algorithm

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
    with pytest.raises(Diverged, match="privacy noise: one release's noise has norm about "
                                       "2e\\+108") as err:
        guard.check(np.array([3e108]), 1)
    assert "privacy.epsilon" in err.value.fix and err.value.status == 3
    watch.on_release(Release(np.zeros(1), GaussianEvent(1.0, 0.1)), (1,), "w", 2)
    with pytest.raises(Diverged, match="step size too large"):
        guard.check(np.array([3e108]), 2)


def test_the_noise_is_named_when_it_is_as_large_as_the_iterate_though_below_the_limit():
    """The default experiment over 3000 iterations: by iteration 3 its releases carry noise
    of scale 5.1e5 per coordinate (norm 1.44e6 over 8), below the limit of 1e6 x the
    starting size on each coordinate but as large as the iterate (1.39e6). It used to be
    blamed on the step size."""
    watch = NoiseWatch()
    guard = DivergenceGuard(np.zeros(8), watch)
    watch.on_release(Release(np.zeros(8), GaussianEvent(1.0, 5.1e5)), (1,), "w", 3)
    with pytest.raises(Diverged, match="privacy noise: one release's noise has norm about "
                                       "1.44e\\+06 \\(scale 5.1e\\+05 on each of 8") as err:
        guard.check(np.full(8, 1.39e6 / np.sqrt(8)), 3, Stepping(("algorithm.eta", 0.3, 4.0)))
    assert "step" not in err.value.what and "privacy.epsilon" in err.value.fix


class Stepping:
    """A method as the guard sees it: its agent and its gradient step."""

    def __init__(self, step):
        self.step, self.agent = step, type("Agent", (), {"id": 2})()

    def gradient_step(self, n):
        return self.step


def test_the_step_is_named_when_it_times_the_curvature_exceeds_two():
    watch = NoiseWatch()
    guard = DivergenceGuard(np.ones(4), watch)
    watch.on_release(Release(np.zeros(4), GaussianEvent(1.0, 10.0)), (1,), "w", 3)
    with pytest.raises(Diverged) as err:
        guard.check(np.full(4, 1e7), 3, Stepping(("algorithm.step", 50.0, 4.1)))
    what = err.value.what
    assert "a step size too large for the problem: the gradient step 50 (algorithm.step) " \
           "times the curvature of agent 2's objective, L = 4.1" in what
    assert "is 205, above 2" in what and "the privacy noise is 1e-06 of the iterate" in what
    assert err.value.fix.startswith("lower algorithm.step so that the step stays below "
                                    "2 / L = 0.488")


def test_a_stable_step_without_noise_points_at_the_coupling():
    guard = DivergenceGuard(np.ones(4), NoiseWatch())  # no release seen: no noise
    with pytest.raises(Diverged) as err:
        guard.check(np.full(4, 1e7), 3, Stepping(("algorithm.eta", 0.1, 4.0)))
    assert "although the gradient step 0.1 (algorithm.eta)" in err.value.what
    assert "is 0.4, at most 2, and no privacy noise" in err.value.what
    assert "algorithm.rho" in err.value.fix


def test_without_a_known_curvature_the_step_is_still_the_likely_cause():
    guard = DivergenceGuard(np.ones(4))
    with pytest.raises(Diverged, match="no privacy noise\\): a step size too large"):
        guard.check(np.full(4, 1e7), 3, Stepping(("algorithm.step", 1.0, None)))


def test_without_a_known_curvature_the_fix_names_the_step_key_and_its_value():
    guard = DivergenceGuard(np.ones(4))
    with pytest.raises(Diverged, match="the gradient step was 0.25, set by algorithm.eta") as err:
        guard.check(np.full(4, 1e7), 3, Stepping(("algorithm.eta", 0.25, None)))
    assert err.value.fix.startswith("lower algorithm.eta")


@pytest.mark.parametrize("name, step", [("dgd", "algorithm.step"), ("zcdp-grad-nfl",
                                        "algorithm.step"), ("admm", "algorithm.eta"),
                                        ("zcdp-nfl", "algorithm.eta"),
                                        ("eps-delta-nfl", "algorithm.eta")])
def test_the_gradient_methods_say_their_step_and_curvature(name, step):
    from mpi_privopt.methods import ALGORITHMS
    hook = ALGORITHMS[name].gradient_step
    assert hook is not Algorithm.gradient_step, name  # declared, not the base's None
    assert step in inspect.getsource(hook), name


@pytest.mark.parametrize("name, owner", [("rss-nb", "descent"), ("rss-lb", "descent"),
                                         ("fs", "dgd"), ("token-admm", None)])
def test_the_other_step_methods_declare_their_step(name, owner):
    # RSS and function sharing take DGD's projected step through a component; the token's
    # x-update (7) divides its gradient step by 1 + eta beta
    from mpi_privopt.methods import ALGORITHMS
    hook = ALGORITHMS[name].gradient_step
    assert hook is not Algorithm.gradient_step, name
    source = inspect.getsource(hook)
    assert (f"self.{owner}.gradient_step(n)" in source if owner else
            "algorithm.eta" in source and "1.0 + eta" in source), name


def test_rss_reports_its_alpha_at_the_iteration():
    from types import SimpleNamespace
    from mpi_privopt.methods.gade2017.rss import StructuredDescent
    descent = StructuredDescent.__new__(StructuredDescent)
    descent.params = SimpleNamespace(schedule="sqrt", step=0.5)
    descent.agent = SimpleNamespace(problem=SimpleNamespace(smoothness=lambda: 4.0))
    assert descent.gradient_step(4) == ("algorithm.step", 0.25, 4.0)


def test_record_mode_remembers_the_first_divergence_and_goes_on():
    guard = DivergenceGuard(np.ones(2), mode="record")
    guard.check(np.ones(2), 1)
    guard.check(np.full(2, np.inf), 5)
    guard.check(np.full(2, 1e300), 6)
    assert guard.first == 5
